"""Socket move batches played in a process of their own, beside each daphne worker (PostgreSQL).

A daphne worker runs every socket of its connections on one event loop, so on one core. Until
this module that loop also played each batch of moves: the rules engine, the rows, the
write's JSON, the `state` frames and their encoding, about a third of the loop's time under
load (bench/ws_moves.py, py-spy), while the machine's other core sat partly idle. Here the
worker keeps what only it can do, the sockets, and hands each batch to a child process of its
own: the child plays it exactly as the loop did (`services.play_moves_async` through
`games.loop_writer.LoopBatchWriter`, on a PostgreSQL connection of its own) and sends back, per
move, the version and the frames already encoded for the wire, or the move's error. The worker
pickles a few ids and strings each way instead of running the batch.

What does not change: one batch is in flight per worker (games.move_batcher); a move is
answered only after its batch has committed; a batch that finishes a ranked attempt comes back
as None per move and is played on a thread through the ORM (its records); a batch that fails
in the child, or a child that dies, makes the caller play the batch on a thread
(games.consumers), where each move gets its own answer. The child keeps the engine states of
the games it plays (games.state_cache); a state it holds for a version another writer has
since replaced (a REST move) is caught by the write's version check, as on the loop.

The parent talks to the child over the child's stdin and stdout: length-prefixed pickles, the
connection parameters first, then one batch and its answers at a time. The child's stdout is
kept for the answers alone (anything printed goes to stderr, the worker's log), and the child
exits when its stdin closes, so it never outlives its worker.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import pickle
import struct
import sys
import time
import traceback
from pathlib import Path
from typing import Any, NamedTuple

log = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parent.parent
_LENGTH = struct.Struct("!I")
READY = "ready"
RETRY_AFTER_SECONDS = 10.0  # after a child failed to start, batches go to threads meanwhile


class Player(NamedTuple):
    """Who sent a move, as far as playing it needs: the owner check compares ids."""

    id: int


class MoveProcessError(RuntimeError):
    """The child failed the whole batch (its traceback is the message), or is unavailable."""


def pack(message: Any) -> bytes:
    body = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    return _LENGTH.pack(len(body)) + body


async def unpack(reader: asyncio.StreamReader) -> Any:
    (size,) = _LENGTH.unpack(await reader.readexactly(_LENGTH.size))
    return pickle.loads(await reader.readexactly(size))


# ---------------------------------------------------------------------------- the worker's side


class MoveProcessWriter:
    """A daphne worker's move process: plays the batches MoveBatcher hands it, several at a
    time (`batches`, each on a connection of its own in the child; MoveBatcher keeps a game
    in one batch at a time).

    The process starts with the writer (a worker makes its batcher at startup, so the first
    move does not wait for Django to load in the child), and again after it has died.
    """

    def __init__(self, params: dict[str, Any], batches: int = 1) -> None:
        self.params = params  # the child's PostgreSQL connection (loop_writer.connection_params)
        self.batches = batches
        self.proc: asyncio.subprocess.Process | None = None
        self.starting: asyncio.Task | None = None
        self.failed_at = float("-inf")
        self.pending: dict[int, asyncio.Future] = {}  # batch number -> its answers
        self.numbers = itertools.count()
        self.reading: asyncio.Task | None = None

    def start(self) -> asyncio.Task:
        """Start the child unless it is starting already; the task gives the process."""
        if self.starting is None:
            self.starting = asyncio.ensure_future(self._spawn())
            self.starting.add_done_callback(self._started)
        return self.starting

    def _started(self, task: asyncio.Task) -> None:
        self.starting = None
        if task.cancelled():
            return
        if task.exception() is not None:
            self.failed_at = time.monotonic()
            log.error("The move process did not start.", exc_info=task.exception())

    async def _spawn(self) -> asyncio.subprocess.Process:
        await self._stop()
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "games.move_process",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            cwd=ROOT,
            limit=2**24,  # a batch's answers come back in one message
        )
        try:
            proc.stdin.write(pack((self.params, self.batches)))
            if await unpack(proc.stdout) != READY:
                raise MoveProcessError("the move process answered its start with something else")
        except BaseException:
            proc.kill()
            await proc.wait()
            raise
        self.proc = proc
        self.reading = asyncio.ensure_future(self._read(proc))
        return proc

    async def _read(self, proc: asyncio.subprocess.Process) -> None:
        """Hand each batch's answers to the batch that waits for them, as they come."""
        try:
            while True:
                number, answers = await unpack(proc.stdout)
                future = self.pending.pop(number, None)
                if future is not None and not future.done():
                    future.set_result(answers)
        except BaseException as exc:  # the child is gone, or its stream is garbled
            if proc is self.proc:
                self.proc = None
                _terminate(proc)
            for future in self.pending.values():
                if not future.done():
                    future.set_exception(MoveProcessError(f"the move process stopped: {exc!r}"))
            self.pending.clear()
            if not isinstance(exc, Exception):
                raise

    async def _process(self) -> asyncio.subprocess.Process:
        proc = self.proc
        if proc is not None and proc.returncode is None:
            return proc
        if self.starting is None and time.monotonic() - self.failed_at < RETRY_AFTER_SECONDS:
            raise MoveProcessError("the move process failed to start a moment ago")
        return await asyncio.shield(self.start())

    async def write(self, requests: list[Any]) -> list[Any]:
        """Each move's Result (games.move_batcher), or None if it must be played on a thread.
        Raises if the batch as a whole failed in the child, or the child is gone."""
        from games.move_batcher import answer_from_wire

        proc = await self._process()
        number = next(self.numbers)
        future = self.pending[number] = asyncio.get_running_loop().create_future()
        proc.stdin.write(pack((number, [(r.game_id, r.user.id, r.move, r.v) for r in requests])))
        await proc.stdin.drain()
        answers = await future
        if isinstance(answers, str):
            raise MoveProcessError(answers)
        return [answer_from_wire(answer) for answer in answers]

    async def close(self) -> None:
        if self.starting is not None:
            self.starting.cancel()
        await self._stop()

    async def _stop(self) -> None:
        """Let the child go (it exits when its stdin closes); kill it if it lingers."""
        proc, self.proc = self.proc, None
        if self.reading is not None:
            self.reading.cancel()
            self.reading = None
        if proc is None or proc.returncode is not None:
            return
        proc.stdin.close()
        try:
            await asyncio.wait_for(proc.wait(), 5)
        except TimeoutError:
            proc.kill()
            await proc.wait()


