from django.urls import path, re_path

from games.consumers import NoSuchSocket
from games.routing import websocket_urlpatterns as game_patterns
from server.echo import EchoConsumer

websocket_urlpatterns = [
    path("ws/echo", EchoConsumer.as_asgi()),
    *game_patterns,
    re_path(r"", NoSuchSocket.as_asgi()),
]
