"""The server's idea of "today" (UTC): one place, so every rule about days agrees (and tests
can move the clock)."""

from __future__ import annotations

import datetime as dt

from django.utils import timezone


def today() -> dt.date:
    return timezone.now().astimezone(dt.UTC).date()


def iso(moment: dt.datetime | None) -> str | None:
    """A moment as the REST API writes it everywhere (DRF's format: ISO 8601, UTC as `Z`), for
    payloads built by hand, such as a leaderboard, which also goes out over WebSockets."""
    if moment is None:
        return None
    text = moment.isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text
