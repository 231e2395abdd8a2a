"""server.http_limit: HTTP requests past the limit wait for a slot instead of each taking a
thread and a database connection at once."""

from __future__ import annotations

import asyncio
import json
import threading

import pytest
from asgiref.sync import sync_to_async
from channels.testing import HttpCommunicator
from django.conf import settings

from server.asgi import application
from server.client_address import scope_header
from server.http_limit import SLOT_THREAD_PREFIX, ConcurrencyLimit


class SlowApp:
    """An ASGI app whose requests stay in progress until `release` is set."""

    def __init__(self) -> None:
        self.running = 0
        self.most = 0
        self.started: list[str] = []
        self.release = asyncio.Event()

    async def __call__(self, scope: dict, receive, send) -> None:  # noqa: ANN001
        self.running += 1
        self.most = max(self.most, self.running)
        self.started.append(scope["path"])
        try:
            await self.release.wait()
        finally:
            self.running -= 1


def _call(app: ConcurrencyLimit, path: str, kind: str = "http") -> asyncio.Task:
    return asyncio.ensure_future(app({"type": kind, "path": path}, None, None))


def _scope(
    path: str = "/api/me", address: str = "203.0.113.7", **headers: str
) -> dict[str, object]:
    raw = [(name.replace("_", "-").encode(), value.encode()) for name, value in headers.items()]
    return {"type": "http", "path": path, "client": (address, 50000), "headers": raw}


class Answers:
    """An ASGI `send` that keeps what it was sent."""

    def __init__(self) -> None:
        self.messages: list[dict] = []

    async def __call__(self, message: dict) -> None:
        self.messages.append(message)

    @property
    def status(self) -> int | None:
        return self.messages[0]["status"] if self.messages else None

    @property
    def headers(self) -> dict[bytes, bytes]:
        return dict(self.messages[0]["headers"])

    @property
    def body(self) -> dict:
        return json.loads(b"".join(m.get("body", b"") for m in self.messages[1:]))


def _send(app: ConcurrencyLimit, scope: dict) -> tuple[asyncio.Task, Answers]:
    answers = Answers()
    return asyncio.ensure_future(app(scope, None, answers)), answers


async def _settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def test_requests_past_the_limit_wait_for_a_slot_and_then_all_run():
    inner = SlowApp()
    limited = ConcurrencyLimit(inner, limit=2)
    tasks = [_call(limited, f"/api/games/{i}") for i in range(5)]
    await _settle()
    assert inner.started == ["/api/games/0", "/api/games/1"]  # the others wait, in order
    inner.release.set()
    await asyncio.wait_for(asyncio.gather(*tasks), 5)
    assert len(inner.started) == 5 and inner.most == 2


async def test_the_health_check_and_static_files_never_wait():
    inner = SlowApp()
    limited = ConcurrencyLimit(inner, limit=1)
    busy = _call(limited, "/api/daily")
    waiting = _call(limited, "/api/daily")
    health = _call(limited, "/api/health")
    static = _call(limited, "/static/app.js")
    await _settle()
    assert inner.started == ["/api/daily", "/api/health", "/static/app.js"]
    inner.release.set()
    await asyncio.wait_for(asyncio.gather(busy, waiting, health, static), 5)


async def test_websockets_are_not_counted():
    inner = SlowApp()
    limited = ConcurrencyLimit(inner, limit=1)
    tasks = [_call(limited, "/api/daily"), _call(limited, "/ws/games/1", "websocket")]
    await _settle()
    assert inner.started == ["/api/daily", "/ws/games/1"]
    inner.release.set()
    await asyncio.wait_for(asyncio.gather(*tasks), 5)


async def test_a_request_that_fails_gives_its_slot_back():
    async def broken(scope, receive, send) -> None:  # noqa: ANN001
        raise RuntimeError("boom")

    limited = ConcurrencyLimit(broken, limit=1)
    for _ in range(3):  # a leaked slot would leave the later calls waiting forever
        with pytest.raises(RuntimeError):
            await asyncio.wait_for(limited({"type": "http", "path": "/api/me"}, None, None), 5)


async def test_a_clients_request_past_its_share_is_refused_at_once_and_others_still_wait():
    inner = SlowApp()
    limited = ConcurrencyLimit(inner, limit=2, per_client=3)
    flood = [_send(limited, _scope(authorization="Token flood")) for _ in range(5)]
    other = _send(limited, _scope(authorization="Token other"))
    await _settle()
    refused = [answers for task, answers in flood if task.done()]
    assert len(refused) == 2 and inner.running == 2  # 3 held (2 running, 1 waiting), 2 refused
    for answers in refused:
        assert answers.status == 429
        assert answers.headers[b"retry-after"] == b"1"
        assert answers.headers[b"content-type"] == b"application/json"
        # A page on another site reads the refusal, not an opaque network error (server.cors).
        assert answers.headers[b"access-control-allow-origin"] == b"*"
        assert b"Retry-After" in answers.headers[b"access-control-expose-headers"]
        assert answers.body["code"] == "rate_limited"
        assert "at most 3 of yours" in answers.body["detail"]
    assert not other[0].done()  # another client waits for a slot, as before: never refused
    inner.release.set()
    await asyncio.wait_for(asyncio.gather(other[0], *(task for task, _ in flood)), 5)
    assert len(inner.started) == 4 and other[1].messages == []  # SlowApp answers nothing
    assert limited.clients == {}  # every count given back


