"""What the game and leaderboard sockets ask of the database, and where it runs.

The consumers (games.consumers) read frames and answer them; the calls they make are here:
a socket's first state and its syncs, a board, a resign on a pool of threads, and moves and
undos through the process's group commit (games.move_batcher), written from the event loop
on PostgreSQL (games.loop_writer) and on a thread elsewhere.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from contextlib import suppress
from typing import TYPE_CHECKING

from channels.db import database_sync_to_async
from django.conf import settings
from django.db import connection, connections

from games import engine, events, selectors, services
from games.broadcast import WireFrame
from games.loop_writer import LoopBatchWriter
from games.move_batcher import MoveBatcher, batcher_for_loop, write_batch
from server.errors import AppError, log_failure

if TYPE_CHECKING:
    from accounts.models import User

log = logging.getLogger(__name__)


def load_state(game_id: int, user: User) -> tuple[int, int, dict] | AppError:
    """A socket's state frame (at connect, or a sync); the owner's game is cached for the
    moves that follow (services.remember). Or why not, for its `error` frame: any failure to
    read it too (logged), as load_board says; before, a database gone for a moment ended the
    consumer, and its socket closed with 1011."""
    try:
        game = selectors.viewable_game(game_id, user)
    except AppError as exc:
        return exc
    except Exception as exc:  # noqa: BLE001 - logged; the socket hears why and stays
        away = "Game sockets' reads of their games"
        log_failure(log, exc, away, "Game %s could not be loaded for a socket", game_id)
        return AppError("unavailable", f"Game {game_id} cannot be loaded just now: sync later.")
    state = engine.State.from_dict(game.state)
    if game.owner_id == user.id:
        services.remember(game, state)
    frame = {"t": "state", "v": game.version, "d": selectors.state_view(game, state)}
    return game.owner_id, game.version, frame


_pools: dict[str, ThreadPoolExecutor] = {}


def _pool(name: str, threads: int) -> ThreadPoolExecutor:
    pool = _pools.get(name)
    if pool is None:
        pool = _pools[name] = ThreadPoolExecutor(threads, thread_name_prefix=name)
    return pool


def on_thread(func, pool: str = "game-db", threads: int | None = None):  # noqa: ANN001, ANN202
    """Run a sync database function from a consumer.

    PostgreSQL serves many connections at once, so socket reads and single writes there run
    on a pool of threads (GAME_DB_THREADS, each with its own connection); the row lock keeps
    one game consistent. SQLite has one writer at a time, so there every call stays on the one
    shared thread, where queuing is cheaper than lock contention.
    """
    if connection.vendor == "sqlite":
        return database_sync_to_async(func)
    return _on_pool(func, pool, threads or settings.GAME_DB_THREADS)


def _on_pool(func, pool: str, threads: int):  # noqa: ANN001, ANN202
    return database_sync_to_async(func, thread_sensitive=False, executor=_pool(pool, threads))


# Threads that read boards for board sockets, apart from the game sockets' threads.
BOARD_THREADS = 4


def board_call(func):  # noqa: ANN001, ANN201
    """Run a board socket's load on a thread of the boards' own, on SQLite too: the first load
    of a day may certify its challenge, and wait 5-30 s for the process that does. On the
    game sockets' threads (on SQLite, the one every socket's sign-in and reads share) that
    stalled every socket of the server meanwhile. Reads, but for the two rows that store a
    day's challenge made on demand (games.daily.ensure_daily), once a day: SQLite takes them
    from any thread, queued behind its other writer (IMMEDIATE transactions, a 20 s busy
    timeout: server.settings)."""
    return _on_pool(func, "board", BOARD_THREADS)


def _write_moves(requests: list[services.MoveRequest], resent: bool = False):  # noqa: ANN202
    """Write a move batch on a thread: every batch on SQLite (or with GAME_LOOP_WRITER=0), and
    on PostgreSQL the batches the event loop hands over (`resent`: write_batch). On PostgreSQL
    these have threads of their own (GAME_BATCH_WRITERS), so a batch finds a warm connection
    with its prepared statements; that took a fifth off a move's CPU against the shared pool.
    The threads are looked up per batch: they may have been stopped meanwhile."""
    return on_thread(write_batch, "move-batch", settings.GAME_BATCH_WRITERS)(requests, resent)


def shutdown_db_pool() -> None:
    """Stop the database threads; their connections go with them (tests, clean shutdown).

    Each thread must close its own connections, so each gets one close that waits at a
    barrier for the others: without it one thread could take two closes and another none,
    leaving its connection open (the tests' teardown then ended it from the server side, and
    with it connections still in use)."""
    while _pools:
        _, pool = _pools.popitem()
        barrier = threading.Barrier(pool._max_workers)
        for _ in range(pool._max_workers):
            pool.submit(_close_at, barrier)
        pool.shutdown(wait=True)


def _close_at(barrier: threading.Barrier) -> None:
    with suppress(threading.BrokenBarrierError):
        barrier.wait(timeout=5)  # every thread holds one close: none takes two
    connections.close_all()


def move_batcher() -> MoveBatcher:
    """This event loop's batcher, made at its first move."""
    return batcher_for_loop(new_move_batcher)


