"""WebSocket handshake auth: token header, session cookie, refusals, origin checks."""

from __future__ import annotations

import json

import pytest
from channels.testing import WebsocketCommunicator
from django.conf import settings

from games import clock
from games.models import Game
from server.asgi import application
from server.lean_consumer import SIGN_IN_UNKNOWN
from server.ws_auth import host_allowed, origin_allowed, secure_handshake
from tests.ws.helpers import CLOSED_4401, WAIT, track

pytestmark = pytest.mark.django_db(transaction=True)


def communicator(path: str, headers: list[tuple[bytes, bytes]] | None = None):  # noqa: ANN201
    return track(WebsocketCommunicator(application, path, headers=headers or []))


async def test_token_header_is_accepted(user):  # noqa: ANN001
    key = await _token(user)
    comm = communicator("/ws/echo", [(b"authorization", f"Token {key}".encode())])
    connected, _ = await comm.connect()
    assert connected
    await comm.send_to(text_data='{"hello": 1}')
    assert await comm.receive_from(WAIT) == '{"hello": 1}'
    await comm.disconnect()


@pytest.mark.parametrize(
    "header",
    [
        "Token {k}",
        "token {k}",
        "TOKEN {k}",
        "Token\t{k}",
        "Token  {k}",
        " Token {k} ",
        "Token",
        "Token {k} extra",
        "Bearer {k}",
        "Token{k}",
    ],
)
async def test_a_token_header_opens_a_socket_exactly_when_it_signs_in_over_rest(user, header):  # noqa: ANN001
    """ "Auth as REST" (PROTOCOL): the handshake reads the header as DRF does, so a form that
    signs in over REST (a tab between the scheme and the key) opens a socket, and one refused
    there is refused here (4401)."""
    from asgiref.sync import sync_to_async
    from django.test import Client

    value = header.format(k=await _token(user))
    rest = await sync_to_async(lambda: Client().get("/api/me", HTTP_AUTHORIZATION=value))()
    comm = communicator("/ws/echo", [(b"authorization", value.encode())])
    await comm.connect()
    if rest.status_code == 200:
        await comm.send_to(text_data="{}")
        assert await comm.receive_from(WAIT) == "{}"
        await comm.disconnect()
    else:
        assert rest.status_code == 401, rest.content
        assert await comm.receive_output(WAIT) == CLOSED_4401


async def test_missing_auth_closes_with_4401():
    comm = communicator("/ws/echo")
    connected, _ = await comm.connect()
    assert connected  # accepted, then closed with the auth code
    out = await comm.receive_output(WAIT)
    assert out == CLOSED_4401


async def test_wrong_token_closes_with_4401(user):  # noqa: ANN001
    comm = communicator("/ws/echo", [(b"authorization", b"Token " + b"f" * 40)])
    await comm.connect()
    assert await comm.receive_output(WAIT) == CLOSED_4401


async def test_a_leaderboard_socket_is_public_as_its_rest_twin():
    """`GET /api/daily/{date}/{variant}/leaderboard` needs no sign-in, nor does its socket (a
    game socket does: test_game_socket); a wrong token is refused, as REST refuses it."""
    path = f"/ws/leaderboards/{clock.today().isoformat()}/spanish"
    comm = communicator(path)
    connected, _ = await comm.connect()
    assert connected
    first = json.loads(await comm.receive_from(WAIT))
    assert first["t"] == "leaderboard" and first["d"]["entries"] == []
    await comm.send_to(text_data='{"t": "sync"}')
    assert json.loads(await comm.receive_from(WAIT))["t"] == "leaderboard"
    await comm.disconnect()

    wrong = communicator(path, [(b"authorization", b"Token " + b"f" * 40)])
    await wrong.connect()
    assert await wrong.receive_output(WAIT) == CLOSED_4401


def cookie_of(client) -> bytes:  # noqa: ANN001
    """The `Cookie` header a test client's session goes with, as its browser sends it."""
    name = settings.SESSION_COOKIE_NAME
    return f"{name}={client.cookies[name].value}".encode()


async def signed_in(user):  # noqa: ANN001, ANN201
    """A test client signed in with a session, as the browser is, and its `Cookie` header."""
    from asgiref.sync import sync_to_async
    from django.test import Client

    client = Client()
    await sync_to_async(client.force_login)(user)
    return client, cookie_of(client)


