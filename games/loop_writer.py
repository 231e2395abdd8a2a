"""Move batches written from the event loop itself, on PostgreSQL.

A batch is mostly waiting (two round trips) and a few milliseconds of Python (the rules engine,
the rows, the frames). On a worker thread that Python competed with the event loop for the GIL,
a millisecond slice each in turn, so a batch's 4 ms of work took 8 and more while every move in
it waited. Here the batch runs on the loop: its Python runs at once, uninterrupted, and while
it waits for PostgreSQL (psycopg's async connection, in pipeline mode) the loop serves the
sockets. The batch is `services.play_moves_async`: one statement when this process has every
game of it cached, else the same transaction as `services.play_moves`' pipelined one, step for
step (lock the rows, apply in memory, write the batch, commit).

A batch that finishes a ranked attempt is handed back (None for each of its moves): its
records are written through the ORM, inside Django's transaction, on a thread. So is a batch
that fails here; the caller replays it there, where each move gets its own answer.
"""

from __future__ import annotations

from typing import Any

import psycopg
from django.db import connection

from games import services
from games.move_batcher import Result, answers


class LoopBatchWriter:
    """One async connection per event loop, used by one batch at a time (MoveBatcher)."""

    def __init__(self) -> None:
        self.conn: psycopg.AsyncConnection | None = None

    async def _connection(self) -> psycopg.AsyncConnection:
        if self.conn is None or self.conn.closed or self.conn.broken:
            self.conn = await psycopg.AsyncConnection.connect(**connection_params())
        return self.conn

    async def write(self, requests: list[services.MoveRequest]) -> list[Result | None]:
        """Play the batch; None for each move that must be played on a thread."""
        return answers(await services.play_moves_async(await self._connection(), requests))

    async def close(self) -> None:
        if self.conn is not None:
            await self.conn.close()
            self.conn = None


def connection_params() -> dict[str, Any]:
    """Django's connection settings for this database, for a psycopg connection of our own:
    autocommit (the writer sends BEGIN and COMMIT itself), and UTC, as Django's connections."""
    params = connection.get_connection_params()
    for django_only in ("cursor_factory", "context", "prepare_threshold"):
        params.pop(django_only, None)
    options = params.get("options", "")
    params["options"] = f"{options} -c TimeZone=UTC".strip()
    params["autocommit"] = True
    return params
