"""WebSocket handshake authentication and origin checks.

Non-browser clients send `Authorization: Token <key>` on the handshake; browsers cannot set
headers on a WebSocket, so they ride on the session cookie (Channels' AuthMiddleware).
A handshake whose token is wrong gets an AnonymousUser and the consumer closes with 4401.
"""

from __future__ import annotations

import hashlib
from urllib.parse import urlparse

from asgiref.sync import async_to_sync
from channels.auth import AuthMiddlewareStack
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from channels.middleware import BaseMiddleware
from channels.security.websocket import WebsocketDenier
from django.conf import settings
from django.contrib.auth.models import AnonymousUser
from django.http.request import validate_host


def _header(scope: dict, name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key == name:
            return value.decode("latin1")
    return None


@database_sync_to_async
def _user_for_token(key: str):  # noqa: ANN202
    from rest_framework.authtoken.models import Token

    try:
        token = Token.objects.select_related("user").get(key=key)
    except Token.DoesNotExist:
        return None
    return token.user if token.user.is_active else None


class TokenAuthMiddleware(BaseMiddleware):
    """Sets scope["user"] from an Authorization header, if the handshake carries one."""

    async def __call__(self, scope, receive, send):  # noqa: ANN001, ANN204
        header = _header(scope, b"authorization")
        if header is not None:
            scheme, _, key = header.partition(" ")
            user = None
            if scheme.lower() == "token" and key.strip():
                user = await _user_for_token(key.strip())
            scope = dict(scope, user=user or AnonymousUser(), auth_via="token", token=key.strip())
        return await super().__call__(scope, receive, send)


class SessionOrTokenAuth:
    """Token header when present, else the session cookie."""

    def __init__(self, inner):  # noqa: ANN001
        self.session_stack = AuthMiddlewareStack(inner)
        self.token_stack = TokenAuthMiddleware(inner)

    async def __call__(self, scope, receive, send):  # noqa: ANN001, ANN204
        if _header(scope, b"authorization") is not None:
            return await self.token_stack(scope, receive, send)
        return await self.session_stack(scope, receive, send)


class OriginCheck:
    """Refuse cross-site browser handshakes (which would carry the victim's cookie).

    A handshake with no Origin header comes from a non-browser client, which cannot be
    tricked into sending someone else's cookie, so it is allowed; its auth is checked anyway.
    """

    def __init__(self, inner):  # noqa: ANN001
        self.inner = inner

    async def __call__(self, scope, receive, send):  # noqa: ANN001, ANN204
        origin = _header(scope, b"origin")
        if origin is not None and not self._allowed(origin, scope):
            return await WebsocketDenier()(scope, receive, send)
        return await self.inner(scope, receive, send)

    @staticmethod
    def _allowed(origin: str, scope: dict) -> bool:
        parsed = urlparse(origin)
        if parsed.hostname is None:
            return False
        if origin in settings.CSRF_TRUSTED_ORIGINS:
            return True
        # Same host as the handshake itself (the page and the socket share a server).
        host = _header(scope, b"host")
        if host and parsed.netloc == host:
            return True
        return validate_host(parsed.hostname, settings.ALLOWED_HOSTS)


def session_group(session_key: str) -> str:
    """The sockets that signed in with one browser session (the cookie, not a token)."""
    return f"session.{session_key}"


def token_group(key: str) -> str:
    """The sockets that signed in with one API token. Named by a digest, so the secret itself
    is never a key in the channel layer's store."""
    return "token." + hashlib.sha256(key.encode()).hexdigest()[:40]


def sign_in_group(scope: dict) -> str | None:
    """The group that closes this socket when the credential it signed in with ends."""
    if scope.get("auth_via") == "token":
        return token_group(scope["token"])
    session = scope.get("session")
    return session_group(session.session_key) if session and session.session_key else None


def _end_sockets(group: str) -> None:
    layer = get_channel_layer()
    if layer is not None:
        async_to_sync(layer.group_send)(group, {"type": "sign_in.ended"})


def end_session_sockets(session_key: str | None) -> None:
    """Close every socket signed in with this browser session, on any server process: after
    a sign-out the browser's sockets must not go on playing as that user."""
    if session_key:
        _end_sockets(session_group(session_key))


def end_token_sockets(key: str) -> None:
    """Close every socket signed in with this API token, on any server process: a revoked
    token must not go on playing through a socket it opened."""
    _end_sockets(token_group(key))


def websocket_stack(inner):  # noqa: ANN001, ANN201
    return OriginCheck(SessionOrTokenAuth(inner))
