"""Django's HTTP handling as an ASGI app that hands each request to its thread once.

Django's own ASGI handler runs the middleware in async mode wherever it can, so a request
crosses between the event loop and its thread over and over: into the first sync-only
middleware (ours, WhiteNoise's), back out for the async-capable ones, in again for the view
(every DRF view is sync), and out and in for the request's signals and the response's close.
Each crossing is a future handed to a thread and a wake-up back; in-process on this project's
hosts they made most of a short request's cost: 2.2-3.4 ms of CPU against 0.7-1.2 ms through
Django's WSGI handler (the same middleware and views, in sync mode) called once on the thread.

So here the request's body is read on the event loop, then one call on the request's thread
runs all of Django (`WSGIHandler`: middleware, view, `request_started` and `request_finished`,
the response's `close()`) and reads the response's body; the answer is sent from the loop.
Every view and middleware of the project is sync, and the ones that reach the event loop
(`async_to_sync`: a REST move's fan-out, the health check's channel layer probe) reach the
server's loop from that thread, as they did. Nothing is streamed: the responses are JSON and
static files of tens of kilobytes, which Django's ASGI handler also sent whole (it streams only
a `StreamingHttpResponse`, which no view returns). A client that hangs up no longer cancels its
view's coroutine, which could not stop the view's thread anyway.

The thread is the request's slot's (server.http_limit), or one of its own for the requests that
take no slot; `ThreadedWSGIHandler` names the requests it ran, for server.request_connections.
"""

from __future__ import annotations

import sys
from tempfile import SpooledTemporaryFile
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.core.handlers.wsgi import WSGIHandler


class ThreadedWSGIHandler(WSGIHandler):
    """Django's WSGI handler, as HttpApp runs it: its class is the sender of the request's
    signals (server.request_connections)."""


class HttpApp:
    """ASGI (HTTP only): the body read here, Django run in one call on the request's thread."""

    def __init__(self) -> None:
        self.handler = ThreadedWSGIHandler()

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        body = SpooledTemporaryFile(max_size=settings.FILE_UPLOAD_MAX_MEMORY_SIZE)  # noqa: SIM115
        try:
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    return  # gone before its request was whole: nothing to answer
                body.write(message.get("body", b""))
                if not message.get("more_body"):
                    break
            body.seek(0)
            status, headers, content = await sync_to_async(self.respond)(scope, body)
        finally:
            body.close()
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": content})

    def respond(self, scope: dict, body: Any) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
        """Runs on the request's thread: Django's whole handling of the request, and its
        response read and closed (which sends `request_finished`)."""
        started: list = []

        def start_response(status: str, headers: list, exc_info: Any = None) -> None:
            started[:] = [status, headers]

        response = self.handler(environ(scope, body), start_response)
        try:
            content = b"".join(response)
        finally:
            close = getattr(response, "close", None)
            if close is not None:
                close()
        status, headers = started
        encoded = [
            (name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in headers
        ]
        return int(status.split(" ", 1)[0]), encoded, content


def environ(scope: dict, body: Any) -> dict[str, Any]:
    """The WSGI environ (PEP 3333) of an ASGI HTTP scope; strings hold the bytes as latin-1,
    as WSGI has them. Headers sent more than once are joined with commas (cookies with `; `)."""
    root = scope.get("root_path", "")
    path = scope["path"]
    if root and path.startswith(root):
        path = path[len(root) :]
    server = scope.get("server") or ("localhost", 80)
    client = scope.get("client")
    env: dict[str, Any] = {
        "REQUEST_METHOD": scope["method"],
        "SCRIPT_NAME": root.encode().decode("latin-1"),
        "PATH_INFO": path.encode().decode("latin-1"),
        "QUERY_STRING": scope.get("query_string", b"").decode("latin-1"),
        "SERVER_NAME": str(server[0]),
        "SERVER_PORT": str(server[1] or 80),
        "SERVER_PROTOCOL": f"HTTP/{scope.get('http_version', '1.1')}",
        "wsgi.version": (1, 0),
        "wsgi.url_scheme": scope.get("scheme", "http"),
        "wsgi.input": body,
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": True,
        "wsgi.multiprocess": True,
        "wsgi.run_once": False,
    }
    if client:
        env["REMOTE_ADDR"] = str(client[0])
        env["REMOTE_PORT"] = str(client[1])
    for raw_name, raw_value in scope.get("headers", ()):
        name = raw_name.decode("latin-1").upper().replace("-", "_")
        value = raw_value.decode("latin-1")
        key = name if name in ("CONTENT_LENGTH", "CONTENT_TYPE") else f"HTTP_{name}"
        if key in env:
            value = env[key] + ("; " if key == "HTTP_COOKIE" else ",") + value
        env[key] = value
    return env
