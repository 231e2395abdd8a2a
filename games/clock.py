"""The server's idea of "today" (UTC): one place, so every rule about days agrees (and tests
can move the clock)."""

from __future__ import annotations

import datetime as dt

from django.utils import timezone


def today() -> dt.date:
    return timezone.now().astimezone(dt.UTC).date()
