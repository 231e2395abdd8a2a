"""Close an HTTP request's database connections when the request ends, under ASGI.

Under ASGI, Django runs each request's sync code on a thread made for that request (asgiref's
`ThreadSensitiveContext`), so every request opens a connection of its own. With persistent
connections (`CONN_MAX_AGE`, which the socket threads need) Django leaves it open at the end
of the request, held by a thread that is gone, until the garbage collector happens to free
it: 100 concurrent sign-ups held up to 47 PostgreSQL connections, and with the collector
tuned to run less often (server.gc_tuning) they passed PostgreSQL's limit of 100. Nothing can
reuse such a connection, so closing it at once loses nothing. The socket consumers' threads
live on and keep theirs.
"""

from __future__ import annotations

from typing import Any

from django.core.handlers.asgi import ASGIHandler
from django.core.signals import request_finished
from django.db import connections
from django.dispatch import receiver


@receiver(request_finished)
def close_request_thread_connections(sender: Any, **kwargs: Any) -> None:
    """Runs in the request's own thread (Django sends the signal from it), after the response."""
    if isinstance(sender, type) and issubclass(sender, ASGIHandler):
        connections.close_all()
