"""Memory over a long run: the server's resident size while clients play game after game.

    python bench/soak.py [--minutes 20] [--clients 50] [--backend postgres] [--workers 1]
                         [--every 60] [--trace] [--frames 1] [--warmup 3]

Why: a server that runs for weeks must level off. An outside soak (session 42, 15 minutes, two
workers) saw each worker grow from about 115 to 155 MB and still grow at its end, and nobody had
measured where. This starts the server as bench/ws_moves.py does (same backends, same limits
raised) and runs `--clients` players, each in a loop: start a practice game (a random variant,
half of them on a random deal number, half on the server's), open its socket, play random legal
moves with an undo now and then (`--undo-rate`, 0.08 of actions), up to a random 20-300 moves
or the game's end, resign one game in five, close. One client in five watches instead: it
opens the socket of a game another client is playing, reads it for a few seconds and closes.
So sockets open and close all the time, games start, end and are left open, and the state
cache and every other per-game store meet thousands of new games.

Every `--every` seconds it prints a row: the moves, games and sockets so far, the move rate in
the interval, and each server process's resident size (VmRSS). A process that has levelled off
shows the same size row after row.

With `--trace` (one worker) the worker runs under tracemalloc (bench/traced_worker.py), and
the bench compares a snapshot taken `--warmup` minutes in with one taken at the end: the source
lines whose live allocations grew most in between, by size. Tracing slows the worker about
twofold and adds its own memory to the RSS column; the growth by line is the server's own.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import signal
import sys
import tempfile
import time
import tracemalloc
from dataclasses import dataclass, field
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from websockets.asyncio.client import connect  # noqa: E402
from websockets.exceptions import ConnectionClosed  # noqa: E402
from ws_instructions import CountedWorker  # noqa: E402
from ws_moves import BACKENDS, Clocks, bench_env, make_users  # noqa: E402

from games.engine.variants import VARIANTS  # noqa: E402
from tests.live_server import Daphne  # noqa: E402

HERE = Path(__file__).resolve().parent
WATCH_EVERY = 5  # one client in this many watches instead of playing


@dataclass
class Counts:
    moves: int = 0
    undos: int = 0
    games: int = 0
    finished: int = 0  # won, stuck or resigned
    sockets: int = 0
    errors: list[str] = field(default_factory=list)
    playing: list[int] = field(default_factory=list)  # recent games, for the watchers


class TracedWorker(CountedWorker):
    """One worker under tracemalloc; `snapshot()` asks it for one and reads it back."""

    def __init__(self, env: dict[str, str], workdir: Path, frames: int) -> None:
        self.out = workdir / "trace"
        self.taken = 0
        env = {**env, "TRACE_OUT": str(self.out), "TRACE_FRAMES": str(frames)}
        prefix = [sys.executable, str(HERE / "traced_worker.py")]
        super().__init__(env, workdir / "daphne-traced.log", prefix, ready_timeout=60)

    def snapshot(self) -> tracemalloc.Snapshot:
        self.taken += 1
        path = self.signal_for_file(signal.SIGUSR1, Path(f"{self.out}.{self.taken}"), 300)
        return tracemalloc.Snapshot.load(str(path))


def rss_mb(pid: int) -> float | None:
    """A process's resident size (Linux /proc), or None if it has gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def worker_pids(server: Daphne) -> list[int]:
    """The processes that serve sockets (not the supervisor, not a certification pool)."""
    found = []
    for pid in server.pids():
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if b"server.worker" in cmdline or b"traced_worker" in cmdline:
            found.append(pid)
    return found


async def recv_state(ws) -> dict:  # noqa: ANN001
    """The next `state` frame; an `error` frame is raised."""
    while True:
        frame = orjson.loads(await ws.recv(decode=False))
        if frame["t"] == "state":
            return frame
        if frame["t"] == "error":
            raise RuntimeError(frame["d"])


