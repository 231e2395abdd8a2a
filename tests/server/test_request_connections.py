"""server.request_connections: an HTTP request's connection is closed when it ends, under ASGI,
unless it ran on a slot's thread, which keeps it for the slot's next request."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from channels.testing import HttpCommunicator
from django.core.handlers.wsgi import WSGIHandler
from django.db import connection
from django.db.backends.signals import connection_created

from server.asgi import application
from server.http_limit import SLOT_THREAD_PREFIX
from server.request_connections import close_request_thread_connections


@contextmanager
def connections_opened() -> Iterator[list]:
    """The database connections opened meanwhile, each with the thread that opened it."""
    opened: list = []

    def spy(sender, connection, **kwargs):  # noqa: ANN001, ANN003, ANN202
        opened.append((threading.current_thread(), connection))

    connection_created.connect(spy)
    try:
        yield opened
    finally:
        connection_created.disconnect(spy)


@pytest.mark.django_db(transaction=True)
async def test_an_asgi_request_closes_the_connection_its_thread_opened():
    communicator = HttpCommunicator(
        application, "GET", "/api/health", headers=[(b"host", b"localhost")]
    )
    with connections_opened() as opened:
        response = await communicator.get_response()
        await communicator.wait()  # the response is out; the handler is still closing it
    assert response["status"] == 200
    request_threads = [(t, c) for t, c in opened if t is not threading.main_thread()]
    assert request_threads, "the request opened no connection of its own"
    assert all(c.connection is None for _, c in request_threads)  # closed, not left for the GC


@pytest.mark.django_db(transaction=True)
def test_other_handlers_keep_their_connections():
    """Management commands, tests and WSGI keep Django's own policy (CONN_MAX_AGE)."""
    connection.ensure_connection()
    close_request_thread_connections(sender=WSGIHandler)
    assert connection.connection is not None


@pytest.mark.django_db(transaction=True)
async def test_a_request_that_holds_a_slot_leaves_its_connection_to_the_slots_next(monkeypatch):  # noqa: ANN001
    """A request that holds one of server.http_limit's slots runs on the slot's thread, which
    lives on: its connection stays open for the slot's next request (CONN_MAX_AGE allowing),
    rather than a connection opened and closed for each one."""
    from django.db import connections

    monkeypatch.setitem(connections.settings["default"], "CONN_MAX_AGE", 60)
    try:
        with connections_opened() as opened:
            for _ in range(3):  # a token looked up, and refused: each request reads the database
                communicator = HttpCommunicator(
                    application,
                    "GET",
                    "/api/me",
                    headers=[(b"host", b"localhost"), (b"authorization", b"Token nope")],
                )
                response = await communicator.get_response()
                await communicator.wait()
                assert response["status"] == 401
    finally:
        slots = application.application_mapping["http"].slots()
        for thread in slots.idle:  # the test database must not be held open after the test
            await asyncio.wrap_future(thread.submit(connections.close_all))
    assert len(opened) == 1, opened
    thread, _ = opened[0]
    assert thread.name.startswith(SLOT_THREAD_PREFIX)
