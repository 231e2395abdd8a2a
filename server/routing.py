from django.urls import path

from games.routing import websocket_urlpatterns as game_patterns
from server.echo import EchoConsumer

websocket_urlpatterns = [
    path("ws/echo", EchoConsumer.as_asgi()),
    *game_patterns,
]