async def signed_in_browser(user):  # noqa: ANN001, ANN201
    """A test client signed in with a session, as the browser is, and a function that makes a
    socket riding on its cookie (same origin, as the page's own)."""
    client, cookie = await signed_in(user)
    headers = [(b"cookie", cookie), (b"origin", b"http://testserver")]
    return client, lambda path: communicator(path, [*headers, (b"host", b"testserver")])


async def test_session_cookie_is_accepted(user):  # noqa: ANN001
    _, socket_to = await signed_in_browser(user)
    comm = socket_to("/ws/echo")
    connected, _ = await comm.connect()
    assert connected
    await comm.send_to(text_data="ping")
    assert await comm.receive_from(WAIT) == "ping"
    await comm.disconnect()


async def test_signing_out_closes_the_sessions_sockets_and_only_them(user):  # noqa: ANN001
    """A browser that signs out (in any tab) must not go on playing through a socket opened
    before: the session's sockets close with 4401. A token socket of the same user stays."""
    from asgiref.sync import sync_to_async

    from games import services
    from tests.ws.helpers import connect, recv, send

    game = await sync_to_async(services.start_practice)(user, "portuguese", 1)
    client, socket_to = await signed_in_browser(user)
    browser = socket_to(f"/ws/games/{game.pk}")
    assert (await browser.connect())[0]
    assert (await recv(browser))["t"] == "state"
    browser_echo = socket_to("/ws/echo")
    assert (await browser_echo.connect())[0]
    app = await connect(f"/ws/games/{game.pk}", user)
    assert (await recv(app))["t"] == "state"

    assert (await sync_to_async(client.post)("/api/auth/logout")).status_code == 204

    assert await browser.receive_output(WAIT) == CLOSED_4401
    assert await browser_echo.receive_output(WAIT) == CLOSED_4401
    await send(app, "ping")
    assert (await recv(app))["t"] == "pong"


async def test_revoking_the_token_closes_its_sockets_and_only_them(user):  # noqa: ANN001
    """A revoked key must not go on playing through a socket it opened before; the same user's
    browser session is another credential and stays."""
    from asgiref.sync import sync_to_async

    from accounts.services import revoke_token
    from games import services
    from tests.ws.helpers import connect, recv, send

    game = await sync_to_async(services.start_practice)(user, "portuguese", 1)
    app = await connect(f"/ws/games/{game.pk}", user)
    assert (await recv(app))["t"] == "state"
    app_echo = await connect("/ws/echo", user)
    _, socket_to = await signed_in_browser(user)
    browser = socket_to(f"/ws/games/{game.pk}")
    assert (await browser.connect())[0]
    assert (await recv(browser))["t"] == "state"

    await sync_to_async(revoke_token)(user)

    assert await app.receive_output(WAIT) == CLOSED_4401
    assert await app_echo.receive_output(WAIT) == CLOSED_4401
    await send(browser, "ping")
    assert (await recv(browser))["t"] == "pong"


async def test_a_token_revoked_while_its_socket_opens_still_closes_it(user, monkeypatch):  # noqa: ANN001
    """The handshake looks the token up before the socket joins the token's group: a revoke
    in between told a group the socket was not in yet, and the socket went on playing on a
    deleted key. The consumer looks again once it has joined."""
    from asgiref.sync import sync_to_async

    from accounts.services import revoke_token
    from games import services
    from games.models import Game
    from server import ws_auth
    from tests.ws.helpers import connect, send

    game = await sync_to_async(services.start_practice)(user, "portuguese", 1)
    real_lookup = ws_auth._user_for_token

    async def look_up_then_revoke(key: str):  # noqa: ANN202
        found = await real_lookup(key)
        await sync_to_async(revoke_token)(user)  # DELETE /api/auth/token, mid-handshake
        return found

    monkeypatch.setattr(ws_auth, "_user_for_token", look_up_then_revoke)
    sock = await connect(f"/ws/games/{game.pk}", user)
    assert await sock.receive_output(WAIT) == CLOSED_4401
    await send(sock, "move", {"move": "t0-t1", "v": 0, "id": "m-1"})
    assert await sock.receive_nothing(timeout=0.2)
    assert (await sync_to_async(Game.objects.get)(pk=game.pk)).version == 0


