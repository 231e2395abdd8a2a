"""Bound how many HTTP requests one server process runs at once; the rest wait their turn.

Under ASGI, a request's sync code runs on a thread made for that request, as Django's own ASGI
handler has it, and that thread opens a database connection of its own
(server.request_connections closes it when the request ends). So the connections a process holds
grew with the requests in progress, without bound. A slow request makes them pile up: at the
first request of a day, every request for the daily challenges waits for their certification,
each holding a connection. Measured on PostgreSQL's default `max_connections` of 100, 150 such
requests at once on one process: 50 of them failed with HTTP 500 ("too many clients"), and the
rest waited 21 s.

Here at most `HTTP_CONCURRENCY` requests (default 16) run at once per process; the others wait
on the event loop, where waiting costs no thread and no connection, and run as slots free up.
A client sees a slower answer instead of an error. Two kinds of request never wait: the health
check (`/api/health`, which an orchestrator must reach even while the process is busy) and the
browser client's static files, which need no database. WebSocket messages are not HTTP: their
database work has threads of its own (GAME_DB_THREADS).

Each slot has a thread of its own, which runs the sync code of every request that holds the
slot, one after another (asgiref's `ThreadSensitiveContext` with an executor), and keeps its
database connection from one request to the next as Django's `CONN_MAX_AGE` says. A thread
and a connection made for each request cost more than most requests: on PostgreSQL one client's
signed-in `GET /api/me` took 14.4-15.2 ms (p50), and 7.7-8.5 ms on the slots' threads
(bench/http_requests.py; server.http_app then took it to 4.3-5.0 ms).

A queue in order of arrival is fair only while no one client fills it: one user who sent 1,000
requests at once held every slot, and another user's request waited behind them all (2.2 s
against 5 ms; `make run`, SQLite). So one client may have at most `per_client` requests
(HTTP_REQUESTS_PER_CLIENT, default 16: as many as run at once) in progress or waiting; one
more is answered 429 `rate_limited` at once, with `Retry-After: 1`, costing no slot (the other
user's request then took 111 ms). A request stops counting once its answer is sent, not when
Django has finished with it (closing its database connection on a thread): a client that
waits for each answer on 6 connections was refused hundreds of times in 5 s. So a client that
waits for each answer is never refused, nor is a browser (it opens at most 6 connections to a
server). Every path counts, the health check's and static files' too (a prober and a browser
wait for their answers); those two only never wait for a slot.

A client is its token (the `Authorization` header read as DRF reads it, the scheme in any
case: `token KEY` and `Token  KEY` are one client), else its session cookie, else its address
(server.client_address): so users behind one address do not share a limit, and one user does
not get a new one for each of its addresses. Left open: a made-up credential makes a new
client, and a public endpoint answers it; an address is not limited as a whole, since every
client behind an unconfigured proxy, or a test harness on one machine, shares one.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from weakref import WeakKeyDictionary

from asgiref.sync import ThreadSensitiveContext
from django.http.cookie import parse_cookie

from server.client_address import (
    authorization_parts,
    client_block,
    forwarded_for,
    scope_header,
)
from server.cors import RAW_HEADERS

# Never wait for a slot: the health check (exactly) and the static files.
EXEMPT_PATHS = ("/api/health",)
EXEMPT_PREFIXES = ("/static/",)
RETRY_SECONDS = 1
# The name every slot's thread starts with (server.request_connections keeps their connections).
SLOT_THREAD_PREFIX = "http-slot"

log = logging.getLogger(__name__)


# The scheme DRF's TokenAuthentication reads (its `keyword`), lower-cased as authorization_parts
# gives it.
TOKEN_SCHEME = "token"


class ConcurrencyLimit:
    """ASGI middleware: HTTP requests past the first `limit` in progress wait for a slot, and a
    client's requests past its first `per_client` (0: no limit) are refused."""

    def __init__(
        self,
        app: Any,
        limit: int,
        *,
        per_client: int = 0,
        session_cookie: str = "sessionid",
        num_proxies: int = 0,
    ) -> None:
        self.app = app
        self.limit = limit
        self.per_client = per_client
        self.session_cookie = session_cookie
        self.num_proxies = num_proxies
        self.clients: dict[tuple[str, ...], int] = {}  # requests in progress or waiting
        self.refused_at: dict[str, float] = {}  # when a refusal was last logged, per address
        # One set of slots per event loop: a process serves on one, tests start one per test.
        self._slots: WeakKeyDictionary[asyncio.AbstractEventLoop, _Slots] = WeakKeyDictionary()

    def slots(self) -> _Slots:
        loop = asyncio.get_running_loop()
        slots = self._slots.get(loop)
        if slots is None:
            slots = self._slots[loop] = _Slots(self.limit)
        return slots

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        if not self.per_client:
            return await self.run(scope, receive, send)
        client = self.client(scope)
        held = self.clients.get(client, 0)
        if held >= self.per_client:
            self.log_refusal(scope)
            return await refuse(send, self.per_client)
        self.clients[client] = held + 1
        counted = True

        def release() -> None:
            nonlocal counted
            if counted:
                counted = False
                left = self.clients[client] - 1
                if left:
                    self.clients[client] = left
                else:
                    del self.clients[client]

        async def send_and_release(message: dict) -> None:
            await send(message)
            if message["type"] == "http.response.body" and not message.get("more_body"):
                release()  # answered: the client may send its next request

        try:
            return await self.run(scope, receive, send_and_release)
        finally:
            release()

    async def run(self, scope: dict, receive: Any, send: Any) -> None:
        path = scope["path"]
        if path in EXEMPT_PATHS or path.startswith(EXEMPT_PREFIXES):
            async with ThreadSensitiveContext():  # a thread of its own, for this request only
                return await self.app(scope, receive, send)
        slots = self.slots()
        async with slots.taken:
            thread = slots.idle.pop() if slots.idle else slots.new_thread()
            try:
                async with ThreadSensitiveContext(executor=thread):
                    return await self.app(scope, receive, send)
            finally:
                slots.idle.append(thread)

    def client(self, scope: dict) -> tuple[str, ...]:
        """Who the request counts against: its token as sent, else its session, else its
        address. Only a `Token` header is a credential here, as it is to DRF: any other
        scheme DRF passes over and signs the request in by its session cookie, so a session
        sent beside `Authorization: Basic <anything new>` counted as a new client each time,
        past every limit of its own."""
        authorization = scope_header(scope, b"authorization")
        credential = authorization_parts(authorization) if authorization is not None else None
        if credential is not None and credential[0] == TOKEN_SCHEME:
            return ("credential", credential[1])
        cookies = scope_header(scope, b"cookie")
        if cookies:
            session = parse_cookie(cookies).get(self.session_cookie)
            if session:
                return ("session", session)
        return ("address", self.address(scope))

    def address(self, scope: dict) -> str:
        remote = (scope.get("client") or ("",))[0] or ""
        forwarded = scope_header(scope, b"x-forwarded-for") if self.num_proxies else None
        return client_block(forwarded_for(remote, forwarded, self.num_proxies))

    def log_refusal(self, scope: dict) -> None:
        """One line per address per 10 s: a flood must not flood the log too. The address, not
        the credential, is what the line names (a token in a log is a token given away)."""
        address = self.address(scope)
        now = time.monotonic()
        if now - self.refused_at.get(address, 0.0) > 10:
            if len(self.refused_at) > 10_000:  # bounded: an old entry only spares a line
                self.refused_at.clear()
            self.refused_at[address] = now
            log.warning(
                "refused a request from %s: %d of its requests already in progress",
                address,
                self.per_client,
            )


class _Slots:
    """One event loop's slots, and the threads of those in use before (at most one a slot:
    a thread is taken only with a slot, and given back before it)."""

    __slots__ = ("taken", "idle")

    def __init__(self, limit: int) -> None:
        self.taken = asyncio.Semaphore(limit)
        self.idle: list[ThreadPoolExecutor] = []

    @staticmethod
    def new_thread() -> ThreadPoolExecutor:
        return ThreadPoolExecutor(max_workers=1, thread_name_prefix=SLOT_THREAD_PREFIX)


async def refuse(send: Any, per_client: int) -> None:
    """The API's 429, sent from here: the request never reaches Django."""
    body = json.dumps(
        {
            "code": "rate_limited",
            "detail": (
                f"Too many requests at once: at most {per_client} of yours in progress. "
                f"Wait for an answer before you send more; try again in {RETRY_SECONDS} s."
            ),
        }
    ).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"retry-after", str(RETRY_SECONDS).encode()),
        (b"x-content-type-options", b"nosniff"),
        *RAW_HEADERS,
    ]
    await send({"type": "http.response.start", "status": 429, "headers": headers})
    await send({"type": "http.response.body", "body": body})
