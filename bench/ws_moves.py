"""WebSocket move throughput and latency against real daphne, beside a bare echo consumer.

    python bench/ws_moves.py [--clients 1 10 100] [--seconds 10] [--rounds 3]
                             [--backends sqlite postgres postgres-redis] [--workers N]

For each backend it starts the server as `make run` does (server.serve): `sqlite` and
`postgres` on one daphne process with the in-process channel layer, `postgres-redis` with
Redis (BENCH_REDIS_URL, default redis://127.0.0.1:6379/1) and --workers daphne processes
(default: one per core) on one port. PostgreSQL is BENCH_DATABASE_URL, default
postgres://postgres@127.0.0.1:5432/arena_bench, made anew for each backend. Then for each
client count N: N users each play a real game over their own socket (send a random legal
move, wait for the `state` frame, repeat; a game that ends, won or stuck, is followed by the
player's next one on a new socket, so N play all window long), and, on the same server in the
same run, N sockets send a frame of the same size to /ws/echo and wait for it back (the
ceiling). The clock of a cell
starts once all N sockets are open (`StartLine`). It prints moves (or echoes) per second,
p50/p99 latency from send to reply, and the server processes' CPU time per message (which,
unlike the rates, hardly depends on what else the machine is running). A second table splits
each message's CPU between the server, the clients and the rest of the machine (the database),
with how many of the machine's cores were busy and how many its host took (steal): when the
machine is saturated, the rates are set by the sum, not by the server alone.

Each cell runs `--rounds` times, echo and moves alternating, with the same users and new games
each round. This machine's share of its host varies from one ten-second window to the next
(steal time reached 0.7 of its 2 cores in one window): one echo window beside one moves window
gave ratios from 29 to 69 % for the same code. The table shows the median round, by the ratio
of its moves to the echo just before it, and the range of that ratio over the rounds;
latencies are pooled over every round.

The per-socket rate limit and the sign-up throttle are raised for the run so the numbers measure
the server, not the limiter. Clients run in this process, on the same 2 cores as the server.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fresh_stores import fresh_pg_database, fresh_redis_database  # noqa: E402
from websockets.asyncio.client import connect  # noqa: E402

from tests.live_server import Daphne, migrate, server_env  # noqa: E402

VARIANT = "spanish"  # rarely stuck: long games, no re-deals during a run
BACKENDS = ("sqlite", "postgres", "postgres-redis")


def start_server(backend: str, workdir: Path, workers: int = 1) -> Daphne:
    return Daphne(bench_env(backend, workdir), workdir / f"daphne-{backend}.log", workers=workers)


def bench_pg_url() -> str:
    return os.environ.get("BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/arena_bench")


def bench_redis_url() -> str:
    return os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/1")


def check_stores(backends: list[str]) -> None:
    """Before any cell runs, the stores the backends need: a missing PostgreSQL or Redis
    stops the bench at once with its line (bench/fresh_stores.py), not after minutes of the
    SQLite cells."""
    if any(b.startswith("postgres") for b in backends):
        fresh_pg_database(bench_pg_url())
    if any(b.endswith("redis") for b in backends):
        fresh_redis_database(bench_redis_url())


def bench_env(backend: str, workdir: Path) -> dict[str, str]:
    """The server's environment for `backend`, on a new, migrated database."""
    extra = {
        "WS_RATE_PER_SECOND": "100000",
        "WS_RATE_BURST": "100000",
        # Production mode: DEBUG=1 wraps every cursor call in query logging.
        "DEBUG": "0",
        "WS_ECHO": "1",  # the ceiling's socket, off in production mode unless asked for
        "SECRET_KEY": "bench-only-secret-key-not-for-production-0123456789",
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "SECURE_SSL_REDIRECT": "0",
        "LOG_LEVEL": "WARNING",
        "AUTH_THROTTLE_RATE": "100000/min",
        "REGISTER_THROTTLE_RATE": "100000/min",
        # A cell signs up its users and starts their games in parallel from one address.
        "HTTP_REQUESTS_PER_CLIENT": "0",
    }
    env = server_env(workdir / "bench.sqlite3", **extra)
    env.pop("REDIS_URL", None)
    if backend.startswith("postgres"):
        env["DATABASE_URL"] = bench_pg_url()
        fresh_pg_database(env["DATABASE_URL"])
    if backend.endswith("redis"):
        env["REDIS_URL"] = bench_redis_url()
        fresh_redis_database(env["REDIS_URL"])
    migrate(env)
    return env


