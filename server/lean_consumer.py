"""The consumer base every socket of this project uses, the bench's echo included."""

from __future__ import annotations

from channels.consumer import get_handler_name
from channels.generic.websocket import AsyncWebsocketConsumer


class LeanWebsocketConsumer(AsyncWebsocketConsumer):
    """Channels' WebSocket consumer, minus its per-message `aclose_old_connections()`.

    Channels runs `close_old_connections` on a worker thread before every message: a thread
    hop on every frame, even a ping or a fanned-out state. Here the database is reached only
    through `database_sync_to_async`, which closes stale connections itself, in the thread
    that uses them. The echo consumer (the bench's ceiling) shares this base, so the game
    socket is measured against a socket with the same plumbing, not a slower one.
    """

    async def dispatch(self, message: dict) -> None:
        handler = getattr(self, get_handler_name(message), None)
        if handler is None:
            raise ValueError(f"No handler for message type {message['type']}")
        await handler(message)
