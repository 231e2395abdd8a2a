"""Writes for accounts: registration owns its transaction and its error codes."""

from __future__ import annotations

from django.contrib.auth import password_validation
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from rest_framework.authtoken.models import Token

from accounts.models import User
from server.errors import AppError
from server.ws_auth import end_user_sockets


def register_user(username: str, password: str) -> tuple[User, Token]:
    """Create a user and their API token, or raise AppError with a clear code."""
    if User.objects.named(username).exists():
        raise AppError("username_taken", f"The username '{username}' is taken.")
    user = User(username=User.normalize_username(username))
    try:
        password_validation.validate_password(password, user=user)
    except ValidationError as exc:
        raise AppError("weak_password", " ".join(exc.messages)) from exc
    # Hash before the transaction, not inside it as `create_user` would: hashing takes a few
    # hundred milliseconds on purpose, and on SQLite a transaction holds the database's one
    # write lock from its BEGIN (IMMEDIATE mode). Every move of every player and every other
    # sign-up waited for it, and a burst of sign-ups queued past the lock's 20 s timeout and
    # failed with "database is locked".
    user.set_password(password)
    try:
        with transaction.atomic():
            user.save()
            token = Token.objects.create(user=user)
    except IntegrityError as exc:  # lost a race with another registration of the same name
        raise AppError("username_taken", f"The username '{username}' is taken.") from exc
    return user, token


def change_password(user: User, current: str, new: str) -> None:
    """Set a new password and end every sign-in made with the old one: the API token is
    deleted (its sockets close, accounts.signals), the browser sessions stop counting (Django
    keys a session to the password's hash) and every socket of the user closes with 4401,
    whatever it signed in with. One changes a password because someone else may know it:
    nothing they opened with it may go on. The next `POST /api/auth/token` issues a new key."""
    if not user.check_password(current):
        raise AppError(
            "invalid",
            "That is not your current password: nothing was changed.",
            fields={"password": "Wrong password."},
        )
    try:
        password_validation.validate_password(new, user=user)
    except ValidationError as exc:
        raise AppError("weak_password", " ".join(exc.messages)) from exc
    checked = user.password  # the hash the current password was checked against
    user.set_password(new)  # hashed before the transaction, as at sign-up (register_user)
    with transaction.atomic():
        # Compare-and-set on the hash: two changes sent together were both answered 204 and
        # the later one won, the other's new password not working (a helper's audit).
        if not User.objects.filter(pk=user.pk, password=checked).update(password=user.password):
            raise AppError(
                "invalid",
                "Your password was changed meanwhile by another request: nothing was changed.",
                fields={"password": "Wrong password."},
            )
        Token.objects.filter(user=user).delete()
        user_id = user.pk
        transaction.on_commit(lambda: end_user_sockets(user_id), robust=True)


def token_for(user: User) -> Token:
    """The user's key, made if there is none: only while their password is still the one the
    sign-in checked. A sign-in with the old password that ran beside a change (hashing takes a
    quarter of a second) made a new key after the change had deleted the old one, and kept it
    (a helper's audit). The user's row is locked, so a change commits wholly before or after."""
    with transaction.atomic():
        current = (
            User.objects.select_for_update().filter(pk=user.pk).values_list("password", flat=True)
        )
        if list(current) != [user.password]:
            raise AppError("authentication_failed", "Wrong username or password.")
        token, _ = Token.objects.get_or_create(user=user)
    return token


def revoke_token(user: User) -> None:
    """Delete the user's API token; its sockets close (accounts.signals). The next sign-in
    (`POST /api/auth/token`) issues a new key. For a key that leaked."""
    Token.objects.filter(user=user).delete()
