"""server.http_app: Django run in one call on the request's thread, behind an ASGI face."""

from __future__ import annotations

import asyncio
import io
import json
import threading

import pytest
from django.core.signals import request_finished, request_started

from server.http_app import HttpApp, ThreadedWSGIHandler, environ


def _scope(path: str = "/api/variants", **extra: object) -> dict:
    scope = {
        "type": "http",
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": path,
        "query_string": b"",
        "root_path": "",
        "headers": [(b"host", b"localhost")],
        "client": ("198.51.100.4", 50123),
        "server": ("localhost", 8000),
    }
    scope.update(extra)
    return scope


async def _call(scope: dict, messages: list[dict]) -> list[dict]:
    inbox: asyncio.Queue = asyncio.Queue()
    for message in messages:
        inbox.put_nowait(message)
    sent: list[dict] = []

    async def send(message: dict) -> None:
        sent.append(message)

    await HttpApp()(scope, inbox.get, send)
    return sent


def test_the_environ_has_what_wsgi_asks_and_the_headers_as_django_reads_them():
    scope = _scope(
        "/prefix/api/me",
        root_path="/prefix",
        query_string=b"q=%E2%9C%93",
        headers=[
            (b"host", b"localhost"),
            (b"content-type", b"application/json"),
            (b"content-length", b"2"),
            (b"cookie", b"a=1"),
            (b"cookie", b"b=2"),
            (b"accept", b"text/html"),
            (b"accept", b"application/json"),
            (b"x-name", "caf\u00e9".encode()),
        ],
    )
    env = environ(scope, io.BytesIO(b"{}"))
    assert env["SCRIPT_NAME"] == "/prefix" and env["PATH_INFO"] == "/api/me"
    assert env["QUERY_STRING"] == "q=%E2%9C%93"
    assert env["CONTENT_TYPE"] == "application/json" and env["CONTENT_LENGTH"] == "2"
    assert "HTTP_CONTENT_TYPE" not in env
    assert env["HTTP_COOKIE"] == "a=1; b=2"
    assert env["HTTP_ACCEPT"] == "text/html,application/json"
    assert env["HTTP_X_NAME"] == "caf\u00e9".encode().decode("latin-1")  # WSGI's bytes-as-latin-1
    assert env["REMOTE_ADDR"] == "198.51.100.4" and env["SERVER_PORT"] == "8000"
    assert env["wsgi.url_scheme"] == "http" and env["wsgi.input"].read() == b"{}"


@pytest.mark.django_db(transaction=True)
async def test_a_request_is_answered_whole_from_one_call_on_one_thread():
    """Django's middleware, view and signals all run on one thread, which is not the event
    loop's, and the answer goes out as two messages: the start and the whole body."""
    threads: list[tuple[str, threading.Thread]] = []

    def started(sender: type, **kwargs: object) -> None:
        threads.append(("started", threading.current_thread()))

    def finished(sender: type, **kwargs: object) -> None:
        threads.append((sender.__name__, threading.current_thread()))

    request_started.connect(started)
    request_finished.connect(finished)
    try:
        sent = await _call(_scope(), [{"type": "http.request", "body": b""}])
    finally:
        request_started.disconnect(started)
        request_finished.disconnect(finished)
    assert [m["type"] for m in sent] == ["http.response.start", "http.response.body"]
    assert sent[0]["status"] == 200 and (b"content-type", b"application/json") in sent[0]["headers"]
    assert [v["id"] for v in json.loads(sent[1]["body"])][:2] == ["portuguese", "spanish"]
    assert [name for name, _ in threads] == ["started", ThreadedWSGIHandler.__name__]
    assert len({t for _, t in threads}) == 1 and threads[0][1] is not threading.main_thread()


@pytest.mark.django_db(transaction=True)
async def test_a_body_in_pieces_is_read_whole_and_a_client_gone_first_gets_nothing():
    body = json.dumps({"username": "nobody-here", "password": "wrong-password-1"}).encode()
    scope = _scope(
        "/api/auth/token",
        method="POST",
        headers=[
            (b"host", b"localhost"),
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
        ],
    )
    pieces = [
        {"type": "http.request", "body": body[:7], "more_body": True},
        {"type": "http.request", "body": body[7:], "more_body": False},
    ]
    sent = await _call(scope, pieces)
    assert sent[0]["status"] == 401, sent  # read whole: a wrong password, not a parse error
    gone = await _call(scope, [pieces[0], {"type": "http.disconnect"}])
    assert gone == []
