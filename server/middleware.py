"""HTTP middleware that protects the API before any view code runs."""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse

from server.errors import json_error


def body_refusal(length: int | None, limit: int) -> tuple[str, str, int] | None:
    """Why a body of `length` bytes (None: chunked, its size unknown) is refused, as
    (code, detail, status), or None if it is not: the one rule this middleware and daphne's
    early refusal (server.daphne_server.ProjectWebRequest) both apply."""
    if length is None:
        return "length_required", "Send the body with a Content-Length, not chunked.", 411
    if length > limit:
        return "too_large", f"Request body is {length} bytes; the limit is {limit}.", 413
    return None


class BodySizeLimitMiddleware:
    """Refuse oversized request bodies with 413 before they are parsed.

    DRF reads the request stream itself, bypassing DATA_UPLOAD_MAX_MEMORY_SIZE, so without
    this a client could make the JSON parser chew on megabytes. Under daphne
    (server.daphne_server.ProjectWebRequest) a body over the limit, or chunked, on any path, is
    refused from its headers before it gets here; this stays for other servers (the tests'
    client, an ASGI server of someone else's).
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response
        self.limit = settings.MAX_REQUEST_BYTES

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.path.startswith("/api/"):
            try:
                length = int(request.META.get("CONTENT_LENGTH") or 0)
            except ValueError:
                return json_error("bad_request", "Invalid Content-Length header.")
            # A chunked body: Django reads a request without Content-Length as empty, so the
            # body would be ignored without a word (and never size-checked).
            chunked = not length and request.META.get("HTTP_TRANSFER_ENCODING")
            refusal = body_refusal(None if chunked else length, self.limit)
            if refusal is not None:
                return json_error(*refusal)
        return self.get_response(request)