async def test_a_sign_out_while_a_browser_socket_opens_still_closes_it(user, monkeypatch):  # noqa: ANN001
    """The same gap for a browser session: signed out after the handshake read the session,
    before the socket joined the session's group."""
    from asgiref.sync import sync_to_async
    from channels.layers import get_channel_layer

    client, socket_to = await signed_in_browser(user)
    layer = get_channel_layer()
    real_add = layer.group_add

    async def sign_out_then_join(group: str, channel: str) -> None:
        if group.startswith("session."):
            assert (await sync_to_async(client.post)("/api/auth/logout")).status_code == 204
        await real_add(group, channel)

    monkeypatch.setattr(layer, "group_add", sign_out_then_join)
    sock = socket_to("/ws/echo")
    assert (await sock.connect())[0]
    assert await sock.receive_output(WAIT) == CLOSED_4401


async def test_a_token_deleted_elsewhere_closes_its_sockets(user):  # noqa: ANN001
    """Not only `DELETE /api/auth/token`: a token deleted in the admin, or with its user,
    closes the sockets it signed in too."""
    from asgiref.sync import sync_to_async
    from rest_framework.authtoken.models import Token

    from tests.ws.helpers import connect

    sock = await connect("/ws/echo", user)
    await sync_to_async(lambda: Token.objects.get(user=user).delete())()
    assert await sock.receive_output(WAIT) == CLOSED_4401
    other = await connect("/ws/echo", user)  # a new token (helpers.token_of)
    await sync_to_async(user.delete)()
    assert await other.receive_output(WAIT) == CLOSED_4401


async def test_deactivating_a_user_closes_every_socket_of_theirs(user, make_user):  # noqa: ANN001
    """The admin's "active" box: REST and new handshakes refuse the user at once, and the
    sockets they opened before (a token's, a browser session's) close with 4401 instead of
    going on playing. Another user's socket stays."""
    from asgiref.sync import sync_to_async

    from games import services
    from tests.ws.helpers import connect, recv, send

    game = await sync_to_async(services.start_practice)(user, "portuguese", 1)
    token_socket = await connect(f"/ws/games/{game.pk}", user)
    move = (await recv(token_socket))["d"]["legal_moves"][0]
    _, socket_to = await signed_in_browser(user)
    browser_socket = socket_to("/ws/echo")
    assert (await browser_socket.connect())[0]
    other = await connect("/ws/echo", await sync_to_async(make_user)())

    user.is_active = False
    await sync_to_async(user.save)()
    for sock in (token_socket, browser_socket):
        assert await sock.receive_output(WAIT) == CLOSED_4401
    await send(token_socket, "move", {"move": move, "v": 0, "id": "m-1"})
    assert await token_socket.receive_nothing(timeout=0.2)
    assert (await sync_to_async(Game.objects.get)(pk=game.pk)).version == 0
    await other.send_to(text_data="still here")
    assert await other.receive_from(WAIT) == "still here"
    late = await connect("/ws/echo", user)  # a new handshake with the same token
    assert await late.receive_output(WAIT) == CLOSED_4401


async def test_a_deleted_users_browser_socket_closes(user):  # noqa: ANN001
    """A token's sockets close with the token; a browser session's, with its user."""
    from asgiref.sync import sync_to_async

    _, socket_to = await signed_in_browser(user)
    sock = socket_to("/ws/echo")
    assert (await sock.connect())[0]
    await sync_to_async(user.delete)()
    assert await sock.receive_output(WAIT) == CLOSED_4401


async def test_a_user_deactivated_while_a_browser_socket_opens_is_refused(user, monkeypatch):  # noqa: ANN001
    """Deactivated after the handshake read the session, before the socket joined its
    user's group: the second look closes it."""
    from asgiref.sync import sync_to_async
    from channels.layers import get_channel_layer

    _, socket_to = await signed_in_browser(user)
    layer = get_channel_layer()
    real_add = layer.group_add

    async def deactivate_then_join(group: str, channel: str) -> None:
        if group.startswith("user."):
            user.is_active = False
            await sync_to_async(user.save)()
        await real_add(group, channel)

    monkeypatch.setattr(layer, "group_add", deactivate_then_join)
    sock = socket_to("/ws/echo")
    assert (await sock.connect())[0]
    assert await sock.receive_output(WAIT) == CLOSED_4401


async def test_cross_site_origin_is_denied_to_a_cookie(user):  # noqa: ANN001
    _, cookie = await signed_in(user)
    comm = communicator("/ws/echo", [(b"cookie", cookie), (b"origin", b"https://evil.example")])
    connected, _ = await comm.connect()
    assert not connected