async def play_one_game(
    server: Daphne, token: str, rng: random.Random, counts: Counts, until: float, undo_rate: float
) -> None:
    body: dict = {"variant": rng.choice(list(VARIANTS))}
    if rng.random() < 0.5:
        body["deal"] = rng.randrange(1, 2**31)
    status, game = await asyncio.to_thread(server.call, "POST", "/api/games", body, token)
    if status != 201:
        raise RuntimeError(f"POST /api/games: {status} {game}")
    counts.games += 1
    headers = {"Authorization": f"Token {token}"}
    async with connect(
        f"{server.ws}/ws/games/{game['id']}", additional_headers=headers, max_size=2**20
    ) as ws:
        counts.sockets += 1
        state = await recv_state(ws)
        counts.playing.append(game["id"])
        del counts.playing[:-200]
        limit = rng.randint(20, 300)
        depth = 0  # moves played and not undone: what an undo may take back
        for n in range(limit):
            d = state["d"]
            if d["status"] != "playing" or time.monotonic() > until:
                break
            if depth > 0 and rng.random() < undo_rate:
                frame = {"t": "undo", "d": {"v": state["v"], "id": n}}
                counts.undos += 1
                depth -= 1
            elif d["legal_moves"]:
                frame = {"t": "move", "d": {"move": rng.choice(d["legal_moves"]), "v": state["v"]}}
                counts.moves += 1
                depth += 1
            else:
                break
            await ws.send(orjson.dumps(frame), text=True)
            state = await recv_state(ws)
        if state["d"]["status"] == "playing" and rng.random() < 0.2:
            await ws.send(orjson.dumps({"t": "resign", "d": {"id": "r"}}), text=True)
            while state["d"]["status"] == "playing":
                state = await recv_state(ws)
        if state["d"]["status"] != "playing":
            counts.finished += 1


async def watch_one_game(
    server: Daphne, token: str, rng: random.Random, counts: Counts, until: float
) -> None:
    if not counts.playing:
        await asyncio.sleep(1)
        return
    game_id = rng.choice(counts.playing)
    headers = {"Authorization": f"Token {token}"}
    async with connect(f"{server.ws}/ws/games/{game_id}", additional_headers=headers) as ws:
        counts.sockets += 1
        stop = min(until, time.monotonic() + rng.uniform(1, 5))
        while (left := stop - time.monotonic()) > 0:
            try:
                await asyncio.wait_for(ws.recv(), left)
            except TimeoutError:
                break


async def client(
    index: int,
    server: Daphne,
    token: str,
    args: argparse.Namespace,
    counts: Counts,
    until: float,
) -> None:
    rng = random.Random(args.seed * 1000 + index)
    watcher = index % WATCH_EVERY == WATCH_EVERY - 1
    while time.monotonic() < until:
        try:
            if watcher:
                await watch_one_game(server, token, rng, counts, until)
            else:
                await play_one_game(server, token, rng, counts, until, args.undo_rate)
        except (ConnectionClosed, RuntimeError, OSError) as exc:
            counts.errors.append(f"{type(exc).__name__}: {exc}"[:300])
            await asyncio.sleep(0.5)


