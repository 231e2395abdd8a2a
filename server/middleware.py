"""HTTP middleware that protects the API before any view code runs."""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse

from server.body_rules import body_refusal
from server.errors import json_error


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
