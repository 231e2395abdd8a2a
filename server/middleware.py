"""HTTP middleware that protects the API before any view code runs."""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.conf import settings
from django.core.exceptions import DisallowedHost
from django.http import HttpRequest, HttpResponse

from server.body_rules import body_refusal
from server.errors import handler400, json_error
from web.views import ADMIN_POLICY  # the pages' policies live with the pages

security_log = logging.getLogger("django.security.DisallowedHost")


class ResponseHeadersMiddleware:
    """Headers for whole families of answers, set where a view set none of its own.

    Under /api/, `Cache-Control: no-store`: its answers are live, most are one player's (a
    token, a game), and none said so, so a cache on the way, or the browser's, was free to keep
    them. Under /admin/, the admin's Content-Security-Policy: every other page had one.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        path = request.path
        if path.startswith("/api/"):
            if "Cache-Control" not in response:
                response["Cache-Control"] = "no-store"
        elif path.startswith("/admin/") and "Content-Security-Policy" not in response:
            response["Content-Security-Policy"] = ADMIN_POLICY
        return response


class KnownHostMiddleware:
    """Answer a request for a Host not in ALLOWED_HOSTS with the API's JSON 400, first of all.

    Django raises DisallowedHost where a middleware first asks for the host, and turns it into
    `handler400`'s answer only with DEBUG off: with DEBUG on (`make run`'s default) the client
    got Django's HTML debug page, with the settings and a stack trace in it. Asked here, the
    answer is the same in both modes, and logged as Django logs it.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        try:
            request.get_host()
        except DisallowedHost as exc:
            security_log.error("%s", exc)
            return handler400(request, exc)
        return self.get_response(request)


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
