"""Python calls per WebSocket message in the daphne worker, echo against moves, by cProfile.

    python bench/ws_calls.py [--clients 100] [--messages 30] [--rounds 1]
                             [--backend postgres] [--batch 20] [--top 25]

Why: bench/ws_instructions.py counts how much work the worker does per message, not where. This
runs the same windows (the target cell's clients, echo then moves, counted from the moment every
socket is open to the moment every client is done) against a worker whose event loop thread is
profiled for each window (bench/profiled_worker.py), and prints where a move's Python calls and
time go beside an echo's: by package, then the functions that differ most.

Read the time columns with care: cProfile adds a fixed cost to every call, so call-heavy code
looks dearer than it runs, and it times by the wall clock, so a function that waits for a core
(psycopg handing a batch to PostgreSQL on this machine) is charged the wait. Calls are exact.
"""

from __future__ import annotations

import os
import pstats
import signal
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from ws_instructions import CountedWorker, run_rounds, window_arguments  # noqa: E402

HERE = Path(__file__).resolve().parent

# Where a function's file lies says whose code it is; the first match names its package.
PACKAGES = (
    ("games/engine/", "rules engine"),
    ("/games/", "games: consumers, services, batcher"),
    ("/server/", "server: consumer base, channel layer"),
    ("psycopg", "psycopg"),
    ("autobahn", "autobahn"),
    ("twisted", "twisted"),
    ("daphne", "daphne"),
    ("channels", "channels"),
    ("django", "django"),
    ("asyncio", "asyncio"),
)
BUILTINS = "built-ins (len, dict.get, orjson, socket send, ...)"

# pstats' entry for a function: (calls, primitive calls, own time, cumulative time, callers)
Entry = tuple[int, int, float, float, Any]


class ProfiledWorker(CountedWorker):
    """The worker under cProfile; `counted()` returns the profile of the window since `zero()`."""

    def __init__(self, env: dict[str, str], workdir: Path) -> None:
        self.out = workdir / "profile"
        self.windows = 0
        env = {**env, "PROFILE_OUT": str(self.out)}
        prefix = [sys.executable, str(HERE / "profiled_worker.py")]
        super().__init__(env, workdir / "daphne-profiled.log", prefix, ready_timeout=60)

    def zero(self) -> None:
        os.kill(self.proc.pid, signal.SIGUSR1)

    def counted(self) -> dict[tuple, Entry]:
        self.windows += 1
        path = self.signal_for_file(signal.SIGUSR2, Path(f"{self.out}.{self.windows}"), 120)
        self.last = pstats.Stats(str(path)).stats
        return self.last


def package(function: tuple) -> str:
    filename = function[0]
    if filename == "~":
        return BUILTINS
    return next((name for key, name in PACKAGES if key in filename), "other Python")


def label(function: tuple) -> str:
    filename, line, name = function
    if filename == "~":
        return name
    for marker in ("site-packages/", f"{HERE.parent}/", "/lib/python3"):
        if marker in filename:
            filename = filename.split(marker)[-1]
            break
    return f"{filename}:{line} {name}"


def per_message(stats: dict[tuple, Entry], messages: int) -> dict[tuple, tuple[float, float]]:
    """Calls and own µs per message, for each function."""
    return {f: (e[0] / messages, e[2] / messages * 1e6) for f, e in stats.items()}


def by_package(calls: dict[tuple, tuple[float, float]]) -> dict[str, tuple[float, float]]:
    out: dict[str, tuple[float, float]] = {}
    for function, (n, us) in calls.items():
        name = package(function)
        total_n, total_us = out.get(name, (0.0, 0.0))
        out[name] = (total_n + n, total_us + us)
    return out


def table(header: Iterable[str], rows: Iterable[Iterable[str]]) -> None:
    header = list(header)
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for row in rows:
        print("| " + " | ".join(row) + " |")


def report(echo: dict, moves: dict, top: int) -> None:
    zero = (0.0, 0.0)
    echo_p, moves_p = by_package(echo), by_package(moves)
    names = sorted(set(echo_p) | set(moves_p), key=lambda p: -moves_p.get(p, zero)[0])
    rows = [
        (p, *(f"{x:.1f}" for x in (*echo_p.get(p, zero), *moves_p.get(p, zero)))) for p in names
    ]
    totals = [sum(v[i] for v in d.values()) for d in (echo_p, moves_p) for i in (0, 1)]
    rows.append(("**all**", *(f"**{x:.1f}**" for x in totals)))
    table(["package", "calls / echo", "µs / echo", "calls / move", "µs / move"], rows)
    print(f"\nA move makes {totals[2] / totals[0]:.2f} times an echo's calls.\n")
    extra = sorted(
        set(echo) | set(moves),
        key=lambda f: -(moves.get(f, zero)[1] - echo.get(f, zero)[1]),
    )[:top]
    print(f"The {top} functions whose own time per move exceeds theirs per echo the most:\n")
    table(
        ["function", "calls / echo", "calls / move", "own µs / echo", "own µs / move"],
        (
            (
                f"`{label(f)}`",
                f"{echo.get(f, zero)[0]:.2f}",
                f"{moves.get(f, zero)[0]:.2f}",
                f"{echo.get(f, zero)[1]:.1f}",
                f"{moves.get(f, zero)[1]:.1f}",
            )
            for f in extra
        ),
    )


def main() -> None:
    parser = window_arguments(__doc__.split("\n\n")[0], rounds=1)
    parser.add_argument("--top", type=int, default=25, help="functions to list")
    args = parser.parse_args()
    for r, ((echoes, echo), (moves, played)) in enumerate(run_rounds(args, ProfiledWorker), 1):
        print(
            f"\nRound {r}: the daphne worker's event loop thread under cProfile, {args.backend}, "
            f"{args.clients} clients; {echoes} echoes, {moves} moves, batches of at most "
            f"{args.batch} moves. Calls are counted as cProfile counts them: a coroutine's "
            f"every resumption is a call.\n"
        )
        report(per_message(echo, echoes), per_message(played, moves), args.top)


if __name__ == "__main__":
    main()