async def test_a_token_is_let_in_from_any_origin_as_over_rest(user):  # noqa: ANN001
    """A browser cannot set Authorization on a WebSocket, and with it the cookie is not read:
    a client that names an Origin of its own (some libraries always do) still signs in."""
    key = await _token(user)
    comm = communicator(
        "/ws/echo",
        [(b"authorization", f"Token {key}".encode()), (b"origin", b"https://evil.example")],
    )
    assert (await comm.connect())[0]
    await comm.send_to(text_data='{"hello": 1}')
    assert await comm.receive_from(WAIT) == '{"hello": 1}'
    await comm.disconnect()


async def test_a_wrong_token_from_another_origin_is_still_refused(user):  # noqa: ANN001
    comm = communicator(
        "/ws/echo",
        [(b"authorization", b"Token nope"), (b"origin", b"https://evil.example")],
    )
    assert (await comm.connect())[0]
    assert await comm.receive_output(WAIT) == CLOSED_4401


async def _token(user) -> str:  # noqa: ANN001
    from channels.db import database_sync_to_async

    return await database_sync_to_async(lambda: user.auth_token.key)()


@pytest.mark.parametrize(
    ("origin", "host", "secure", "trusted", "allowed"),
    [
        ("http://testserver", "testserver", False, [], True),
        ("http://127.0.0.1:8000", "127.0.0.1:8000", False, [], True),
        ("HTTP://TestServer", "testserver", False, [], True),
        # Another port or scheme of the same host is another site (CSRF refuses its writes).
        ("http://127.0.0.1:9999", "127.0.0.1:8000", False, [], False),
        ("https://127.0.0.1:8000", "127.0.0.1:8000", False, [], False),
        ("http://arena.example", "arena.example", True, [], False),
        ("https://arena.example", "arena.example", True, [], True),
        ("http://localhost:8000", "127.0.0.1:8000", False, [], False),
        ("null", "testserver", False, [], False),
        ("https://app.example", "testserver", False, ["https://app.example"], True),
        ("https://a.b.example", "testserver", False, ["https://*.b.example"], True),
        ("http://a.b.example", "testserver", False, ["https://*.b.example"], False),
        ("https://evil.example", "testserver", False, ["https://*.b.example"], False),
        ("https://evil.example", None, False, [], False),
    ],
)
def test_an_origin_is_allowed_as_csrf_allows_a_write(
    origin, host, secure, trusted, allowed, settings
):  # noqa: ANN001, E501
    settings.CSRF_TRUSTED_ORIGINS = trusted
    assert origin_allowed(origin, host, secure) is allowed


@pytest.mark.parametrize(
    ("host", "allowed_hosts", "allowed"),
    [
        ("testserver", ["testserver"], True),
        ("127.0.0.1:8000", ["127.0.0.1"], True),
        ("evil.example", ["127.0.0.1", "testserver"], False),
        ("a.arena.example", [".arena.example"], True),
        ("evil.example", ["*"], True),
        ("bad host", ["*"], False),
    ],
)
def test_a_host_is_allowed_as_django_allows_a_request(host, allowed_hosts, allowed, settings):  # noqa: ANN001
    settings.ALLOWED_HOSTS = allowed_hosts
    assert host_allowed(host) is allowed


@pytest.mark.parametrize(
    ("headers", "scheme", "secure"),
    [
        ([], "ws", False),
        ([], "wss", True),
        ([(b"x-forwarded-proto", b"https")], "ws", True),
        ([(b"x-forwarded-proto", b"http")], "ws", False),
    ],
)
def test_a_handshake_is_secure_over_tls_or_as_the_proxy_says(headers, scheme, secure, settings):  # noqa: ANN001
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    assert secure_handshake({"scheme": scheme, "headers": headers}) is secure


async def test_a_page_on_another_port_of_this_host_cannot_ride_on_the_cookie(user):  # noqa: ANN001
    """The handshake a page at http://testserver:9999 makes with its visitor's cookie."""
    _, cookie = await signed_in(user)
    comm = communicator(
        "/ws/echo",
        [
            (b"cookie", cookie),
            (b"origin", b"http://testserver:9999"),
            (b"host", b"testserver"),
        ],
    )
    connected, _ = await comm.connect()
    assert not connected