async def test_a_client_that_waits_for_each_answer_is_never_refused():
    async def quick(scope, receive, send) -> None:  # noqa: ANN001
        await send({"type": "http.response.start", "status": 200, "headers": []})

    limited = ConcurrencyLimit(quick, limit=1, per_client=1)
    for _ in range(50):
        task, answers = _send(limited, _scope(authorization="Token steady"))
        await asyncio.wait_for(task, 5)
        assert answers.status == 200


async def test_a_request_stops_counting_once_its_answer_is_sent():
    """Django goes on after the answer (it closes the request's database connection on a
    thread): a client that waited for its answer and sent the next was refused meanwhile."""
    finish = asyncio.Event()

    async def answers_then_cleans_up(scope, receive, send) -> None:  # noqa: ANN001
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}", "more_body": True})
        await send({"type": "http.response.body", "body": b""})
        await finish.wait()  # still running, answer sent

    limited = ConcurrencyLimit(answers_then_cleans_up, limit=4, per_client=1)
    first = _send(limited, _scope(authorization="Token steady"))
    await _settle()
    second = _send(limited, _scope(authorization="Token steady"))
    await _settle()
    assert second[1].status == 200  # not 429: the first one's answer was in
    finish.set()
    await asyncio.wait_for(asyncio.gather(first[0], second[0]), 5)
    assert limited.clients == {}


async def test_the_health_check_and_static_files_count_against_their_client():
    """They never wait for a slot, but a flood of them is a flood: refused past the share
    (the health check's path exactly: `/api/healthz` is any other path)."""
    inner = SlowApp()
    limited = ConcurrencyLimit(inner, limit=1, per_client=2)
    tasks = [
        _send(limited, _scope(path)) for path in ("/api/health", "/static/a.js", "/api/health")
    ]
    await _settle()
    assert inner.started == ["/api/health", "/static/a.js"] and tasks[2][1].status == 429
    other = _send(limited, _scope("/api/healthz", address="198.51.100.9"))
    another = _send(limited, _scope("/api/healthz", address="198.51.100.10"))
    await _settle()
    assert inner.started[2:] == ["/api/healthz"]  # the one slot: the next waits for it
    inner.release.set()
    await asyncio.wait_for(asyncio.gather(*(t for t, _ in (*tasks, other, another))), 5)


async def test_a_refused_or_failed_request_gives_its_count_back():
    async def broken(scope, receive, send) -> None:  # noqa: ANN001
        raise RuntimeError("boom")

    limited = ConcurrencyLimit(broken, limit=1, per_client=1)
    for _ in range(3):  # a leaked count would refuse every later request of the client
        with pytest.raises(RuntimeError):
            await asyncio.wait_for(limited(_scope(authorization="Token x"), None, Answers()), 5)
    assert limited.clients == {}


@pytest.mark.parametrize(
    ("first", "second", "same"),
    [
        # A credential is the client, from wherever it comes.
        (
            _scope(authorization="Token a"),
            _scope(address="198.51.100.1", authorization="Token a"),
            True,
        ),
        (_scope(authorization="Token a"), _scope(authorization="Token b"), False),
        # The session cookie when there is no Authorization header.
        (
            _scope(cookie="sessionid=s1; theme=dark"),
            _scope(address="198.51.100.1", cookie="sessionid=s1"),
            True,
        ),
        (_scope(cookie="sessionid=s1"), _scope(cookie="sessionid=s2"), False),
        # No credential: the address; an IPv6 client as its /64; IPv4 on a dual-stack socket.
        (_scope(cookie="theme=dark"), _scope(), True),
        (_scope(address="2001:db8::1"), _scope(address="2001:db8::ffff:1"), True),
        (_scope(address="2001:db8::1"), _scope(address="2001:db8:0:1::1"), False),
        (_scope(address="::ffff:203.0.113.7"), _scope(), True),
        # A token as DRF reads it: its scheme in any case, any spaces between.
        (_scope(authorization="Token a"), _scope(authorization="token   a"), True),
        (_scope(authorization="Token a"), _scope(authorization="TOKEN\ta"), True),
        # A header DRF refuses (one part, three parts) is no credential: the address counts.
        (_scope(authorization="Token"), _scope(), True),
        # Another scheme DRF passes over, signing the request in by its session: the session
        # counts, however the header changes (it was a new client each time).
        (
            _scope(cookie="sessionid=s1", authorization="Basic x1"),
            _scope(cookie="sessionid=s1", authorization="Bearer y2"),
            True,
        ),
        (_scope(authorization="Basic x1"), _scope(authorization="Basic x2"), True),
        (_scope(authorization="Token a b"), _scope(authorization="Token c d"), True),
        # X-Forwarded-For is not trusted with no proxy in front.
        (_scope(x_forwarded_for="192.0.2.1"), _scope(x_forwarded_for="192.0.2.2"), True),
    ],
)
def test_who_counts_as_one_client(first, second, same):  # noqa: ANN001
    limited = ConcurrencyLimit(SlowApp(), limit=1, per_client=1)
    assert (limited.client(first) == limited.client(second)) is same


