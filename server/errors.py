"""One error shape for the whole API: `{"code": ..., "detail": ...}`.

Services raise `AppError` with a code; the REST exception handler and the WebSocket
consumers both turn it into their wire form, so a client sees the same codes on both.
"""

from __future__ import annotations

import logging
from typing import Any

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.db import InterfaceError, OperationalError
from django.http import Http404, JsonResponse
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler

from server.stores import log_away

log = logging.getLogger(__name__)

# What the database's driver raises while it cannot be reached (PostgreSQL restarting, say).
DATABASE_AWAY = (OperationalError, InterfaceError)


def log_failure(
    logger: logging.Logger,
    exc: BaseException,
    away: str,
    message: str,
    *args: object,
    level: int = logging.ERROR,
    stores: tuple[type[BaseException], ...] = DATABASE_AWAY,
) -> None:
    """Log a failure its caller answers for itself: a store away (by default the database) as
    a line a minute under `away` (server.stores.log_away), not a traceback a message; anything
    else, which a store being away does not explain, with its traceback."""
    if isinstance(exc, stores):
        log_away(away, exc, logger)
    else:
        logger.log(level, message, *args, exc_info=exc)


# What a request hears when the database could not be reached (PostgreSQL restarting, say): a
# 503 to retry, as the socket's `unavailable`, not a 500. A write may have committed before the
# connection was lost, so the client is told to read the game before it plays again.
DATABASE_GONE = (
    "The database cannot be reached just now: try again in a moment. A write you sent may have "
    "been saved all the same: read the game before you send it again."
)

# The HTTP status each domain error code maps to.
CODE_STATUS: dict[str, int] = {
    "bad_request": 400,
    "bad_message": 400,
    "bad_json": 400,
    "illegal_move": 400,
    "invalid": 400,
    "bad_deal": 400,
    "bad_date": 400,
    "unknown_variant": 404,
    "not_authenticated": 401,
    "authentication_failed": 401,
    "forbidden": 403,
    "not_found": 404,
    "method_not_allowed": 405,
    "not_acceptable": 406,
    "stale_version": 409,
    "game_over": 409,
    "conflict": 409,
    "username_taken": 409,
    "weak_password": 400,
    "length_required": 411,
    "too_large": 413,
    "unsupported_media_type": 415,
    "rate_limited": 429,
    "unavailable": 503,
}


class AppError(Exception):
    """A domain error with a stable code, safe to show to the client."""

    def __init__(
        self,
        code: str,
        detail: str,
        *,
        status: int | None = None,
        retry_after: int | None = None,
        **extra: Any,
    ):
        super().__init__(detail)
        self.code = code
        self.detail = detail
        self.status = status or CODE_STATUS.get(code, 400)
        self.retry_after = retry_after  # seconds, sent as Retry-After over HTTP
        self.extra = extra

    def as_dict(self) -> dict[str, Any]:
        return {"code": self.code, "detail": self.detail, **self.extra}


_DRF_CODES: list[tuple[type[exceptions.APIException], str]] = [
    (exceptions.NotAuthenticated, "not_authenticated"),
    (exceptions.AuthenticationFailed, "authentication_failed"),
    (exceptions.PermissionDenied, "forbidden"),
    (exceptions.NotFound, "not_found"),
    (exceptions.MethodNotAllowed, "method_not_allowed"),
    (exceptions.ParseError, "bad_json"),
    (exceptions.UnsupportedMediaType, "unsupported_media_type"),
    (exceptions.NotAcceptable, "not_acceptable"),
    (exceptions.Throttled, "rate_limited"),
    (exceptions.ValidationError, "invalid"),
]


def _flatten(detail: Any) -> str:
    """A one-line human message out of DRF's nested error detail."""
    if isinstance(detail, dict):
        parts = []
        for key, value in detail.items():
            text = _flatten(value)
            parts.append(text if key == "non_field_errors" else f"{key}: {text}")
        return "; ".join(parts)
    if isinstance(detail, list):
        return " ".join(_flatten(item) for item in detail)
    return str(detail)


def api_exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """DRF exception handler producing `{code, detail}` for every error."""
    if isinstance(exc, AppError):
        headers = {"Retry-After": str(exc.retry_after)} if exc.retry_after else None
        return Response(exc.as_dict(), status=exc.status, headers=headers)
    if isinstance(exc, DATABASE_AWAY):
        log_away("REST requests (answered 503)", exc, log)
        return Response(
            {"code": "unavailable", "detail": DATABASE_GONE},
            status=503,
            headers={"Retry-After": "1"},
        )
    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied()
    response = exception_handler(exc, context)
    if response is None:
        return None
    code = next((c for cls, c in _DRF_CODES if isinstance(exc, cls)), "error")
    body: dict[str, Any] = {"code": code, "detail": _flatten(getattr(exc, "detail", str(exc)))}
    if isinstance(exc, exceptions.Throttled):
        # Said for a player (the browser shows it as it is), not as DRF's "Request was
        # throttled. Expected available in 57 seconds."; the Retry-After header says the same
        # (DRF has rounded the wait up to whole seconds).
        body["detail"] = (
            f"Too many requests: try again in {exc.wait} s."
            if exc.wait
            else "Too many requests: try again later."
        )
    if isinstance(exc, exceptions.ValidationError) and isinstance(exc.detail, dict):
        body["fields"] = {k: _flatten(v) for k, v in exc.detail.items()}
    response.data = body
    return response


def json_error(code: str, detail: str, status_code: int | None = None) -> JsonResponse:
    return JsonResponse(
        {"code": code, "detail": detail}, status=status_code or CODE_STATUS.get(code, 400)
    )


def handler400(request, exception=None):  # noqa: ANN001 - Django's handler signature
    """Refused before any view (a Host not in ALLOWED_HOSTS, a body Django cannot read)."""
    from django.core.exceptions import DisallowedHost

    detail = "Bad request."
    if isinstance(exception, DisallowedHost):
        detail = "This server does not answer for that Host (ALLOWED_HOSTS)."
    return json_error("bad_request", detail, status.HTTP_400_BAD_REQUEST)


class WithoutTraceback(logging.Filter):
    """Keeps a record's message and drops its traceback: a request for another Host is a
    client's mistake or a scan, one line in the log, not a page of Django's frames."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.exc_info = None
        record.exc_text = None
        return True


def handler403(request, exception=None):  # noqa: ANN001
    return json_error("forbidden", "Forbidden.", status.HTTP_403_FORBIDDEN)


def handler404(request, exception=None):  # noqa: ANN001 - Django's handler signature
    return json_error("not_found", "No such page.", status.HTTP_404_NOT_FOUND)


def handler500(request):  # noqa: ANN001
    return json_error("server_error", "Internal server error.", 500)
