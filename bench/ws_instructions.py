"""Instructions per WebSocket message in the daphne worker, echo against moves, by callgrind.

    python bench/ws_instructions.py [--clients 100] [--messages 30] [--rounds 2]
                                    [--backend postgres] [--batch 20] [--cache-sim]

Why: bench/ws_moves.py measures the rates the target is about, but on this machine the same
code's rates vary about twofold from one window to the next, so a change of a few percent on
the move path drowns in the noise unless it is alternated over many rounds. An instruction count
does not vary like that: callgrind counts every instruction the worker executes, and two windows
of the same code agree within about 1 %. So this shows what a change to the move path does to
the worker's own work per message, and the ratio of an echo's work to a move's, the ceiling of
moves/echo while the worker is what limits both. What it cannot show: time spent waiting for a
core, what other processes do to the worker's caches, and the CPU of the database and of the
clients; the rates remain bench/ws_moves.py's.

How: users sign up on a server run normally (a password hash under valgrind takes many seconds),
which is then stopped; one worker is started as server.serve starts it (`python -m
server.worker`), under `valgrind --tool=callgrind`. Each window opens N sockets (echo, or one new
game each) and zeroes the worker's counters once all are open; each client sends --messages
messages, each after the reply to the one before (moves are random legal ones, as in
bench/ws_moves.py); when every client is done, before any socket closes, the counters are read.

Batches: under callgrind the worker runs some 50 times slower than its clients, so every client
always has a move waiting, and batches would fill up to GAME_MOVE_BATCH (128 moves). A batch's
fixed cost is shared by its moves, so --batch (default 20) caps them at about their size at full
speed with 100 clients (21 moves when measured in session 13).

--cache-sim adds callgrind's cache simulation (about twice as slow) and a second table: the
first-level instruction and data cache misses per thousand instructions, echo against move.
The simulated caches are the worker's alone, so this shows whether the move path's own code
misses the caches more than the echo's, not what the database and the clients, sharing the
cores and caches under load, do to it.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from ws_moves import StartLine, bench_env, make_users, run_echo, run_moves  # noqa: E402

from server.serve import APPLICATION  # noqa: E402
from tests.live_server import Daphne  # noqa: E402

TOOLS = ("valgrind", "callgrind_control")


class CountedWorker(Daphne):
    """One daphne worker, started as server.serve starts it (`python -m server.worker`), behind
    a counting tool (`prefix`): `zero()` starts a window's count, `counted()` ends it, keeps
    what it read in `last` and returns it."""

    def __init__(
        self, env: dict[str, str], log: Path, prefix: list[str], ready_timeout: float
    ) -> None:
        self.last: Any = None

        def command(port: int) -> list[str]:
            # A socket's connect (its token check, its first state) takes seconds under
            # callgrind while a hundred others open; daphne's default gives up after 5.
            address = ["-b", "127.0.0.1", "-p", str(port)]
            return [*prefix, *address, "--websocket_connect_timeout", "900", APPLICATION]

        super().__init__(env, log, command=command, ready_timeout=ready_timeout)

    def zero(self) -> None:
        raise NotImplementedError

    def counted(self) -> Any:
        raise NotImplementedError

    def signal_for_file(self, signum: int, path: Path, timeout: float) -> Path:
        """Signal the worker to write `path`, and wait until it has (it then creates
        `path.done`: bench/profiled_worker.py, bench/traced_worker.py)."""
        os.kill(self.proc.pid, signum)
        deadline = time.monotonic() + timeout
        while not Path(f"{path}.done").exists():
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise RuntimeError(f"no {path.name} from the worker: see {self.log}")
            time.sleep(0.05)
        return path


class CallgrindWorker(CountedWorker):
    """The worker under callgrind; `counted()` reads the instructions executed since `zero()`,
    and keeps every event callgrind counted (with `cache_sim`, the cache misses) in `last`."""

    def __init__(self, env: dict[str, str], workdir: Path, cache_sim: bool = False) -> None:
        self.out = workdir / "callgrind.out"
        self.dumps = 0
        prefix = [
            "valgrind",
            "--tool=callgrind",
            f"--callgrind-out-file={self.out}",
            "--dump-instr=no",
            *(["--cache-sim=yes"] if cache_sim else []),
            sys.executable,
            "-m",
            "server.worker",
        ]
        super().__init__(env, workdir / "daphne-callgrind.log", prefix, ready_timeout=600)

    def _control(self, *args: str) -> None:
        subprocess.run(
            ["callgrind_control", *args, str(self.proc.pid)], check=True, stdout=subprocess.DEVNULL
        )

    def zero(self) -> None:
        self._control("--zero")

    def counted(self) -> int:
        """Instructions executed since the last `zero()` (a dump of the counters, read back)."""
        self._control("--dump")
        self.dumps += 1
        text = Path(f"{self.out}.{self.dumps}").read_text()
        events = re.search(r"^events: (.+)$", text, re.MULTILINE)
        totals = re.search(r"^(?:summary|totals): (.+)$", text, re.MULTILINE)
        if events is None or totals is None:
            raise RuntimeError(f"no totals in callgrind dump {self.dumps}")
        names, counts = events.group(1).split(), [int(n) for n in totals.group(1).split()]
        self.last = dict(zip(names, counts, strict=False))  # events a dump leaves out: zero
        return self.last["Ir"]


class CountedLine(StartLine):
    """A window of `limit` messages per client, bracketed by the worker's counters: zeroed when
    every socket is open, read when every client is done, before any socket closes."""

    open_timeout = 900.0

    def __init__(
        self, server: Daphne, n: int, seconds: float, worker: CountedWorker, messages: int
    ) -> None:
        super().__init__(server, n, seconds)
        self.worker, self.limit = worker, messages
        self.finished = 0
        self.closing = asyncio.Event()

    async def wait(self) -> float:
        if self.arrived + 1 == self.n:
            self.worker.zero()
        return await super().wait()

    async def finish(self) -> None:
        self.finished += 1
        if self.finished == self.n:
            self.worker.counted()
            self.closing.set()
        await self.closing.wait()


# One round: the echo window's messages and reading, then the moves window's.
Round = tuple[tuple[int, Any], tuple[int, Any]]


async def measure(
    worker: CountedWorker,
    echo_tokens: list[str],
    move_tokens: list[str],
    messages: int,
    first_deal: int,
) -> Round:
    """One round, echo then moves: each window's messages and the worker's reading for it."""
    line = functools.partial(CountedLine, worker=worker, messages=messages)
    echo = await run_echo(worker, echo_tokens, 3600.0, [], line=line)
    echo_reading = worker.last
    # A client whose game ends stops, as before session 53: a next game's socket opened inside
    # the window would count its sign-in among the moves' instructions (few games end within
    # 30 random moves).
    moves = await run_moves(worker, move_tokens, 3600.0, first_deal, [], line=line, play_on=False)
    return (echo.count, echo_reading), (moves.count, worker.last)


def window_arguments(description: str, rounds: int) -> argparse.ArgumentParser:
    """The options every counted bench takes: the target cell's clients and its windows."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--clients", type=int, default=100)
    parser.add_argument("--messages", type=int, default=30, help="per client and window")
    parser.add_argument("--rounds", type=int, default=rounds, help="echo and moves windows")
    parser.add_argument("--backend", default="postgres", choices=("postgres", "sqlite"))
    parser.add_argument("--batch", type=int, default=20, help="GAME_MOVE_BATCH for the worker")
    return parser


