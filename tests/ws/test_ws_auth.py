"""WebSocket handshake auth: token header, session cookie, refusals, origin checks."""

from __future__ import annotations

import json

import pytest
from channels.testing import WebsocketCommunicator
from django.conf import settings

from games import clock
from server.asgi import application
from tests.ws.helpers import track

pytestmark = pytest.mark.django_db(transaction=True)


def communicator(path: str, headers: list[tuple[bytes, bytes]] | None = None):  # noqa: ANN201
    return track(WebsocketCommunicator(application, path, headers=headers or []))


async def test_token_header_is_accepted(user):  # noqa: ANN001
    key = await _token(user)
    comm = communicator("/ws/echo", [(b"authorization", f"Token {key}".encode())])
    connected, _ = await comm.connect()
    assert connected
    await comm.send_to(text_data='{"hello": 1}')
    assert await comm.receive_from() == '{"hello": 1}'
    await comm.disconnect()


async def test_missing_auth_closes_with_4401():
    comm = communicator("/ws/echo")
    connected, _ = await comm.connect()
    assert connected  # accepted, then closed with the auth code
    out = await comm.receive_output()
    assert out == {"type": "websocket.close", "code": 4401}


async def test_wrong_token_closes_with_4401(user):  # noqa: ANN001
    comm = communicator("/ws/echo", [(b"authorization", b"Token " + b"f" * 40)])
    await comm.connect()
    assert await comm.receive_output() == {"type": "websocket.close", "code": 4401}


async def test_a_leaderboard_socket_is_public_as_its_rest_twin():
    """`GET /api/daily/{date}/{variant}/leaderboard` needs no sign-in, nor does its socket (a
    game socket does: test_game_socket); a wrong token is refused, as REST refuses it."""
    path = f"/ws/leaderboards/{clock.today().isoformat()}/spanish"
    comm = communicator(path)
    connected, _ = await comm.connect()
    assert connected
    first = json.loads(await comm.receive_from())
    assert first["t"] == "leaderboard" and first["d"]["entries"] == []
    await comm.send_to(text_data='{"t": "sync"}')
    assert json.loads(await comm.receive_from())["t"] == "leaderboard"
    await comm.disconnect()

    wrong = communicator(path, [(b"authorization", b"Token " + b"f" * 40)])
    await wrong.connect()
    assert await wrong.receive_output() == {"type": "websocket.close", "code": 4401}


async def signed_in_browser(user):  # noqa: ANN001, ANN201
    """A test client signed in with a session, as the browser is, and a function that makes a
    socket riding on its cookie (same origin, as the page's own)."""
    from asgiref.sync import sync_to_async
    from django.test import Client

    client = Client()
    await sync_to_async(client.force_login)(user)
    cookie = f"{settings.SESSION_COOKIE_NAME}={client.cookies[settings.SESSION_COOKIE_NAME].value}"
    headers = [(b"cookie", cookie.encode()), (b"origin", b"http://testserver")]
    return client, lambda path: communicator(path, [*headers, (b"host", b"testserver")])


async def test_session_cookie_is_accepted(user):  # noqa: ANN001
    _, socket_to = await signed_in_browser(user)
    comm = socket_to("/ws/echo")
    connected, _ = await comm.connect()
    assert connected
    await comm.send_to(text_data="ping")
    assert await comm.receive_from() == "ping"
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

    assert await browser.receive_output() == {"type": "websocket.close", "code": 4401}
    assert await browser_echo.receive_output() == {"type": "websocket.close", "code": 4401}
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

    assert await app.receive_output() == {"type": "websocket.close", "code": 4401}
    assert await app_echo.receive_output() == {"type": "websocket.close", "code": 4401}
    await send(browser, "ping")
    assert (await recv(browser))["t"] == "pong"


async def test_cross_site_origin_is_denied(user):  # noqa: ANN001
    key = await _token(user)
    comm = communicator(
        "/ws/echo",
        [(b"authorization", f"Token {key}".encode()), (b"origin", b"https://evil.example")],
    )
    connected, _ = await comm.connect()
    assert not connected


async def _token(user) -> str:  # noqa: ANN001
    from channels.db import database_sync_to_async

    return await database_sync_to_async(lambda: user.auth_token.key)()
