"""The benchmarks' PostgreSQL databases and Redis databases: each run starts from empty ones.

A store that cannot be used (not running, or refusing: a password, a missing role) ends the
bench with one line that says which and what to do, not a driver's traceback: the benches that
need one are run by hand, often on a machine that has only the embedded defaults. The lines say
"cannot be used", as `server.stores` does before `make run`.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from server.stores import first_line, where  # noqa: E402

_NEEDS = (
    "start it, point the bench's URL at one (README, Benchmarks), or run only the backends "
    "that do not need it (`--backends sqlite` for bench/ws_moves.py)"
)


def fresh_pg_database(url: str) -> None:
    """Drop and create the database `url` names, so every run starts from the same empty one.

    Every move updates its game's row, and an earlier run's dead rows stay behind until
    vacuumed, and a bench run makes them faster than autovacuum clears them (a PostgreSQL with
    autovacuum off keeps them for good): a database reused over a few sessions held 720,000
    dead game rows for 4,000 live ones, and moves got slower run by run.
    Only a database whose name says it is a benchmark's is ever dropped.
    """
    import psycopg

    server, name = url.rsplit("/", 1)
    if "bench" not in name:
        raise SystemExit(f"'{name}' is not a benchmark's database: only a *bench* one is dropped")
    try:
        with psycopg.connect(server + "/postgres", autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            conn.execute(f'CREATE DATABASE "{name}"')
    except psycopg.OperationalError as exc:
        reason = first_line(exc)
        raise SystemExit(
            f"PostgreSQL at {where(url, 5432)} cannot be used ({reason}): {_NEEDS}."
        ) from None


def fresh_redis_database(url: str) -> None:
    """Empty the Redis database `url` names: no groups or keys left from an earlier run."""
    import redis

    try:
        redis.Redis.from_url(url).flushdb()
    except redis.exceptions.RedisError as exc:
        reason = first_line(exc)
        raise SystemExit(
            f"Redis at {where(url, 6379)} cannot be used ({reason}): {_NEEDS}."
        ) from None
