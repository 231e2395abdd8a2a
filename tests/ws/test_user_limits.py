"""What one user's sockets share in a server process: how many may be open at once, and one
budget of `sync`s. Every other limit is a socket's own, so an account with many sockets was
many clients (server.lean_consumer.UserSockets)."""

from __future__ import annotations

import asyncio
import threading

import pytest
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from channels.testing import WebsocketCommunicator

from games import services, socket_calls
from games.broadcast import game_group
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


async def test_a_users_syncs_answered_at_once_are_capped_and_a_waiting_client_never_is(
    user,  # noqa: ANN001
    settings,  # noqa: ANN001
    monkeypatch,  # noqa: ANN001
) -> None:
    """Each sync waits for its answer, as a client may, so no socket's own rate holds it; 50
    sockets of one account so held 417 database reads a second. A user's sockets may have
    WS_SYNCS_AT_ONCE being answered at once: one more is refused, and a client that waits for
    each answer, however fast, never is."""
    settings.WS_SYNCS_AT_ONCE = 1
    game = await database_sync_to_async(services.start_practice)(user, "portuguese", 1)
    first, second = [await connect(f"/ws/games/{game.pk}", user) for _ in range(2)]
    for comm in (first, second):
        assert (await recv(comm))["t"] == "state"
    for i in range(30):  # one socket, each sync after the last one's answer
        await send(first, "sync", {"id": f"s-{i}"})
        assert (await recv(first))["t"] == "state"

    release = threading.Event()
    load_state = socket_calls.load_state

    def slow_load(*args):  # noqa: ANN002, ANN202
        release.wait(5)
        return load_state(*args)

    monkeypatch.setattr(socket_calls, "load_state", slow_load)
    await send(first, "sync", {"id": "slow"})
    await asyncio.sleep(0.2)  # its read has started, on a thread
    await send(second, "sync", {"id": "one-more"})
    refused = await recv(second)
    assert refused["t"] == "error" and refused["d"]["code"] == "rate_limited"
    assert refused["d"]["id"] == "one-more"
    release.set()
    assert (await recv(first))["t"] == "state"
    await send(second, "sync", {"id": "again"})  # answered: room again
    assert (await recv(second))["t"] == "state"
    await send(second, "ping")  # the refused socket stayed open
    assert (await recv(second))["t"] == "pong"


async def broken(self, data: dict) -> None:  # noqa: ANN001
    """A handler that raised what nothing catches (a bug)."""
    raise RuntimeError("a handler broke")


async def test_a_socket_whose_consumer_crashed_no_longer_counts_for_its_user(
    user,  # noqa: ANN001
    monkeypatch,  # noqa: ANN001
) -> None:
    """A handler that raised ended the consumer without its disconnect: the socket stayed
    counted for good, and after WS_MAX_SOCKETS_PER_USER such crashes (reconnects during a
    database outage, before a failed write was an error frame) every new socket of the user
    was refused with 4429."""
    from games.consumers import GameConsumer

    game = await database_sync_to_async(services.start_practice)(user, "portuguese", 1)
    comm = await connect(f"/ws/games/{game.pk}", user)
    await recv(comm)
    assert lean_consumer._users[user.pk].open == 1
    monkeypatch.setattr(GameConsumer, "on_ping", broken)
    layer = get_channel_layer()
    left: list[str] = []
    discard = layer.group_discard

    async def recorded(group: str, channel: str) -> None:
        left.append(group)
        await discard(group, channel)

    monkeypatch.setattr(layer, "group_discard", recorded)
    await send(comm, "ping")
    with pytest.raises(RuntimeError, match="a handler broke"):
        await comm.receive_output(timeout=3)
    assert user.pk not in lean_consumer._users  # counted no more
    assert game_group(game.pk) in left  # and out of its game's group