def server_seconds(server: Daphne) -> tuple[float, float]:
    """The server's processes so far: user + system CPU time (/proc/PID/stat), and the time
    their threads spent ready to run but waiting for a core (/proc/PID/task/TID/schedstat, its
    second field). Linux; NaN elsewhere. A process busy less than a whole core may be short of
    work, or pushed off its core by the database and the clients: the wait tells the two
    apart."""
    ticks, waited = 0, 0
    for pid in server.pids():
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            tasks = list(Path(f"/proc/{pid}/task").iterdir())
        except OSError:
            return float("nan"), float("nan")
        ticks += int(fields[11]) + int(fields[12])
        for task in tasks:
            try:
                waited += int((task / "schedstat").read_text().split()[1])
            except (OSError, IndexError, ValueError):
                continue  # a thread that ended meanwhile
    return ticks / os.sysconf("SC_CLK_TCK"), waited / 1e9


def machine_cpu_seconds() -> tuple[float, float]:
    """The whole machine's busy and stolen CPU time so far, over all cores (Linux /proc/stat;
    NaN elsewhere). Steal is time this VM was ready to run and its host ran something else."""
    try:
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    except (OSError, ValueError):
        return float("nan"), float("nan")
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields
    tick = os.sysconf("SC_CLK_TCK")
    return (user + nice + system + irq + softirq) / tick, steal / tick


class Clocks:
    """CPU time so far: the server's processes (and their wait for a core), the clients
    (this process), the machine."""

    def __init__(self, server: Daphne) -> None:
        self.server, self.server_wait = server_seconds(server)
        times = os.times()
        self.clients = times.user + times.system
        self.machine, self.steal = machine_cpu_seconds()

    def since(self, start: Clocks) -> Clocks:
        spent = object.__new__(Clocks)
        for name in ("server", "server_wait", "clients", "machine", "steal"):
            setattr(spent, name, getattr(self, name) - getattr(start, name))
        return spent


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def make_users(server: Daphne, n: int, tag: str) -> list[str]:
    """N new users' tokens (signing up hashes a password: the slow part of a cell's setup)."""

    def setup(i: int) -> str:
        name = f"b{tag}{i}-{uuid.uuid4().hex[:12]}"
        status, body = server.call(
            "POST", "/api/auth/register", {"username": name, "password": "bench-pass-123"}
        )
        assert status == 201, body
        return body["token"]

    return await asyncio.gather(*(asyncio.to_thread(setup, i) for i in range(n)))


async def new_games(
    server: Daphne, tokens: list[str], first_deal: int, per_client: int = 1
) -> list[list[int]]:
    """`per_client` new games for each user, on deals first_deal + k * N + i: a round starts
    from fresh deals, never from a stuck game."""

    def setup(i: int, token: str) -> list[int]:
        n = len(tokens)
        return [new_game(server, token, first_deal + k * n + i) for k in range(per_client)]

    return await asyncio.gather(*(asyncio.to_thread(setup, i, t) for i, t in enumerate(tokens)))


def new_game(server: Daphne, token: str, deal: int) -> int:
    status, game = server.call("POST", "/api/games", {"variant": VARIANT, "deal": deal}, token)
    assert status == 201, game
    return game["id"]