def test_a_headers_lines_are_read_joined_as_django_reads_them():
    """Two `Authorization` lines make one header DRF refuses (no credential: the address
    counts); `X-Forwarded-For` lines make one list of hops, the last the nearest proxy's."""
    limited = ConcurrencyLimit(SlowApp(), limit=1, per_client=1, num_proxies=1)
    scope = _scope(address="10.0.0.2")
    scope["headers"] = [
        (b"authorization", b"Token a"),
        (b"authorization", b"Token a"),
        (b"x-forwarded-for", b"192.0.2.1"),
        (b"x-forwarded-for", b"192.0.2.9"),
    ]
    assert limited.client(scope) == ("address", "192.0.2.9")
    assert scope_header(scope, b"x-forwarded-for") == "192.0.2.1,192.0.2.9"
    assert scope_header(scope, b"cookie") is None


def test_behind_a_trusted_proxy_the_address_it_saw_is_the_client():
    limited = ConcurrencyLimit(SlowApp(), limit=1, per_client=1, num_proxies=1)
    via_proxy = _scope(address="10.0.0.2", x_forwarded_for="6.6.6.6, 192.0.2.1")
    assert limited.client(via_proxy) == ("address", "192.0.2.1")  # what the client wrote: ignored
    assert limited.client(_scope(address="10.0.0.2")) == ("address", "10.0.0.2")


@pytest.mark.django_db(transaction=True)
async def test_the_server_limits_its_http_requests():
    http = application.application_mapping["http"]
    assert isinstance(http, ConcurrencyLimit) and http.limit == settings.HTTP_CONCURRENCY
    assert http.per_client == settings.HTTP_REQUESTS_PER_CLIENT == 16
    assert http.session_cookie == settings.SESSION_COOKIE_NAME
    communicator = HttpCommunicator(
        application, "GET", "/api/variants", headers=[(b"host", b"localhost")]
    )
    response = await communicator.get_response()
    assert response["status"] in (200, 401)  # answered through the limit


class ThreadRecorder(SlowApp):
    """A SlowApp that first runs a sync step, as Django runs a view (thread-sensitive), and
    notes the thread it ran on."""

    def __init__(self) -> None:
        super().__init__()
        self.threads: list[threading.Thread] = []

    async def __call__(self, scope: dict, receive, send) -> None:  # noqa: ANN001
        await sync_to_async(lambda: self.threads.append(threading.current_thread()))()
        await super().__call__(scope, receive, send)


async def test_each_slot_runs_its_requests_on_one_thread_of_its_own():
    """A thread made for each request (and its database connection with it) cost more than
    most requests; a slot's thread runs its requests one after another instead. Six requests
    at once on two slots run on two threads, and six more on the same two."""
    inner = ThreadRecorder()
    limited = ConcurrencyLimit(inner, limit=2)
    first = [_call(limited, f"/api/games/{i}") for i in range(6)]
    await _settle()
    inner.release.set()
    await asyncio.wait_for(asyncio.gather(*first), 5)
    inner.release.clear()
    second = [_call(limited, f"/api/games/{i}") for i in range(6)]
    await _settle()
    inner.release.set()
    await asyncio.wait_for(asyncio.gather(*second), 5)
    assert len(inner.threads) == 12
    threads = set(inner.threads)
    assert len(threads) == 2 and set(inner.threads[:2]) == threads
    assert all(t.name.startswith(SLOT_THREAD_PREFIX) for t in threads)
    assert threading.main_thread() not in threads


async def test_requests_that_take_no_slot_take_no_slot_thread():
    inner = ThreadRecorder()
    inner.release.set()
    limited = ConcurrencyLimit(inner, limit=2)
    await asyncio.wait_for(_call(limited, "/api/health"), 5)
    assert not inner.threads[0].name.startswith(SLOT_THREAD_PREFIX)
