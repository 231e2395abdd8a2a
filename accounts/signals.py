"""Sockets follow the credentials they signed in with, however those end."""

from __future__ import annotations

from django.db import transaction
from rest_framework.authtoken.models import Token


def token_deleted(sender: type[Token], instance: Token, **kwargs: object) -> None:
    """A deleted API token closes the sockets it signed in, once the delete commits: through
    `DELETE /api/auth/token` or the admin, or with its user. On the delete itself, not in the
    view that revokes, so that no way of deleting a token leaves its sockets playing."""
    from server.ws_auth import end_token_sockets

    key = instance.key
    transaction.on_commit(lambda: end_token_sockets(key), robust=True)


def user_saved(sender: type, instance, **kwargs: object) -> None:  # noqa: ANN001
    """A user saved inactive (the admin's "active" box) closes every socket of theirs once the
    save commits: REST and new handshakes refuse them already, open sockets did not."""
    if not instance.is_active:
        _end_user_sockets_on_commit(instance.pk)


def user_deleted(sender: type, instance, **kwargs: object) -> None:  # noqa: ANN001
    """A deleted user's sockets close too, a browser session's included (a token's close
    with the token)."""
    _end_user_sockets_on_commit(instance.pk)


def _end_user_sockets_on_commit(user_id: int) -> None:
    from server.ws_auth import end_user_sockets

    transaction.on_commit(lambda: end_user_sockets(user_id), robust=True)
