"""Whether the database and Redis the settings name answer, asked before the server starts.

    python -m server.stores

`make run` asks this before it migrates, so a setting the server refuses (server.settings:
`DEBUG=maybe`, a rate of "x") also stops the start with its one line, not a traceback.
Without it a DATABASE_URL pointing at a PostgreSQL
that is not running ended in a driver's traceback at migrate, and an unreachable REDIS_URL
was worse: the server started and answered requests with 500s (the cache, the throttles and
the channel layer live there). Here either stops the start with one line that says which store,
where, why, and what to do. The benches reuse `where` and `first_line` for the same lines.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from urllib.parse import urlsplit

from redis.exceptions import RedisError

REDIS_CONNECT_SECONDS = 3.0
log = logging.getLogger(__name__)


def where(url: str, default_port: int) -> str:
    """Host, port and database of `url`, without its user and password."""
    parts = urlsplit(url)
    name = parts.path.lstrip("/")
    return f"{parts.hostname}:{parts.port or default_port}" + (f"/{name}" if name else "")


def first_line(exc: BaseException) -> str:
    """An error's first line: a driver's message may run to several, with hints after."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


# What a Redis operation raises while Redis cannot be reached or answers no more: redis-py's
# errors, and the socket's own (a connection refused or reset, a timeout: all OSErrors).
STORE_ERRORS: tuple[type[BaseException], ...] = (RedisError, OSError)

# An outage is logged a line a minute for each thing it stops, not a traceback each time.
AWAY_LOG_SECONDS = 60.0
_away_logged: dict[str, tuple[float, int]] = {}


def log_away(what: str, exc: BaseException, logger: logging.Logger | None = None) -> None:
    """Log that `what` failed, its store away (`exc`), at most once a minute per `what`; the
    line counts the failures it stands for."""
    now = time.monotonic()
    last, held = _away_logged.get(what, (-AWAY_LOG_SECONDS, 0))
    if now - last < AWAY_LOG_SECONDS:
        _away_logged[what] = (last, held + 1)
        return
    _away_logged[what] = (now, 0)
    more = f" (and {held} times since the last line)" if held else ""
    (logger or log).warning("%s failed%s: %s", what, more, first_line(exc))


def database_problem() -> str | None:
    """Why the configured database cannot be used, or None when it answers."""
    from django.db import connection
    from django.db.utils import OperationalError

    try:
        connection.ensure_connection()
    except OperationalError as exc:
        url = os.environ.get("DATABASE_URL", "")
        if url:
            return (
                f"PostgreSQL at {where(url, 5432)} cannot be used ({first_line(exc)}): start "
                "it and create the database (README, PostgreSQL and Redis), or unset "
                "DATABASE_URL to use the embedded SQLite."
            )
        path = connection.settings_dict["NAME"]
        return (
            f"The SQLite database {path} cannot be opened ({first_line(exc)}): check SQLITE_PATH."
        )
    finally:
        connection.close()
    return None


def redis_problem(url: str) -> str | None:
    """Why the Redis at `url` cannot be used, or None when it answers a ping."""
    import redis

    try:
        redis.Redis.from_url(url, socket_connect_timeout=REDIS_CONNECT_SECONDS).ping()
    except redis.exceptions.RedisError as exc:
        return (
            f"Redis at {where(url, 6379)} cannot be used ({first_line(exc)}): start it, or "
            "unset REDIS_URL to use the in-memory channel layer and cache."
        )
    return None


def problems() -> list[str]:
    """Every store the settings name that does not answer, as one line each."""
    found = [database_problem()]
    if redis_url := os.environ.get("REDIS_URL"):
        found.append(redis_problem(redis_url))
    return [problem for problem in found if problem]


def main() -> int:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "server.settings")
    import django
    from django.core.exceptions import ImproperlyConfigured

    from server import serve
    from server.env import refusal_line

    try:
        # First: daphne, an installed app, reads ASGI_THREADS on import; and PORT and
        # WEB_WORKERS are read only as the server starts, after the migration.
        serve.check_settings()
        django.setup()
    except ImproperlyConfigured as exc:  # a setting refused by name (server.settings): its line
        print(refusal_line(exc), file=sys.stderr)
        return 1
    found = problems()
    for problem in found:
        print(problem, file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