def _terminate(proc: asyncio.subprocess.Process) -> None:
    if proc.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()


# ---------------------------------------------------------------------------- the child's side


async def serve(reader: asyncio.StreamReader, out: Any) -> None:
    """Play batches from `reader` until it closes; answers go to `out` (a binary file).

    Each batch is played as soon as it comes, on one of `batches` connections: while one
    batch waits for PostgreSQL the next is planned, and its answers go back as soon as it
    commits. The worker never sends a game in two batches at once (MoveBatcher)."""
    from games.loop_writer import LoopBatchWriter

    params, batches = await unpack(reader)
    writers: asyncio.Queue[LoopBatchWriter] = asyncio.Queue()
    for _ in range(batches):
        writers.put_nowait(LoopBatchWriter(params))
    send(out, READY)
    playing: set[asyncio.Task] = set()
    try:
        while True:
            try:
                number, batch = await unpack(reader)
            except asyncio.IncompleteReadError:
                return  # the worker has gone: so does its move process
            writer = await writers.get()
            task = asyncio.ensure_future(_play(writer, number, batch, out))
            task.add_done_callback(lambda _, w=writer: writers.put_nowait(w))
            playing.add(task)
            task.add_done_callback(playing.discard)
    finally:
        for task in playing:
            task.cancel()
        while not writers.empty():
            await writers.get_nowait().close()


async def _play(writer: Any, number: int, batch: list[tuple], out: Any) -> None:
    from games import services
    from games.move_batcher import answer_to_wire

    requests = [services.MoveRequest(g, Player(u), m, v) for g, u, m, v in batch]
    try:
        answers: Any = [answer_to_wire(r) for r in await writer.write(requests)]
    except Exception:  # noqa: BLE001 - the worker replays it on a thread, move by move
        log.warning("A move batch failed in the move process.", exc_info=True)
        answers = traceback.format_exc()
    send(out, (number, answers))


def send(out: Any, message: Any) -> None:
    out.write(pack(message))
    out.flush()


async def _stdin_reader() -> asyncio.StreamReader:
    reader = asyncio.StreamReader(limit=2**24)
    loop = asyncio.get_running_loop()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    return reader


def main() -> None:
    """`python -m games.move_process`, started by MoveProcessWriter (never by hand)."""
    out = os.fdopen(os.dup(1), "wb")  # the answers' own copy of stdout
    os.dup2(2, 1)  # whatever else is printed goes to the worker's log, not into the answers
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "server.settings")
    import django

    django.setup()
    from server.gc_tuning import tune_collector

    tune_collector(preload=False)

    async def run() -> None:
        await serve(await _stdin_reader(), out)

    asyncio.run(run())


if __name__ == "__main__":
    main()