async def soak(args: argparse.Namespace, server: Daphne) -> list[tracemalloc.Snapshot]:
    tokens = await make_users(server, args.clients, "soak")
    counts = Counts()
    start = time.monotonic()
    until = start + args.minutes * 60
    tasks = [
        asyncio.create_task(client(i, server, token, args, counts, until))
        for i, token in enumerate(tokens)
    ]
    snapshots: list[tracemalloc.Snapshot] = []
    pids = worker_pids(server)
    print(
        "| minute | moves | undos | games | finished | sockets | actions/s | "
        "µs per action: server / clients / rest | "
        f"{' | '.join(f'RSS MB ({pid})' for pid in pids)} |"
    )
    print(f"|{'---|' * (8 + len(pids))}", flush=True)
    last = (0, start, Clocks(server))

    def row() -> None:
        """One row: the counts so far, and the rate and CPU over the interval since the last."""
        nonlocal last
        now = (counts.moves + counts.undos, time.monotonic(), Clocks(server))
        actions, seconds = now[0] - last[0], now[1] - last[1]
        spent = now[2].since(last[2])
        last = now
        per = 1e6 / max(actions, 1)
        rest = spent.machine - spent.server - spent.clients
        cpu = (
            f"{spent.server * per:.0f} / {spent.clients * per:.0f} / {rest * per:.0f}"
            if actions
            else "-"
        )
        sizes = [rss_mb(pid) for pid in pids]
        print(
            f"| {(now[1] - start) / 60:.1f} | {counts.moves} | {counts.undos} | {counts.games} | "
            f"{counts.finished} | {counts.sockets} | {actions / max(seconds, 1e-9):.0f} | {cpu} | "
            f"{' | '.join('gone' if s is None else f'{s:.1f}' for s in sizes)} |",
            flush=True,
        )

    row()
    warm = start + args.warmup * 60
    while time.monotonic() < until:
        await asyncio.sleep(min(args.every, max(0.0, until - time.monotonic())))
        if args.trace and not snapshots and time.monotonic() >= warm:
            snapshots.append(await asyncio.to_thread(server.snapshot))
            print(f"(snapshot 1 at minute {(time.monotonic() - start) / 60:.1f})", flush=True)
        row()
    await asyncio.gather(*tasks)
    if args.trace:
        snapshots.append(await asyncio.to_thread(server.snapshot))
        row()
    if counts.errors:
        print(f"\n{len(counts.errors)} client errors; the first five:")
        for error in counts.errors[:5]:
            print(f"  {error}")
    return snapshots


def print_growth(first: tracemalloc.Snapshot, last: tracemalloc.Snapshot, top: int) -> None:
    ignore = [tracemalloc.Filter(False, tracemalloc.__file__)]
    first, last = first.filter_traces(ignore), last.filter_traces(ignore)
    key = "traceback" if last.traceback_limit > 1 else "lineno"
    grown = last.compare_to(first, key)
    total = sum(stat.size_diff for stat in grown)
    print(f"\nLive allocations grew {total / 2**20:.1f} MB between the snapshots; by line:")
    print("| KB grown | blocks grown | KB now | where |")
    print("|---|---|---|---|")
    for stat in grown[:top]:
        where = " <- ".join(
            f"{f.filename.split('site-packages/')[-1].split(str(HERE.parent) + '/')[-1]}:{f.lineno}"
            for f in stat.traceback
        )
        grown, now = stat.size_diff / 1024, stat.size / 1024
        print(f"| {grown:.0f} | {stat.count_diff} | {now:.0f} | {where} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=20)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--backend", choices=BACKENDS, default="postgres")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--every", type=float, default=60, help="seconds between rows")
    parser.add_argument("--trace", action="store_true", help="tracemalloc in the worker")
    parser.add_argument("--frames", type=int, default=1, help="frames kept per allocation")
    parser.add_argument("--warmup", type=float, default=3, help="minutes before snapshot 1")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--undo-rate", type=float, default=0.08, help="chance that a player's next action undoes"
    )
    args = parser.parse_args()
    if args.trace and args.workers != 1:
        parser.error("--trace traces one worker: use --workers 1")

    with tempfile.TemporaryDirectory(prefix="arena-soak-") as tmp:
        workdir = Path(tmp)
        env = bench_env(args.backend, workdir)
        env["NEW_GAME_THROTTLE_RATE"] = "100000/min"
        if args.trace:
            server: Daphne = TracedWorker(env, workdir, args.frames)
        else:
            server = Daphne(env, workdir / "daphne.log", workers=args.workers)
        print(
            f"soak: {args.backend}, {args.workers} worker(s){' traced' if args.trace else ''}, "
            f"{args.clients} clients ({args.clients // WATCH_EVERY} watching), "
            f"{args.minutes:g} minutes"
        )
        try:
            snapshots = asyncio.run(soak(args, server))
        finally:
            server.stop()
        if len(snapshots) == 2:
            print_growth(*snapshots, args.top)


if __name__ == "__main__":
    main()