async def test_a_handshake_for_a_host_not_served_is_denied(user):  # noqa: ANN001
    key = await _token(user)
    comm = communicator(
        "/ws/echo", [(b"authorization", f"Token {key}".encode()), (b"host", b"evil.example")]
    )
    connected, _ = await comm.connect()
    assert not connected


async def _session_socket(client, path: str):  # noqa: ANN001, ANN202
    same_site = [(b"origin", b"http://testserver"), (b"host", b"testserver")]
    comm = communicator(path, [(b"cookie", cookie_of(client)), *same_site])
    assert (await comm.connect())[0]
    return comm


async def _sign_in(client, user) -> None:  # noqa: ANN001
    from asgiref.sync import sync_to_async

    body = {"username": user.username, "password": "correct-horse-9"}
    res = await sync_to_async(client.post)("/api/auth/login", body, content_type="application/json")
    assert res.status_code == 200


async def test_another_users_sign_in_in_the_same_browser_closes_the_old_sessions_sockets(
    user,
    other_user,  # noqa: ANN001
):
    """Signing in as bob where alice was signed in ends alice's session (Django flushes it):
    a socket that rode on her cookie must not go on playing as her."""
    from django.test import Client

    client = Client()
    await _sign_in(client, user)
    alice = await _session_socket(client, "/ws/echo")
    await _sign_in(client, other_user)
    assert await alice.receive_output(WAIT) == CLOSED_4401


async def test_signing_in_again_keeps_the_sockets_and_a_later_sign_out_still_closes_them(user):  # noqa: ANN001
    """The same user signing in again gets a new session key; the sockets opened with the
    old one stay open and follow the new one, so signing out closes them."""
    from asgiref.sync import sync_to_async
    from django.test import Client

    client = Client()
    await _sign_in(client, user)
    sock = await _session_socket(client, "/ws/echo")
    await _sign_in(client, user)
    await sock.send_to(text_data="still here")
    assert await sock.receive_from(WAIT) == "still here"
    assert (await sync_to_async(client.post)("/api/auth/logout")).status_code == 204
    assert await sock.receive_output(WAIT) == CLOSED_4401


async def test_a_new_password_closes_every_socket_of_the_user(user, make_user):  # noqa: ANN001
    """Whatever a socket signed in with (the token, a browser session), a password change
    closes it with 4401: whoever knew the old password must not go on playing. Another
    user's socket stays."""
    from asgiref.sync import sync_to_async

    from accounts.services import change_password
    from tests.ws.helpers import connect

    token_socket = await connect("/ws/echo", user)
    _, socket_to = await signed_in_browser(user)
    browser_socket = socket_to("/ws/echo")
    assert (await browser_socket.connect())[0]
    other = await connect("/ws/echo", await sync_to_async(make_user)())

    await sync_to_async(change_password)(user, "correct-horse-9", "battery-staple-7")
    for sock in (token_socket, browser_socket):
        assert await sock.receive_output(WAIT) == CLOSED_4401
    await other.send_to(text_data="still here")
    assert await other.receive_from(WAIT) == "still here"


async def test_two_authorization_lines_are_read_as_one_header_as_over_rest(user):  # noqa: ANN001
    """Django joins a header's lines with commas ("Token k,Token k"), which DRF refuses: the
    handshake read only the first line, and opened a socket that REST would refuse."""
    from channels.testing import HttpCommunicator

    line = f"Token {await _token(user)}".encode()
    headers = [(b"authorization", line), (b"authorization", line), (b"host", b"localhost")]
    rest = await HttpCommunicator(application, "GET", "/api/me", headers=headers).get_response()
    assert rest["status"] == 401
    comm = communicator("/ws/echo", [(b"authorization", line), (b"authorization", line)])
    await comm.connect()
    assert await comm.receive_output(WAIT) == CLOSED_4401


def offering(path: str, protocols: list[str], headers: list | None = None):  # noqa: ANN201
    """A handshake that offers these subprotocols, as a browser's `new WebSocket(url, list)`."""
    return track(
        WebsocketCommunicator(application, path, headers=headers or [], subprotocols=protocols)
    )


ELSEWHERE = [(b"origin", b"https://client.example")]


async def test_a_page_on_another_site_signs_in_with_its_token_as_a_subprotocol(user):  # noqa: ANN001
    """A browser page cannot set Authorization on a WebSocket, and gets no cookie of this site
    from another: its token rides in the subprotocols, and the key is not sent back."""
    key = await _token(user)
    comm = offering("/ws/echo", ["solitaire-arena", f"token.{key}"], ELSEWHERE)
    assert await comm.connect() == (True, "solitaire-arena")
    await comm.send_to(text_data='{"hello": 1}')
    assert await comm.receive_from(WAIT) == '{"hello": 1}'


