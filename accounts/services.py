"""Writes for accounts: registration owns its transaction and its error codes."""

from __future__ import annotations

from django.contrib.auth import password_validation
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from rest_framework.authtoken.models import Token

from accounts.models import User
from server.errors import AppError


def register_user(username: str, password: str) -> tuple[User, Token]:
    """Create a user and their API token, or raise AppError with a clear code."""
    if User.objects.filter(username__iexact=username).exists():
        raise AppError("username_taken", f"The username '{username}' is taken.")
    candidate = User(username=username)
    try:
        password_validation.validate_password(password, user=candidate)
    except ValidationError as exc:
        raise AppError("weak_password", " ".join(exc.messages)) from exc
    try:
        with transaction.atomic():
            user = User.objects.create_user(username=username, password=password)
            token = Token.objects.create(user=user)
    except IntegrityError as exc:  # lost a race with another registration of the same name
        raise AppError("username_taken", f"The username '{username}' is taken.") from exc
    return user, token


def token_for(user: User) -> Token:
    token, _ = Token.objects.get_or_create(user=user)
    return token
