"""Reading the environment's settings, each refused by name when it cannot be used.

The settings module and the daphne worker (server.worker, which starts before Django) both read
numbers and switches from the environment. A bare `int()` of a typo was a ValueError traceback
from every worker, and `== "1"` read `DEBUG=maybe` as off; these readers raise
ImproperlyConfigured with the setting's name and value instead, which `make run` prints as one
line (server.stores, server.serve).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}
# The periods of a throttle rate. DRF reads only the first letter of what follows the slash,
# so any word would pass it ("30/mango" is 30 a minute): these are the words that say what DRF
# will read.
_PERIODS = frozenset(
    {"s", "sec", "m", "min", "h", "d"}
    | {word for unit in ("second", "minute", "hour", "day") for word in (unit, unit + "s")}
)


def refusal_line(exc: ImproperlyConfigured) -> str:
    """The one line a command that starts the server prints for a setting refused by name
    (`make run` through server.stores, server.serve, manage.py)."""
    return f"The settings cannot be used: {exc}"


def env_bool(name: str, default: bool) -> bool:
    """A switch. Anything but the usual spellings is refused: `DEBUG=maybe` read as "not 1"
    started a server in production mode, with a complaint about its SECRET_KEY."""
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    value = raw.strip().lower()
    if value not in _TRUE | _FALSE:
        raise ImproperlyConfigured(
            f"{name} must be 1 or 0 (or true/false, yes/no, on/off), not {raw!r}"
        )
    return value in _TRUE


def env_number(name: str, default: float) -> float:
    """A rate, a burst or a number of seconds: more than 0 (a float() of a typo was a traceback)."""
    raw = os.environ.get(name) or str(default)
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not (0 < value < math.inf):
        raise ImproperlyConfigured(f"{name} must be a number greater than 0, not {raw!r}")
    return value


def env_count(name: str, default: int, environ: Mapping[str, str] = os.environ) -> int:
    """A count of threads, writers, batches, moves per batch or request slots: at least one, or
    moves (requests) would wait for a writer (a slot) that never comes."""
    raw = environ.get(name) or str(default)
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        raise ImproperlyConfigured(f"{name} must be a whole number of at least 1, not {raw!r}")
    return value


def env_whole(name: str, default: int) -> int:
    """A whole number of at least 0."""
    raw = os.environ.get(name) or str(default)
    if not (raw.isascii() and raw.isdigit()):
        raise ImproperlyConfigured(f"{name} must be a whole number of at least 0, not {raw!r}")
    return int(raw)


def port_or_none(raw: str) -> int | None:
    """A TCP port, 0 to 65535 (0 lets the system pick one), or None for anything else."""
    if raw.isascii() and raw.isdigit() and int(raw) <= 65535:
        return int(raw)
    return None


def env_port(name: str, default: int, environ: Mapping[str, str] = os.environ) -> int:
    """A TCP port to listen on (PORT)."""
    raw = environ.get(name) or str(default)
    port = port_or_none(raw)
    if port is None:
        raise ImproperlyConfigured(f"{name} must be a port number from 0 to 65535, not {raw!r}")
    return port


def env_rate(name: str, default: str) -> str:
    """A throttle rate as DRF reads it, "30/min": requests, a slash, a period (_PERIODS). DRF
    parses it on the first throttled request, so a typo was a 500 there."""
    raw = (os.environ.get(name) or default).strip()
    count, slash, period = raw.partition("/")
    if not (slash and count.isascii() and count.isdigit() and period.lower() in _PERIODS):
        raise ImproperlyConfigured(
            f"{name} must be requests per period, as 30/min (s, min, hour or day), not {raw!r}"
        )
    return f"{int(count)}/{period.lower()}"


def env_list(name: str, default: list[str]) -> list[str]:
    """Comma-separated items, blanks dropped."""
    raw = os.environ.get(name)
    if not raw:
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]
