"""Group commit for moves sent over WebSockets.

A socket that sends a move awaits `submit()`. If a writer is free, its move goes to the
database at once, alone: a lone player waits for nothing. While batches are being written, the
moves that arrive queue up, and the next batch takes all of them (up to `max_batch`) in one
transaction (`services.play_moves`). So under load a commit, and its flush to disk, is
shared by many moves, and the number of transactions per second stops limiting the moves per
second. Each move is still checked against the game as its own transaction would see it, and
is acknowledged only after its batch has committed.

Up to `writers` batches may be written at once. A game is in one of them at a time: a move of a
game whose earlier move is still being written waits for that batch to commit, so it is checked
against the version that move made, exactly as with one writer. On PostgreSQL two batches in
flight keep the event loop busy while the database commits (games.loop_writer).

One batcher runs per event loop (a daphne process has one; tests may make several).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any
from weakref import WeakKeyDictionary

from django.db import connection

from games import events, services
from games.broadcast import WireFrame
from server.errors import AppError

# A move's answer for its socket: the game's version and its frames, encoded; or why not.
Result = tuple[int, list[WireFrame]] | AppError

log = logging.getLogger(__name__)


def write_batch(requests: list[services.MoveRequest], resent: bool = False) -> list[Result]:
    """Play a batch and build each move's frames, in one worker-thread call.

    If the batch as a whole fails (a database error, not a refused move), each move is played
    again in a transaction of its own, so one bad request cannot sink the others; a move that
    fails alone too gets its exception back (its socket hears that it could not be saved, as
    it would have without batching). A failed batch may have committed all the same (its
    connection died after its COMMIT went out), so the moves played again are answered as
    played if their games have them (`services.play_moves`' `landed`); so are the moves of a
    batch `resent` after such a failure elsewhere (the event loop's writer). A batch the
    database refused (`services.not_committed`) did not commit: its moves are played again
    as new.
    """
    try:
        outcomes: list = services.play_moves(requests, set() if resent else None)
    except Exception as exc:  # noqa: BLE001 - logged, and retried one by one below
        # Logged here: if every move then plays alone, nothing else would tell of it.
        log.warning(
            "A move batch of %d failed; playing its moves one by one.", len(requests), exc_info=True
        )
        _drop_connection_if_broken()
        outcomes = []
        landed = set() if resent or not services.not_committed(exc) else None
        for r in requests:
            try:
                outcomes.append(services.play_move(r.game_id, r.user, r.move, r.v, landed))
            except Exception as exc:  # noqa: BLE001 - handed to that move's caller
                outcomes.append(exc)
    return answers(outcomes)


def _drop_connection_if_broken() -> None:
    """Close this thread's database connection if it no longer works (the batch failed
    because it died), so that the moves played again open a new one: Django reconnects only
    a connection it has closed, and the pipelined path leaves a dead one open."""
    if connection.connection is not None and not connection.is_usable():
        connection.close()


def answers(outcomes: list) -> list[Result | None]:
    """Each move's answer for its socket: (version, frames) if it was applied, else its error
    (None and services.UNCERTAIN stay as they are: a move not played yet)."""
    return [
        o
        if o is None or o is services.UNCERTAIN or isinstance(o, Exception)
        else (o.game.version, events.wire_frames(o))
        for o in outcomes
    ]


class MoveBatcher:
    """Collects moves from every socket of one event loop and writes them in batches."""

    def __init__(
        self,
        run: Callable[[list[services.MoveRequest]], Any],
        max_batch: int = 128,
        writers: int = 1,
        close: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self.run = run
        self.close = close  # releases what `run` holds (a connection), when the loop ends
        self.max_batch = max_batch
        self.writers = writers
        self.active = 0
        self.tasks: set[asyncio.Task] = set()  # held, so a running drain is never collected
        self.queue: list[tuple[services.MoveRequest, asyncio.Future]] = []
        self.writing: set[int] = set()  # the games of the batches being written

    async def submit(self, request: services.MoveRequest) -> Result:
        future = asyncio.get_running_loop().create_future()
        self.queue.append((request, future))
        if self.active < self.writers:
            self.active += 1
            task = asyncio.ensure_future(self._drain())
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)
        return await future

    def _take(self) -> list[tuple[services.MoveRequest, asyncio.Future]]:
        """The next batch: the oldest waiting moves, up to `max_batch`, of games no batch being
        written holds. The rest keep their order, so a game's moves are played in the order
        they came."""
        queue = self.queue
        if not self.writing and len(queue) <= self.max_batch:
            self.queue = []
            return queue
        batch: list = []
        rest: list = []
        writing, room = self.writing, self.max_batch
        for item in queue:
            if len(batch) < room and item[0].game_id not in writing:
                batch.append(item)
            else:
                rest.append(item)
        self.queue = rest
        return batch

    async def _drain(self) -> None:
        try:
            # An empty batch with moves still queued: each is of a game another batch is
            # writing, and that batch's drain takes it once it has committed.
            while batch := self._take():
                games = {request.game_id for request, _ in batch}
                self.writing |= games
                try:
                    results = await self.run([request for request, _ in batch])
                except BaseException as exc:  # the callers hear it, not the event loop
                    for _, future in batch:
                        if not future.done():
                            future.set_exception(exc)
                    if not isinstance(exc, Exception):
                        raise
                    continue
                finally:
                    self.writing -= games
                for (_, future), result in zip(batch, results, strict=True):
                    if future.done():
                        continue  # its socket went away; the move stands all the same
                    if isinstance(result, Exception) and not isinstance(result, AppError):
                        future.set_exception(result)
                    else:
                        future.set_result(result)
        finally:
            self.active -= 1


_batchers: WeakKeyDictionary[asyncio.AbstractEventLoop, MoveBatcher] = WeakKeyDictionary()


def batcher_for_loop(make: Callable[[], MoveBatcher]) -> MoveBatcher:
    """The running loop's batcher, made on first use."""
    loop = asyncio.get_running_loop()
    batcher = _batchers.get(loop)
    if batcher is None:
        batcher = _batchers[loop] = make()
    return batcher


async def close_batcher() -> None:
    """Forget the running loop's batcher and close what it holds (tests end a loop per test;
    a connection left to the garbage collector would keep the test database busy)."""
    batcher = _batchers.pop(asyncio.get_running_loop(), None)
    if batcher is not None and batcher.close is not None:
        await batcher.close()