async def test_a_token_offered_alone_is_accepted_with_it(user):  # noqa: ANN001
    """A browser fails a handshake that offered subprotocols and got none back."""
    key = await _token(user)
    assert await offering("/ws/echo", [f"token.{key}"], ELSEWHERE).connect() == (
        True,
        f"token.{key}",
    )


@pytest.mark.parametrize("offered", ["token.nope", "token."])
async def test_a_wrong_token_subprotocol_is_refused_with_4401(user, offered):  # noqa: ANN001
    comm = offering("/ws/leaderboards/2026-01-01/spanish", ["solitaire-arena", offered], ELSEWHERE)
    assert (await comm.connect())[0]
    assert await comm.receive_output(WAIT) == CLOSED_4401


async def test_a_token_subprotocol_signs_in_as_its_own_user_never_the_cookies(user, other_user):  # noqa: ANN001
    """A page elsewhere whose visitor is signed in here: with a token offered, the cookie is not
    read, so the socket is the token's user's (a watcher of the visitor's game), not the
    visitor's."""
    from asgiref.sync import sync_to_async

    from games import services
    from tests.ws.helpers import recv, send

    game = await sync_to_async(services.start_practice)(user, "portuguese", 1)
    _, cookie = await signed_in(user)
    comm = offering(
        f"/ws/games/{game.pk}",
        ["solitaire-arena", f"token.{await _token(other_user)}"],
        [(b"cookie", cookie), *ELSEWHERE],
    )
    assert (await comm.connect())[0]
    state = await recv(comm)
    await send(comm, "move", {"move": state["d"]["legal_moves"][0], "v": 0, "id": "m-1"})
    refused = await recv(comm)
    assert refused["t"] == "error" and refused["d"]["code"] == "forbidden"


async def test_the_authorization_header_is_read_before_a_token_subprotocol(user):  # noqa: ANN001
    key = await _token(user)
    comm = offering(
        "/ws/echo", ["solitaire-arena", f"token.{key}"], [(b"authorization", b"Token nope")]
    )
    assert (await comm.connect())[0]
    assert await comm.receive_output(WAIT) == CLOSED_4401


async def test_a_subprotocol_of_someone_elses_is_not_chosen(user):  # noqa: ANN001
    key = await _token(user)
    comm = offering("/ws/echo", ["graphql-ws"], [(b"authorization", f"Token {key}".encode())])
    assert await comm.connect() == (True, None)


CLOSED_1013 = {"type": "websocket.close", "code": 1013, "reason": SIGN_IN_UNKNOWN}


async def test_a_token_the_database_cannot_check_closes_the_socket_to_try_again(
    user,  # noqa: ANN001
    monkeypatch,  # noqa: ANN001
    caplog,  # noqa: ANN001
):
    """PostgreSQL away: the handshake failed with HTTP 500 and a traceback each. It now opens
    and closes with 1013 ("try again later"), a line in the log."""
    from django.db import OperationalError

    from server import ws_auth

    async def away(key: str) -> None:
        raise OperationalError("server closed the connection unexpectedly\n\tThis probably...")

    monkeypatch.setattr(ws_auth, "_user_for_token", away)
    comm = communicator("/ws/echo", [(b"authorization", f"Token {await _token(user)}".encode())])
    assert (await comm.connect())[0]
    assert await comm.receive_output(WAIT) == CLOSED_1013
    (line,) = [r for r in caplog.records if r.name == "server.ws_auth"]
    assert line.exc_info is None and line.getMessage().endswith("unexpectedly")


async def test_a_session_the_database_cannot_check_closes_the_socket_to_try_again(
    user,  # noqa: ANN001
    monkeypatch,  # noqa: ANN001
):
    import channels.auth
    from django.db import InterfaceError

    _, socket_to = await signed_in_browser(user)

    async def away(scope: dict) -> None:
        raise InterfaceError("connection already closed")

    monkeypatch.setattr(channels.auth, "get_user", away)
    sock = socket_to("/ws/leaderboards/2026-01-01/spanish")  # public, yet not served as nobody
    assert (await sock.connect())[0]
    assert await sock.receive_output(WAIT) == CLOSED_1013
