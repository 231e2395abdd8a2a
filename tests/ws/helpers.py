"""Helpers for consumer tests with channels' WebsocketCommunicator."""

from __future__ import annotations

import contextlib
import json

from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator

from server.asgi import application
from server.lean_consumer import NOT_SIGNED_IN

# How a socket closes when it is not signed in, or its sign-in ended (PROTOCOL.md's 4401).
CLOSED_4401 = {"type": "websocket.close", "code": 4401, "reason": NOT_SIGNED_IN}


async def token_of(user) -> str:  # noqa: ANN001
    return await database_sync_to_async(lambda: user.auth_token.key)()


# Sockets a test opened; `close_open_sockets` disconnects those the test left open, so each
# consumer ends through its disconnect handler, not by having its tasks cancelled with the loop.
OPEN: list[WebsocketCommunicator] = []


async def close_open_sockets() -> None:
    while OPEN:
        comm = OPEN.pop()
        with contextlib.suppress(Exception):  # already gone: nothing is left to close
            await comm.disconnect()


def track(comm: WebsocketCommunicator) -> WebsocketCommunicator:
    OPEN.append(comm)
    return comm


async def connect(path: str, user=None, extensions: dict | None = None) -> WebsocketCommunicator:  # noqa: ANN001
    """An open socket, signed in as `user`; `extensions`: the ASGI extensions the server
    offers in the scope (as server.daphne_server's does)."""
    headers = []
    if user is not None:
        headers.append((b"authorization", f"Token {await token_of(user)}".encode()))
    comm = track(WebsocketCommunicator(application, path, headers=headers))
    if extensions is not None:
        comm.scope["extensions"] = extensions  # read once the application starts, in connect
    connected, _ = await comm.connect()
    assert connected
    return comm


async def send(comm: WebsocketCommunicator, t: str, d: dict | None = None) -> None:
    frame = {"t": t} if d is None else {"t": t, "d": d}
    await comm.send_to(text_data=json.dumps(frame))


# How long a test waits for a frame or a close it expects: the communicator's default second
# was too short on a loaded CI host. A pass waits no longer.
WAIT = 3.0


async def recv(comm: WebsocketCommunicator, timeout: float = WAIT) -> dict:
    return json.loads(await comm.receive_from(timeout=timeout))


async def recv_until(comm: WebsocketCommunicator, t: str, timeout: float = WAIT) -> dict:
    while True:
        frame = await recv(comm, timeout)
        if frame["t"] == t:
            return frame
