"""WebSocket handshake authentication and origin checks.

Non-browser clients send `Authorization: Token <key>` on the handshake. A browser cannot set
headers on a WebSocket: the project's own pages ride on the session cookie (Channels'
AuthMiddleware), and a page on another site, which gets no cookie of this one, offers its token
as a subprotocol instead, `new WebSocket(url, ["solitaire-arena", "token." + key])`, the one
header a browser lets a page fill. The server accepts such a handshake with `solitaire-arena`,
so the key is not sent back. A handshake whose token is wrong gets an AnonymousUser and the
consumer closes with 4401.
"""

from __future__ import annotations

import hashlib
import logging
from urllib.parse import urlparse

from asgiref.sync import async_to_sync
from channels.auth import AuthMiddleware
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from channels.middleware import BaseMiddleware
from channels.security.websocket import WebsocketDenier
from channels.sessions import CookieMiddleware, SessionMiddleware
from django.conf import settings
from django.contrib.auth.models import AnonymousUser
from django.http.request import split_domain_port, validate_host
from django.utils.http import is_same_domain

from server.client_address import authorization_parts, scope_header
from server.errors import DATABASE_AWAY
from server.stores import log_away
from server.ws_subprotocol import offered_token

log = logging.getLogger(__name__)


def carries_token(scope: dict) -> bool:
    """Whether a handshake signs in with a token (the header, or the subprotocol), and so not
    with the cookie."""
    return scope_header(scope, b"authorization") is not None or offered_token(scope) is not None


@database_sync_to_async
def _user_for_token(key: str):  # noqa: ANN202
    from rest_framework.authtoken.models import Token

    try:
        token = Token.objects.select_related("user").get(key=key)
    except Token.DoesNotExist:
        return None
    return token.user if token.user.is_active else None


class TokenAuthMiddleware(BaseMiddleware):
    """Sets scope["user"] from an Authorization header, or else a token subprotocol, if the
    handshake carries one."""

    async def __call__(self, scope, receive, send):  # noqa: ANN001, ANN204
        header = scope_header(scope, b"authorization")
        offered = offered_token(scope)
        if header is not None or offered is not None:
            if header is not None:
                scheme, key = authorization_parts(header) or ("", "")
                key = key if scheme == "token" else ""
            else:
                key = offered
            try:
                user = await _user_for_token(key) if key else None
            except DATABASE_AWAY as exc:
                user = None
                scope = _sign_in_unknown(scope, exc)
            scope = dict(scope, user=user or AnonymousUser(), auth_via="token", token=key)
        return await super().__call__(scope, receive, send)


def _sign_in_unknown(scope: dict, exc: BaseException) -> dict:
    """Mark a handshake whose sign-in the database could not check: its socket closes with
    1013, to be tried again (LeanWebsocketConsumer.admit), where the handshake failed with
    HTTP 500 and a traceback."""
    log_away("Socket sign-ins (closed with 1013)", exc, log)
    return dict(scope, sign_in_unknown=True)


class SessionAuth(AuthMiddleware):
    """Channels' session sign-in, with a database that cannot be asked marked as for a token."""

    async def resolve_scope(self, scope: dict) -> None:
        try:
            await super().resolve_scope(scope)
        except DATABASE_AWAY as exc:
            scope["user"]._wrapped = AnonymousUser()
            scope.update(_sign_in_unknown({}, exc))


class SessionOrTokenAuth:
    """A token (header or subprotocol) when present, else the session cookie."""

    def __init__(self, inner):  # noqa: ANN001
        self.session_stack = CookieMiddleware(SessionMiddleware(SessionAuth(inner)))
        self.token_stack = TokenAuthMiddleware(inner)

    async def __call__(self, scope, receive, send):  # noqa: ANN001, ANN204
        if carries_token(scope):
            return await self.token_stack(scope, receive, send)
        return await self.session_stack(scope, receive, send)


class OriginCheck:
    """Refuse handshakes for a Host this server does not serve, and cross-site browser
    handshakes (which would carry the victim's cookie), by the rules Django's CSRF check
    applies to a REST write.

    The Host must be one of ALLOWED_HOSTS, as for any HTTP request (REST answers another with
    400). A browser's Origin must be this very site, scheme, host and port (`https` where the
    handshake came over TLS, or a proxy says so in SECURE_PROXY_SSL_HEADER), or one of
    CSRF_TRUSTED_ORIGINS (`https://*.example.com` names a domain's subdomains). Matching the
    Origin's host name alone against ALLOWED_HOSTS, as this did before, let a page on another
    port or scheme of an allowed host, or on any host where ALLOWED_HOSTS is `*`, open a socket
    with its visitor's cookie. A handshake with no Origin header comes from a non-browser
    client, which cannot be tricked into sending someone else's cookie; its auth is checked
    anyway. Nor is the Origin of a handshake that carries a token checked (the Authorization
    header, or the subprotocol a page on another site offers): with it the cookie is not read
    (SessionOrTokenAuth), so nothing rides on a visitor's sign-in, only on a key the page
    already holds. A client that sends its token from anywhere is let in, as REST lets in a
    token request from any Origin (a token request gets no CSRF check; server.cors).
    """

    def __init__(self, inner):  # noqa: ANN001
        self.inner = inner

    async def __call__(self, scope, receive, send):  # noqa: ANN001, ANN204
        host = scope_header(scope, b"host")
        origin = scope_header(scope, b"origin")
        cookie_may_sign_in = not carries_token(scope)
        if (host is not None and not host_allowed(host)) or (
            cookie_may_sign_in
            and origin is not None
            and not origin_allowed(origin, host, secure_handshake(scope))
        ):
            return await WebsocketDenier()(scope, receive, send)
        return await self.inner(scope, receive, send)


