from django.urls import path, re_path

from games.routing import websocket_urlpatterns as game_patterns
from server.echo import EchoConsumer
from server.lean_consumer import LeanWebsocketConsumer

CLOSE_NOT_FOUND = 4404


class NoSuchSocket(LeanWebsocketConsumer):
    """Any other path (`/ws/games/abc`, a typo): a 4404 a client can act on, not a handshake
    that fails with HTTP 500 because no route matched."""

    async def connect(self) -> None:
        await self.accept()  # a close before accept would be an HTTP 403, losing the code
        await self.send(
            text_data='{"t":"error","d":{"id":null,"code":"bad_message",'
            '"detail":"No such WebSocket path."}}'
        )
        await self.close(code=CLOSE_NOT_FOUND)


websocket_urlpatterns = [
    path("ws/echo", EchoConsumer.as_asgi()),
    *game_patterns,
    re_path(r"", NoSuchSocket.as_asgi()),
]
