"""What one user's sockets share in a server process: how many may be open at once, and one
budget of `sync`s. Every other limit is a socket's own, so an account with many sockets was
many clients (server.lean_consumer.UserSockets)."""

from __future__ import annotations

import pytest
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator

from games import services
from server import lean_consumer
from server.asgi import application
from tests.ws.helpers import connect, recv, send, token_of, track

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def no_sockets_counted(monkeypatch):  # noqa: ANN001, ANN201
    """Counts start from none (a test database may give a user an id an earlier test used)."""
    monkeypatch.setattr(lean_consumer, "_users", {})


async def opened(path: str, user) -> dict:  # noqa: ANN001
    """What the server answers a handshake signed in as `user`: accept, or a close."""
    headers = [(b"authorization", f"Token {await token_of(user)}".encode())]
    comm = track(WebsocketCommunicator(application, path, headers=headers))
    connected, _ = await comm.connect()
    assert connected  # accepted first, so the close's code reaches the client
    return await comm.receive_output(timeout=3) if not await comm.receive_nothing(0.2) else {}


async def test_a_socket_more_than_a_user_may_open_is_closed_with_4429(
    user,  # noqa: ANN001
    other_user,  # noqa: ANN001
    settings,  # noqa: ANN001
) -> None:
    settings.WS_MAX_SOCKETS_PER_USER = 2
    first = await connect("/ws/echo", user)
    await connect("/ws/echo", user)
    refused = await opened("/ws/echo", user)
    assert refused["type"] == "websocket.close" and refused["code"] == 4429
    assert "Too many sockets" in refused["reason"]
    assert await opened("/ws/echo", other_user) == {}  # another user has room of their own

    await first.disconnect()  # one closed: room for one more
    assert await opened("/ws/echo", user) == {}
    assert lean_consumer._users[user.pk].open == 2


async def test_a_users_syncs_share_one_budget_across_their_sockets(user, settings) -> None:  # noqa: ANN001
    """Each sync waits for its answer, as a client may, so no socket's own rate holds it; 50
    sockets of one account so held 417 database reads a second."""
    settings.WS_SYNC_RATE, settings.WS_SYNC_BURST = 0.01, 3
    game = await database_sync_to_async(services.start_practice)(user, "portuguese", 1)
    socks = [await connect(f"/ws/games/{game.pk}", user) for _ in range(2)]
    for comm in socks:
        assert (await recv(comm))["t"] == "state"
    answers = []
    for i in range(4):
        comm = socks[i % 2]
        await send(comm, "sync", {"id": f"s-{i}"})
        answers.append(await recv(comm))
    assert [a["t"] for a in answers] == ["state", "state", "state", "error"]
    assert answers[-1]["d"]["code"] == "rate_limited" and answers[-1]["d"]["id"] == "s-3"
    await send(socks[0], "ping")  # the socket stays open, and other frames pass
    assert (await recv(socks[0]))["t"] == "pong"