def games_per_client(n: int) -> int:
    """Games made for each of N clients before a moves window: about as many as they finish
    in one (random play ends a Spanish game, won or stuck, after some 500 to 1,000 moves;
    one client makes about 1,500 moves a second, ten about 4,000, a hundred about 10,000).
    A client that finishes them all makes another during the window."""
    return -(-30 // n) + 2


class StartLine:
    """Holds the clients of a cell until all N sockets are open, then starts its clock.

    Opening a socket is not playing on it: a hundred sockets opening at once (a token check and
    a first state each, on the server's database threads) slowed the first second of every
    cell, and its moves were in the latencies. Until 2026-11-22 the clock started before the
    connects; the README's tables say which way each was measured.
    """

    limit = float("inf")  # messages per client; bench/ws_instructions.py counts instead
    open_timeout = 10.0  # seconds for a socket's handshake (websockets' default)

    def __init__(self, server: Daphne, n: int, seconds: float) -> None:
        self.server, self.n, self.seconds = server, n, seconds
        self.arrived = 0
        self.go = asyncio.Event()
        self.created = time.perf_counter()

    async def wait(self) -> float:
        """Wait for the others; returns when to stop."""
        self.arrived += 1
        if self.arrived == self.n:
            self.started = time.perf_counter()
            self.clocks = Clocks(self.server)
            self.until = self.started + self.seconds
            self.go.set()
        await self.go.wait()
        return self.until

    async def finish(self) -> None:
        """A client is done, its socket still open (closing it is not part of the window)."""


async def play_client(
    server: Daphne,
    token: str,
    game_ids: list[int],
    start: StartLine,
    latencies: list[float],
    rng: random.Random,
    tally: GameTally,
    play_on: bool,
) -> int:
    """One player: a random legal move, then wait for its `state`, over and over. A game that
    ends (won, or stuck) is followed by the next of `game_ids`, on a socket of its own, as a
    player starts another (if `play_on`): random play ends most games within a window,
    and a player who stopped there left the window's last seconds to fewer than N clients
    (77 to 86 of 100 games ended inside each 10 s window of session 53's target cell)."""
    headers = {"Authorization": f"Token {token}"}
    games = iter(game_ids)
    done = 0

    async def open_next() -> tuple[Any, dict]:
        gid = next(games, None)
        if gid is None:  # all made before the window are played: another, as a player would
            gid = await asyncio.to_thread(new_game, server, token, 10**9 + rng.randrange(10**9))
            tally.made += 1
        ws = await connect(
            f"{server.ws}/ws/games/{gid}",
            additional_headers=headers,
            max_size=2**20,
            open_timeout=start.open_timeout,
        )
        return ws, orjson.loads(await ws.recv(decode=False))

    ws, state = await open_next()
    try:
        until = await start.wait()
        while time.perf_counter() < until and done < start.limit:
            moves = state["d"]["legal_moves"]
            if state["d"]["status"] != "playing" or not moves:
                tally.ended += 1
                if not play_on:
                    break
                await ws.close()
                ws, state = await open_next()
                continue
            frame = {"t": "move", "d": {"move": rng.choice(moves), "v": state["v"], "id": done}}
            sent = time.perf_counter()
            await ws.send(orjson.dumps(frame), text=True)
            while True:
                reply = orjson.loads(await ws.recv(decode=False))
                if reply["t"] == "state":
                    break
                if reply["t"] == "error":
                    raise RuntimeError(reply)
            latencies.append(time.perf_counter() - sent)
            state = reply
            done += 1
        await start.finish()
    finally:
        await ws.close()
    return done


async def echo_client(
    server: Daphne, token: str, start: StartLine, latencies: list[float], payload: str
) -> int:
    headers = {"Authorization": f"Token {token}"}
    done = 0
    async with connect(
        f"{server.ws}/ws/echo", additional_headers=headers, open_timeout=start.open_timeout
    ) as ws:
        # One echo before the window, as a game client waits for its first `state`: the socket
        # is then set up on the server too (its sign-in's group, a look at its credential),
        # which otherwise ran inside the echo window and not inside the moves window.
        await ws.send(payload)
        await ws.recv()
        until = await start.wait()
        while time.perf_counter() < until and done < start.limit:
            sent = time.perf_counter()
            await ws.send(payload)
            await ws.recv()
            latencies.append(time.perf_counter() - sent)
            done += 1
        await start.finish()
    return done


class Window:
    """One timed window of a cell: how many messages, in how long, at what CPU cost."""

    def __init__(
        self, server: Daphne, start: StartLine, count: int, games: GameTally | None = None
    ) -> None:
        self.count = count
        self.games = games
        self.elapsed = time.perf_counter() - start.started
        self.cpu = Clocks(server).since(start.clocks)
        self.opening = start.started - start.created

    @property
    def rate(self) -> float:
        return self.count / self.elapsed if self.elapsed else float("nan")


class GameTally:
    """A moves window's games: how many ended in it, and how many were made in it."""

    def __init__(self) -> None:
        self.ended = 0
        self.made = 0


async def run_moves(
    server: Daphne,
    tokens: list[str],
    seconds: float,
    first_deal: int,
    latencies: list[float],
    line: Callable[[Daphne, int, float], StartLine] = StartLine,
    play_on: bool = True,
) -> Window:
    """One moves window. `play_on`: a client whose game ends plays its next (play_client)."""
    per_client = games_per_client(len(tokens)) if play_on else 1
    games = await new_games(server, tokens, first_deal, per_client)
    start = line(server, len(tokens), seconds)
    tally = GameTally()
    counts = await asyncio.gather(
        *(
            play_client(
                server, tok, ids, start, latencies, random.Random(first_deal + i), tally, play_on
            )
            for i, (tok, ids) in enumerate(zip(tokens, games, strict=True))
        )
    )
    return Window(server, start, sum(counts), tally)


# A frame the size of a move frame out and a state frame back, roughly.
ECHO_PAYLOAD = json.dumps(
    {"t": "move", "d": {"move": "t3-t10", "v": 123, "id": 45}, "pad": "x" * 900}
)


async def run_echo(
    server: Daphne,
    tokens: list[str],
    seconds: float,
    latencies: list[float],
    line: Callable[[Daphne, int, float], StartLine] = StartLine,
) -> Window:
    start = line(server, len(tokens), seconds)
    counts = await asyncio.gather(
        *(echo_client(server, tok, start, latencies, ECHO_PAYLOAD) for tok in tokens)
    )
    return Window(server, start, sum(counts))


class Cell:
    """A cell's rounds, echo and moves alternating, and what the table shows of them."""

    def __init__(self) -> None:
        self.rounds: list[tuple[Window, Window]] = []
        self.echo_latencies: list[float] = []
        self.move_latencies: list[float] = []

    def ratios(self) -> list[float]:
        return [moves.rate / echo.rate for echo, moves in self.rounds]

    def median_round(self) -> tuple[Window, Window]:
        """The round whose moves/echo ratio is the median (the lower one of an even count)."""
        ranked = sorted(self.rounds, key=lambda r: r[1].rate / r[0].rate)
        return ranked[(len(ranked) - 1) // 2]

    @staticmethod
    def cpu_per(windows: list[Window], part: str = "server") -> float:
        """CPU seconds per message of one part (a `Clocks` field), over these windows."""
        count = sum(w.count for w in windows)
        return sum(getattr(w.cpu, part) for w in windows) / count if count else float("nan")

    def cpu_row(self, label: str, n: int) -> str:
        """Where the machine's CPU went, per message, and how busy the machine was: the
        server, the clients, the rest (PostgreSQL, Redis and anything else running), in µs;
        the server's running and waiting (ready, but with no core free) cores, and the
        machine's busy and stolen cores, over the windows' time."""
        cells = []
        for kind, windows in (
            ("echo", [e for e, _ in self.rounds]),
            ("move", [m for _, m in self.rounds]),
        ):
            server, clients, machine = (
                self.cpu_per(windows, part) * 1e6 for part in ("server", "clients", "machine")
            )
            elapsed = sum(w.elapsed for w in windows)
            running, waiting, busy, steal = (
                sum(getattr(w.cpu, part) for w in windows) / elapsed
                for part in ("server", "server_wait", "machine", "steal")
            )
            cells.append(
                f"{kind} | {server:.0f} | {clients:.0f} | {machine - server - clients:.0f} "
                f"| {running:.2f} | {waiting:.2f} | {busy:.2f} | {steal:.2f}"
            )
        return "\n".join(f"| {label} | {n} | {c} |" for c in cells)

    def row(self, label: str, n: int) -> str:
        echo, moves = self.median_round()
        ratios = self.ratios()
        el, ml = self.echo_latencies, self.move_latencies
        cpu_e = self.cpu_per([e for e, _ in self.rounds])
        cpu_m = self.cpu_per([m for _, m in self.rounds])
        return (
            f"| {label} | {n} | {echo.rate:.0f} | {percentile(el, 0.5) * 1000:.1f} "
            f"| {percentile(el, 0.99) * 1000:.1f} | {moves.rate:.0f} "
            f"| {percentile(ml, 0.5) * 1000:.1f} | {percentile(ml, 0.99) * 1000:.1f} "
            f"| {moves.rate / echo.rate:.0%} | {min(ratios):.0%}–{max(ratios):.0%} "
            f"| {cpu_e * 1e6:.0f} / {cpu_m * 1e6:.0f} |"
        )


def run_cell(server: Daphne, n: int, seconds: float, rounds: int) -> Cell:
    cell = Cell()
    echo_users = asyncio.run(make_users(server, n, "e"))
    move_users = asyncio.run(make_users(server, n, "m"))
    for r in range(rounds):
        echo = asyncio.run(run_echo(server, echo_users, seconds, cell.echo_latencies))
        first_deal = 1000 + r * n * games_per_client(n)
        moves = asyncio.run(run_moves(server, move_users, seconds, first_deal, cell.move_latencies))
        cell.rounds.append((echo, moves))
        print(
            f"    round {r + 1}: echo {echo.rate:.0f}/s, moves {moves.rate:.0f}/s "
            f"({moves.rate / echo.rate:.0%}; server CPU {echo.cpu.server / echo.count * 1e6:.0f}"
            f" / {moves.cpu.server / moves.count * 1e6:.0f} µs a message; games ended "
            f"{moves.games.ended}, made in the window {moves.games.made}; all sockets open in "
            f"{echo.opening * 1000:.0f} / {moves.opening * 1000:.0f} ms)",
            file=sys.stderr,
            flush=True,
        )
    return cell


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 10, 100])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument(
        "--rounds", type=int, default=3, help="echo and moves windows per cell, alternating"
    )
    parser.add_argument("--backends", nargs="+", default=list(BACKENDS), choices=list(BACKENDS))
    parser.add_argument(
        "--workers", type=int, default=os.cpu_count() or 1, help="daphne processes with Redis"
    )
    args = parser.parse_args()
    check_stores(args.backends)
    rows = []
    for backend in args.backends:
        workers = args.workers if backend.endswith("redis") else 1
        with tempfile.TemporaryDirectory() as tmp:
            server = start_server(backend, Path(tmp), workers)
            try:
                for n in args.clients:
                    print(f"  {backend} N={n}:", file=sys.stderr, flush=True)
                    cell = run_cell(server, n, args.seconds, args.rounds)
                    label = f"{backend} ×{workers}"
                    rows.append((cell.row(label, n), cell.cpu_row(label, n)))
            finally:
                server.stop()
    print()
    print(
        f"WebSocket moves vs echo ceiling ({args.rounds} rounds of {args.seconds:.0f} s windows "
        f"per cell, echo and moves alternating, from the moment all sockets are open; the "
        f"median round by moves/echo; latencies over all rounds; {VARIANT} games, clients "
        "in-process on the same machine; ×N: daphne processes)"
    )
    header = (
        "| backend | clients | echo msg/s | echo p50 ms | echo p99 ms | moves/s "
        "| move p50 ms | move p99 ms | moves/echo | range over rounds "
        "| server CPU µs per echo / move |"
    )
    print(header)
    print("|" + "---|" * 11)
    for row, _ in rows:
        print(row)
    print()
    print(
        "Where the CPU went, per message over all rounds (µs: the server's processes, the "
        "clients, the rest of the machine: the database and anything else); the server's "
        "cores running and waiting for a core (ready to run, none free), and the machine's "
        f"busy and stolen cores, in the windows, of its {os.cpu_count()})"
    )
    print(
        "| backend | clients | window | server µs | clients µs | rest µs "
        "| server running | server waiting | busy cores | steal cores |"
    )
    print("|" + "---|" * 10)
    for _, cpu_row in rows:
        print(cpu_row)


if __name__ == "__main__":
    main()
