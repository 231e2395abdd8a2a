"""server.http_limit: HTTP requests past the limit wait for a slot instead of each taking a
thread and a database connection at once."""

from __future__ import annotations

import asyncio

import pytest
from channels.testing import HttpCommunicator
from django.conf import settings

from server.asgi import application
from server.http_limit import ConcurrencyLimit


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


@pytest.mark.django_db(transaction=True)
async def test_the_server_limits_its_http_requests():
    http = application.application_mapping["http"]
    assert isinstance(http, ConcurrencyLimit) and http.limit == settings.HTTP_CONCURRENCY
    communicator = HttpCommunicator(
        application, "GET", "/api/variants", headers=[(b"host", b"localhost")]
    )
    response = await communicator.get_response()
    assert response["status"] in (200, 401)  # answered through the limit
