"""`GET /api/docs/websocket`: the WebSocket API's reference, docs/websocket.md, as the server
has it. PROTOCOL.md points clients at that file, and the OpenAPI schema (which covers REST
only) names this URL, so a client's author who has only the server can read the socket rules
it keeps beyond the contract: its limits, close codes and error details."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpResponse
from drf_spectacular.utils import extend_schema
from rest_framework.permissions import AllowAny
from rest_framework.request import Request

from server.api_view import ApiView
from server.errors import AppError

DOC = settings.BASE_DIR / "docs" / "websocket.md"


def _read() -> bytes | None:
    try:
        return DOC.read_bytes()
    except OSError:  # an install without the docs folder: a JSON 404, as any missing page
        return None


TEXT = _read()


class WebSocketDocsView(ApiView):
    """The file as it is, in markdown; any other method is a JSON 405 as on every API path."""

    permission_classes = [AllowAny]
    authentication_classes: list = []
    http_method_names = ["get", "head"]

    @extend_schema(exclude=True)
    def get(self, request: Request) -> HttpResponse:
        if TEXT is None:
            raise AppError("not_found", "No such page.")
        return HttpResponse(TEXT, content_type="text/markdown; charset=utf-8")
