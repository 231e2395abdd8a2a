"""A bare echo consumer: the ceiling that bench/ws_moves.py measures the game socket against."""

from __future__ import annotations

from server.lean_consumer import LeanWebsocketConsumer


class EchoConsumer(LeanWebsocketConsumer):
    """Echoes every text frame back; requires the same auth as a game socket, and closes as
    one does when that sign-in ends."""

    async def connect(self) -> None:
        await self.admit()

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        if text_data is not None:
            await self.send(text_data=text_data)