def misses_per_kir(reading: dict[str, int]) -> tuple[float, float, float]:
    """First-level instruction and data cache misses, and last-level misses, per thousand
    instructions."""
    kir = reading["Ir"] / 1000
    first_data = reading.get("D1mr", 0) + reading.get("D1mw", 0)
    last_level = sum(reading.get(k, 0) for k in ("ILmr", "DLmr", "DLmw"))
    return reading.get("I1mr", 0) / kir, first_data / kir, last_level / kir


def run_rounds(
    args: argparse.Namespace, start: Callable[[dict[str, str], Path], CountedWorker]
) -> list[Round]:
    """Sign the users up on a server run normally (a password hash under valgrind takes many
    seconds), stop it, start the counted worker on the same database, and run the rounds."""
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        env = bench_env(args.backend, workdir)
        env["GAME_MOVE_BATCH"] = str(args.batch)
        signup = Daphne(env, workdir / "daphne-signup.log")
        try:
            echo_tokens = asyncio.run(make_users(signup, args.clients, "e"))
            move_tokens = asyncio.run(make_users(signup, args.clients, "m"))
        finally:
            signup.stop()
        worker = start(env, workdir)
        rounds = []
        try:
            for r in range(args.rounds):
                rounds.append(
                    asyncio.run(
                        measure(worker, echo_tokens, move_tokens, args.messages, 1000 + r * 1000)
                    )
                )
                print(f"  round {r + 1} done", file=sys.stderr, flush=True)
        finally:
            worker.stop()
    return rounds


def main() -> None:
    parser = window_arguments(__doc__.split("\n\n")[0], rounds=2)
    parser.add_argument("--cache-sim", action="store_true", help="count cache misses too")
    args = parser.parse_args()
    missing = [tool for tool in TOOLS if shutil.which(tool) is None]
    if missing:
        raise SystemExit(f"needs {' and '.join(missing)} (Debian: apt-get install valgrind)")
    readings = run_rounds(args, functools.partial(CallgrindWorker, cache_sim=args.cache_sim))
    rounds = [
        (echo_events["Ir"] / echoes / 1000, move_events["Ir"] / moves / 1000)
        for (echoes, echo_events), (moves, move_events) in readings
    ]
    print()
    print(
        f"Instructions the daphne worker executed per message (thousands, callgrind), "
        f"{args.backend}, {args.clients} clients × {args.messages} messages per window, "
        f"batches of at most {args.batch} moves"
    )
    print("| round | kIr per echo | kIr per move | echo / move |")
    print("|---|---|---|---|")
    for r, (echo, moves) in enumerate(rounds, 1):
        print(f"| {r} | {echo:.1f} | {moves:.1f} | {echo / moves:.1%} |")
    echo = statistics.median(e for e, _ in rounds)
    moves = statistics.median(m for _, m in rounds)
    print(f"| median | {echo:.1f} | {moves:.1f} | {echo / moves:.1%} |")
    if args.cache_sim:
        print()
        print("Simulated cache misses per thousand instructions (the worker's alone)")
        print("| round | window | I1 misses | D1 misses | last-level misses |")
        print("|---|---|---|---|---|")
        for r, ((_, echo_events), (_, move_events)) in enumerate(readings, 1):
            for window, reading in (("echo", echo_events), ("move", move_events)):
                i1, d1, ll = misses_per_kir(reading)
                print(f"| {r} | {window} | {i1:.1f} | {d1:.1f} | {ll:.3f} |")


if __name__ == "__main__":
    main()
