"""Move batches written from the event loop itself, on PostgreSQL.

A batch is mostly waiting (two round trips) and a few milliseconds of Python (the rules engine,
the rows, the frames). On a worker thread that Python competed with the event loop for the GIL,
a millisecond slice each in turn, so a batch's 4 ms of work took 8 and more while every move in
it waited. Here the batch runs on the loop: its Python runs at once, uninterrupted, and while
it waits for PostgreSQL (psycopg's async connection, in pipeline mode) the loop serves the
sockets. The batch is `services.play_moves_async`: one statement when this process has every
game of it cached, else the same transaction as `services.play_moves`' pipelined one, step for
step (lock the rows, apply in memory, write the batch, commit).

Two batches are in flight at once by default (GAME_LOOP_BATCHES), each on a connection of its
own, with a game in one of them at a time (games.move_batcher). With one, the loop sat idle for
about a third of a moves window at 100 clients, waiting for PostgreSQL to run and commit a batch
while every socket that had a move to send was waiting in that batch or the next; a second
batch fills that wait (the README's WebSocket section has the measurements).

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
    """The async connections of one event loop: one per batch in flight (MoveBatcher's
    `writers`), each used by one batch at a time and kept for the next."""

    def __init__(self) -> None:
        self.idle: list[psycopg.AsyncConnection] = []  # open, and no batch on them
        self.open: list[psycopg.AsyncConnection] = []

    async def _connection(self) -> psycopg.AsyncConnection:
        while self.idle:
            conn = self.idle.pop()
            if not (conn.closed or conn.broken):
                return conn
            self.open.remove(conn)
        conn = await psycopg.AsyncConnection.connect(**connection_params())
        self.open.append(conn)
        return conn

    async def write(self, requests: list[services.MoveRequest]) -> list[Result | None]:
        """Play the batch; for each move that must be played on a thread, None (its batch
        finishes a ranked attempt) or services.UNCERTAIN (its write failed)."""
        conn = await self._connection()
        try:
            return answers(await services.play_moves_async(conn, requests))
        except psycopg.errors.InvalidSqlStatementName:
            # The server lacks a statement psycopg believes it prepared on this connection, and
            # every later batch on it would fail the same way: it is closed, not kept.
            await conn.close()
            raise
        finally:
            self.idle.append(conn)

    async def close(self) -> None:
        conns, self.open, self.idle = self.open, [], []
        for conn in conns:
            await conn.close()


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
