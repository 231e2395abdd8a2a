"""REST requests against real daphne: latency and the server's CPU per request.

    python bench/http_requests.py [--backends sqlite postgres] [--clients 1 16] [--seconds 5]

The server starts as bench/ws_moves.py starts it (`server.serve`, production mode, a new
database per backend; PostgreSQL is BENCH_DATABASE_URL). For each client count N, N users each
send one kind of request after another on a keep-alive connection for `--seconds`: a signed-in
`GET /api/me` (the token's look-up, the player's stats), `GET /api/games/{id}` (their game),
`POST /api/games/{id}/moves` (a random legal move of it, written; a game that ends is
followed by a new one, `POST /api/games`, counted as that turn's request) and
`GET /api/variants` (no database). It prints requests per second, p50/p99 latency, and the
server processes' CPU per request.

Why: bench/leaderboard.py times Django's stack in-process, which leaves out what serving a
request costs around it (daphne, the ASGI handler, the thread a request's sync code runs on,
its database connection). Those were most of a short request's time: before each slot of
server.http_limit had a thread of its own, every request made a thread and opened (and closed)
a database connection.
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import random
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from ws_moves import (  # noqa: E402
    VARIANT,
    Clocks,
    check_stores,
    make_users,
    new_game,
    percentile,
    start_server,
)

# Each kind of request the bench sends (--endpoints), and its row's name in the table.
ENDPOINTS = {
    "me": "GET /api/me",
    "game": "GET /api/games/{id}",
    "move": "POST /api/games/{id}/moves",
    "variants": "GET /api/variants",
}


class Client:
    """One user's keep-alive connection, and their game (its version and legal moves)."""

    def __init__(self, port: int, token: str, game_id: int) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        self.headers = {"Authorization": f"Token {token}", "Content-Type": "application/json"}
        self.game_id = game_id
        self.game = self.call("GET", f"/api/games/{game_id}")
        self.rng = random.Random(game_id)

    def new_game(self) -> None:
        deal = self.rng.randrange(1, 1_000_000)
        self.game = self.call("POST", "/api/games", {"variant": VARIANT, "deal": deal})
        self.game_id = self.game["id"]

    def call(self, method: str, path: str, body: dict | None = None) -> dict:
        data = None if body is None else json.dumps(body)
        self.conn.request(method, path, body=data, headers=self.headers)
        response = self.conn.getresponse()
        payload = response.read()
        if response.status >= 400:
            raise RuntimeError(f"{method} {path}: {response.status} {payload[:200]!r}")
        return json.loads(payload)

    def one(self, endpoint: str) -> None:
        if endpoint == "me":
            self.call("GET", "/api/me")
        elif endpoint == "game":
            self.call("GET", f"/api/games/{self.game_id}")
        elif endpoint == "variants":
            self.call("GET", "/api/variants")
        else:
            legal = self.game["state"]["legal_moves"]
            if not legal or self.game["state"]["status"] != "playing":
                self.new_game()  # won or stuck: the client plays on, on a new deal
                return
            move = self.rng.choice(legal)
            path = f"/api/games/{self.game_id}/moves"
            self.game = self.call("POST", path, {"move": move, "v": self.game["v"]})


def run(clients: list[Client], endpoint: str, seconds: float) -> list[float]:
    """Every client sends `endpoint` requests, each after the last is answered, for `seconds`;
    returns every request's latency in seconds."""
    latencies: list[list[float]] = [[] for _ in clients]
    stop = time.monotonic() + seconds

    def loop(i: int) -> None:
        client, mine = clients[i], latencies[i]
        while time.monotonic() < stop:
            start = time.perf_counter()
            client.one(endpoint)
            mine.append(time.perf_counter() - start)

    threads = [threading.Thread(target=loop, args=(i,)) for i in range(len(clients))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return [x for mine in latencies for x in mine]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backends", nargs="+", default=["sqlite", "postgres"])
    parser.add_argument("--clients", nargs="+", type=int, default=[1, 16])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--endpoints", nargs="+", default=list(ENDPOINTS), choices=list(ENDPOINTS))
    args = parser.parse_args()
    check_stores(args.backends)
    rows = []
    for backend in args.backends:
        with tempfile.TemporaryDirectory() as tmp:
            server = start_server(backend, Path(tmp))
            try:
                tokens = asyncio.run(make_users(server, max(args.clients), backend))
                clients = [
                    Client(server.port, token, new_game(server, token, 1000 + i))
                    for i, token in enumerate(tokens)
                ]
                for n in args.clients:
                    for endpoint in args.endpoints:
                        run(clients[:n], endpoint, 0.5)  # warm: the slots' threads and connections
                        before = Clocks(server)
                        latencies = run(clients[:n], endpoint, args.seconds)
                        spent = Clocks(server).since(before)
                        count = max(1, len(latencies))
                        rows.append(
                            (backend, n, endpoint, len(latencies) / args.seconds,
                             percentile(latencies, 0.5) * 1000, percentile(latencies, 0.99) * 1000,
                             spent.server / count * 1000)
                        )  # fmt: skip
                        print(
                            f"  {backend} N={n} {endpoint}: {len(latencies)} requests", flush=True
                        )
            finally:
                server.stop()
    print(
        f"\nREST requests against daphne ({args.seconds:g} s per row, each client waiting for "
        "each answer on a keep-alive connection; clients in threads of this process)"
    )
    print(
        "| backend | clients | request | requests/s | p50 ms | p99 ms | server CPU ms / request |"
    )
    print("|---|---|---|---|---|---|---|")
    for backend, n, endpoint, rate, p50, p99, cpu in rows:
        cells = (
            backend,
            n,
            ENDPOINTS[endpoint],
            f"{rate:.0f}",
            f"{p50:.2f}",
            f"{p99:.2f}",
            f"{cpu:.2f}",
        )
        print("| " + " | ".join(str(c) for c in cells) + " |")


if __name__ == "__main__":
    main()
