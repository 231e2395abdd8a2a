from django.conf import settings
from django.urls import path, re_path

from games.consumers import NoSuchSocket
from games.routing import websocket_urlpatterns as game_patterns
from server.echo import EchoConsumer

# Read once, as the application is built: /ws/echo is the benches' (settings.WS_ECHO).
echo_patterns = [path("ws/echo", EchoConsumer.as_asgi())] if settings.WS_ECHO else []

websocket_urlpatterns = [
    *echo_patterns,
    *game_patterns,
    re_path(r"", NoSuchSocket.as_asgi()),
]
