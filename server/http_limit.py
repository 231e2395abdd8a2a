"""Bound how many HTTP requests one server process runs at once; the rest wait their turn.

Under ASGI, Django runs each request's sync code on a thread made for that request, and that
thread opens a database connection of its own (server.request_connections closes it when the
request ends). So the connections a process holds grow with the requests in progress, without
bound. A slow request makes them pile up: at the first request of a day, every request for the
daily challenges waits for their certification, each holding a connection. Measured on
PostgreSQL's default `max_connections` of 100, 150 such requests at once on one process: 50 of
them failed with HTTP 500 ("too many clients"), and the rest waited 21 s.

Here at most `HTTP_CONCURRENCY` requests (default 16) run at once per process; the others wait
on the event loop, where waiting costs no thread and no connection, and run as slots free up.
A client sees a slower answer instead of an error. Two kinds of request never wait: the health
check (`/api/health`, which an orchestrator must reach even while the process is busy) and the
browser client's static files, which need no database. WebSocket messages are not HTTP: their
database work has threads of its own (GAME_DB_THREADS).
"""

from __future__ import annotations

import asyncio
from typing import Any
from weakref import WeakKeyDictionary

EXEMPT_PREFIXES = ("/api/health", "/static/")


class ConcurrencyLimit:
    """ASGI middleware: HTTP requests past the first `limit` in progress wait for a slot."""

    def __init__(self, app: Any, limit: int, exempt: tuple[str, ...] = EXEMPT_PREFIXES) -> None:
        self.app = app
        self.limit = limit
        self.exempt = exempt
        # One semaphore per event loop: a process serves on one, tests start one per test.
        self._slots: WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = (
            WeakKeyDictionary()
        )

    def slots(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        slots = self._slots.get(loop)
        if slots is None:
            slots = self._slots[loop] = asyncio.Semaphore(self.limit)
        return slots

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["path"].startswith(self.exempt):
            return await self.app(scope, receive, send)
        async with self.slots():
            return await self.app(scope, receive, send)
