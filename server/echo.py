"""A bare echo consumer: the ceiling that bench/ws_moves.py measures the game socket against."""

from __future__ import annotations

from server.lean_consumer import LeanWebsocketConsumer
from server.ws_auth import CLOSE_UNAUTHENTICATED


class EchoConsumer(LeanWebsocketConsumer):
    """Echoes every text frame back; requires the same auth as a game socket, and closes as
    one does when that sign-in ends."""

    async def connect(self) -> None:
        user = self.scope.get("user")
        await self.accept()
        if user is None or not user.is_authenticated:
            # Accept first: a close before accept is an HTTP 403 and the code would be lost.
            await self.close(code=CLOSE_UNAUTHENTICATED)
            return
        await self.follow_sign_in()

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        if text_data is not None:
            await self.send(text_data=text_data)
