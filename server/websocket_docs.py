"""`GET /api/docs/websocket`: the WebSocket API's reference, docs/websocket.md, as the server
has it. PROTOCOL.md points clients at that file, and the OpenAPI schema (which covers REST
only) names this URL, so a client's author who has only the server can read the socket rules
it keeps beyond the contract: its limits, close codes and error details."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.views.decorators.csrf import csrf_exempt

from server.errors import handler404, json_error

DOC = settings.BASE_DIR / "docs" / "websocket.md"


def _read() -> bytes | None:
    try:
        return DOC.read_bytes()
    except OSError:  # an install without the docs folder: a JSON 404, as any missing page
        return None


TEXT = _read()


@csrf_exempt  # a write is refused as a JSON 405, not by the CSRF check's HTML 403
def websocket_docs(request: HttpRequest) -> HttpResponse:
    if request.method not in ("GET", "HEAD"):
        response = json_error("method_not_allowed", f'Method "{request.method}" not allowed.')
        response["Allow"] = "GET, HEAD"
        return response
    if TEXT is None:
        return handler404(request, None)
    response = HttpResponse(TEXT, content_type="text/markdown; charset=utf-8")
    response["X-Content-Type-Options"] = "nosniff"
    return response
