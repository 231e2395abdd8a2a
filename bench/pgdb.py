"""The benchmarks' PostgreSQL databases: each run starts from a new, empty one."""

from __future__ import annotations


def fresh_pg_database(url: str) -> None:
    """Drop and create the database `url` names, so every run starts from the same empty one.

    Every move updates its game's row, and an earlier run's dead rows stay behind until
    vacuumed, and a bench run makes them faster than autovacuum clears them (a PostgreSQL with
    autovacuum off keeps them for good): a database reused over a few sessions held 720,000
    dead game rows for 4,000 live ones, and moves got slower run by run.
    Only a database whose name says it is a benchmark's is ever dropped.
    """
    import psycopg

    name = url.rsplit("/", 1)[1]
    if "bench" not in name:
        raise SystemExit(f"'{name}' is not a benchmark's database: only a *bench* one is dropped")
    with psycopg.connect(url.rsplit("/", 1)[0] + "/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
