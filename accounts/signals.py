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