def new_move_batcher() -> MoveBatcher:
    """On PostgreSQL batches are written from the event loop (games.loop_writer), and handed
    to a thread only when that path cannot take them; elsewhere always on a thread."""
    if connection.vendor != "postgresql" or not settings.GAME_LOOP_WRITER:
        return MoveBatcher(_write_moves, settings.GAME_MOVE_BATCH, settings.GAME_BATCH_WRITERS)
    writer = LoopBatchWriter()

    async def run(requests: list[services.MoveRequest]) -> list:
        try:
            results = await writer.write(requests)
        except Exception as exc:  # noqa: BLE001 - played again on a thread, which reports per move
            log_failure(
                log,
                exc,
                "Move batches on the event loop (each played again on a thread)",
                "A move batch failed on the event loop; retrying it on a thread.",
                level=logging.WARNING,
            )
            results = [services.after_failure(exc)] * len(requests)
        # Handed over: None, a batch for the ORM (it finishes a ranked attempt) or one whose
        # write surely did not commit; UNCERTAIN, a write that failed, maybe after its COMMIT
        # went out: played again as resent.
        for kind, resent in ((None, False), (services.UNCERTAIN, True)):
            handed = [i for i, result in enumerate(results) if result is kind]
            if handed:
                again = await _write_moves([requests[i] for i in handed], resent)
                for i, result in zip(handed, again, strict=True):
                    results[i] = result
        return results

    return MoveBatcher(run, settings.GAME_MOVE_BATCH, settings.GAME_LOOP_BATCHES, writer.close)


def resign(game_id: int, user: User) -> tuple[int, list[WireFrame]]:
    """Resign the game and build its frames, in the same worker-thread call (moves and undos
    go through the batch: move_batcher)."""
    outcome = services.resign(game_id, user)
    return outcome.game.version, events.wire_frames(outcome)


def load_board(date: str, variant: str) -> dict | AppError:
    """A board socket's board; or why not, for its `error` frame: today's challenge whose
    certification failed (`unavailable`) is one of those, as is any other failure to load it
    (logged). An error closes no socket (PROTOCOL.md), and a `sync` asks again. Before, the
    consumer died of it."""
    from games import daily, leaderboards

    try:
        return leaderboards.board_frame(daily.challenge_for(date, variant))
    except AppError as exc:
        return exc
    except Exception as exc:  # noqa: BLE001 - logged; the socket hears why and stays
        away = "Board sockets' reads of their boards"
        log_failure(log, exc, away, "The %s board of %s could not be loaded", variant, date)
        return AppError(
            "unavailable",
            f"The {variant} challenge of {date} cannot be loaded just now: sync later.",
        )


def board_day(date: str, variant: str) -> dt.date:
    """The day a board socket names, to name its group by, checked as the board's own load
    checks it and in the same order; AppError for a date or variant that is not one. A day
    whose challenge is not out yet is still a day: the load refuses it."""
    from games import daily

    services.check_variant(variant)
    try:
        return daily.parse_day(date)
    except AppError as exc:
        if exc.code != "not_found":
            raise
        return dt.date.fromisoformat(date)