def host_allowed(host: str) -> bool:
    """Whether a Host header names this server, as Django's `HttpRequest.get_host` decides."""
    domain, _port = split_domain_port(host)
    allowed = settings.ALLOWED_HOSTS
    if settings.DEBUG and not allowed:
        allowed = [".localhost", "127.0.0.1", "[::1]"]  # Django's own default under DEBUG
    return bool(domain) and validate_host(domain, allowed)


def secure_handshake(scope: dict) -> bool:
    """Whether the handshake came over TLS: `wss`, or a proxy that says so in the header
    SECURE_PROXY_SSL_HEADER names (as `HttpRequest.is_secure` reads it)."""
    if scope.get("scheme") in ("wss", "https"):
        return True
    proxy = getattr(settings, "SECURE_PROXY_SSL_HEADER", None)
    if not proxy:
        return False
    name, expected = proxy
    header = name.removeprefix("HTTP_").lower().replace("_", "-").encode("latin1")
    value = scope_header(scope, header)
    return value is not None and value.split(",", 1)[0].strip() == expected


def origin_allowed(origin: str, host: str | None, secure: bool) -> bool:
    """Whether a browser page at `origin` may open a socket here, as Django's
    `CsrfViewMiddleware` decides whether it may write: this site itself, or a trusted one."""
    origin = origin.lower()
    trusted = [o.lower() for o in settings.CSRF_TRUSTED_ORIGINS]
    if origin in trusted:
        return True
    if host is not None and origin == f"{'https' if secure else 'http'}://{host.lower()}":
        return True
    parsed = urlparse(origin)
    if parsed.hostname is None:
        return False
    wildcards = [urlparse(entry) for entry in trusted if "*" in entry]
    return any(
        wild.scheme == parsed.scheme and is_same_domain(parsed.netloc, wild.netloc.lstrip("*"))
        for wild in wildcards
    )


def session_group(session_key: str) -> str:
    """The sockets that signed in with one browser session (the cookie, not a token)."""
    return f"session.{session_key}"


def token_group(key: str) -> str:
    """The sockets that signed in with one API token. Named by a digest, so the secret itself
    is never a key in the channel layer's store."""
    return "token." + hashlib.sha256(key.encode()).hexdigest()[:40]


def user_group(user_id: int) -> str:
    """Every socket of one user, whatever it signed in with: a user deactivated (or deleted)
    in the admin closes them all."""
    return f"user.{user_id}"


def sign_in_group(scope: dict) -> str | None:
    """The group that closes this socket when the credential it signed in with ends."""
    if scope.get("auth_via") == "token":
        return token_group(scope["token"])
    session = scope.get("session")
    return session_group(session.session_key) if session and session.session_key else None


async def sign_in_lasts(scope: dict) -> bool:
    """Whether the credential a socket signed in with still stands: its token, as the
    handshake looked it up, or its browser session (a sign-out, or another user's sign-in,
    deletes the session's key) and its user, still active."""
    if scope.get("auth_via") == "token":
        return await _user_for_token(scope["token"]) is not None
    session = scope.get("session")
    return session is not None and await _session_lasts(session, scope["user"].pk)


@database_sync_to_async
def _session_lasts(session, user_id: int) -> bool:  # noqa: ANN001
    from django.contrib.auth import get_user_model

    active = get_user_model().objects.filter(pk=user_id, is_active=True).exists()
    return active and session.exists(session.session_key)


def _tell_sockets(group: str, message: dict) -> None:
    layer = get_channel_layer()
    if layer is not None:
        async_to_sync(layer.group_send)(group, message)


def _end_sockets(group: str) -> None:
    _tell_sockets(group, {"type": "sign_in.ended"})


def end_session_sockets(session_key: str | None) -> None:
    """Close every socket signed in with this browser session, on any server process: after
    a sign-out the browser's sockets must not go on playing as that user."""
    if session_key:
        _end_sockets(session_group(session_key))


def session_key_changed(old_key: str | None, new_key: str | None, same_user: bool) -> None:
    """A sign-in replaced a browser session's key (Django's `login` cycles it, or flushes the
    session for another user): the sockets that signed in with the old key follow the new one
    if it is the same user's, so signing out later still closes them; another user's sign-in
    ends the old session, and its sockets close with 4401 as at a sign-out."""
    if not old_key or old_key == new_key:
        return
    if not same_user or not new_key:
        return end_session_sockets(old_key)
    _tell_sockets(
        session_group(old_key), {"type": "sign_in.moved", "group": session_group(new_key)}
    )


def end_user_sockets(user_id: int) -> None:
    """Close every socket of this user, on any server process: a user deactivated or deleted
    must not go on playing through a socket opened before."""
    _end_sockets(user_group(user_id))


def end_token_sockets(key: str) -> None:
    """Close every socket signed in with this API token, on any server process: a revoked
    token must not go on playing through a socket it opened."""
    _end_sockets(token_group(key))


def websocket_stack(inner):  # noqa: ANN001, ANN201
    return OriginCheck(SessionOrTokenAuth(inner))
