"""GET /api/health: is the database reachable, is the channel layer reachable."""

from __future__ import annotations

import asyncio
import logging
import time
import uuid

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import connection
from drf_spectacular.utils import OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response

from server.api_view import ApiView
from server.stores import log_away

log = logging.getLogger(__name__)


# How long the channel layer's round trip may take, all of it: a Redis that hung held the check
# for its socket timeout (15 s), past an orchestrator's probe.
LAYER_PROBE_SECONDS = 2.0


def failure(exc: BaseException, what: str) -> str:
    """What a failed check says: the kind of error only, since the check is public and a
    driver's message can name hosts, ports and users; its first line goes to the log, a line
    a minute while the store is away (a probe every few seconds logged two tracebacks each)."""
    log_away(f"health: the {what} check", exc, log)
    return type(exc).__name__


def check_database() -> dict:
    started = time.perf_counter()
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception as exc:  # noqa: BLE001 - health reports any failure as data
        return {"ok": False, "vendor": connection.vendor, "error": failure(exc, "database")}
    ms = round((time.perf_counter() - started) * 1000, 2)
    return {"ok": True, "vendor": connection.vendor, "ms": ms}


async def _layer_roundtrip(layer) -> None:  # noqa: ANN001
    """A message sent to a channel and read back. Not a `new_channel()`: on Redis those are
    read through the process's one shared reader, which the sockets keep busy, and the probe
    timed out (503) whenever a socket was open. A plain channel name is read directly."""
    token = uuid.uuid4().hex
    channel = f"health.{token}"
    async with asyncio.timeout(LAYER_PROBE_SECONDS):
        await layer.send(channel, {"type": "health.ping", "token": token})
        message = await layer.receive(channel)
    if message.get("token") != token:
        raise RuntimeError("channel layer returned a different message")


def check_channel_layer() -> dict:
    layer = get_channel_layer()
    backend = type(layer).__name__ if layer else None
    if layer is None:
        return {"ok": False, "backend": None, "error": "no channel layer configured"}
    started = time.perf_counter()
    try:
        async_to_sync(_layer_roundtrip)(layer)
    except Exception as exc:  # noqa: BLE001
        return {"ok": False, "backend": backend, "error": failure(exc, "channel layer")}
    ms = round((time.perf_counter() - started) * 1000, 2)
    return {"ok": True, "backend": backend, "ms": ms}


HEALTH = inline_serializer(
    "Health",
    {
        "status": serializers.CharField(help_text="`ok`, or `degraded` (with a 503)"),
        "database": serializers.DictField(),
        "channel_layer": serializers.DictField(),
    },
)


class HealthView(ApiView):
    permission_classes = [AllowAny]
    authentication_classes: list = []

    @extend_schema(
        responses={
            200: HEALTH,
            503: OpenApiResponse(
                HEALTH, description="`status`: `degraded`; the part down says why"
            ),
        },
        summary="Database and channel-layer reachability",
    )
    def get(self, request: Request) -> Response:
        database = check_database()
        layer = check_channel_layer()
        ok = database["ok"] and layer["ok"]
        body = {"status": "ok" if ok else "degraded", "database": database, "channel_layer": layer}
        return Response(body, status=200 if ok else 503)
