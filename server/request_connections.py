"""Close an HTTP request's database connections when the request ends, unless its thread lives
on.

Under ASGI, a request's sync code runs on a thread made for that request (asgiref's
`ThreadSensitiveContext`, as Django's own ASGI handler uses it), so every request opened a
connection of its own. With persistent
connections (`CONN_MAX_AGE`, which the socket threads need) Django leaves it open at the end
of the request, held by a thread that is gone, until the garbage collector happens to free
it: 100 concurrent sign-ups held up to 47 PostgreSQL connections, and with the collector
tuned to run less often (server.gc_tuning) they passed PostgreSQL's limit of 100. Nothing can
reuse such a connection, so closing it at once loses nothing. The requests that hold one of
server.http_limit's slots run on the slot's thread instead, which lives on and keeps its
connection for the slot's next request, as the socket consumers' threads keep theirs; only the
requests that take no slot (the health check, static files) still get a thread of their own.
"""

from __future__ import annotations

import threading
from typing import Any

from django.core.signals import request_finished
from django.db import connections
from django.dispatch import receiver

from server.http_app import ThreadedWSGIHandler
from server.http_limit import SLOT_THREAD_PREFIX


@receiver(request_finished)
def close_request_thread_connections(sender: Any, **kwargs: Any) -> None:
    """Runs in the request's own thread (Django sends the signal from it), after the response;
    only for the server's requests (server.http_app), not a test client's or a command's."""
    if not (isinstance(sender, type) and issubclass(sender, ThreadedWSGIHandler)):
        return
    if threading.current_thread().name.startswith(SLOT_THREAD_PREFIX):
        return  # a slot's thread: its next request uses the connection (CONN_MAX_AGE)
    connections.close_all()
