"""ASGI entry point: HTTP through Django, WebSockets through Channels routing."""

import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "server.settings")

import django  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402

django.setup(set_prefix=False)  # as Django's own entry points do; a request sets its prefix

from django.conf import settings  # noqa: E402

import server.request_connections  # noqa: E402, F401  (connects its request_finished receiver)
from server.http_app import HttpApp  # noqa: E402
from server.http_limit import ConcurrencyLimit  # noqa: E402
from server.routing import websocket_urlpatterns  # noqa: E402
from server.ws_auth import websocket_stack  # noqa: E402

application = ProtocolTypeRouter(
    {
        "http": ConcurrencyLimit(
            HttpApp(),
            settings.HTTP_CONCURRENCY,
            per_client=settings.HTTP_REQUESTS_PER_CLIENT,
            session_cookie=settings.SESSION_COOKIE_NAME,
            num_proxies=settings.REST_FRAMEWORK["NUM_PROXIES"],
        ),
        "websocket": websocket_stack(URLRouter(websocket_urlpatterns)),
    }
)

from server.gc_tuning import tune_collector  # noqa: E402

tune_collector()
