"""Leaderboard endpoint latency with 100,000 finished games and 10,000 users.

    python bench/leaderboard.py [--backends sqlite postgres] [--requests 300]

Loads the data set into a fresh database per backend (SQLite file; PostgreSQL database from
BENCH_LB_DATABASE_URL, default postgres://postgres@127.0.0.1:5432/arena_bench_lb, recreated),
then times requests through Django's full stack (middleware, auth, DRF, JSON) in-process:
the daily board of a challenge that all 10,000 users played (first page, a deep page, and the
caller's own entry), the all-time board, and a profile. Prints p50/p99 per endpoint.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from fresh_stores import fresh_pg_database

ROOT = Path(__file__).resolve().parent.parent
USERS = 10_000
GAMES = 100_000
DAYS = 10  # 10 days x 5 variants = 50 challenges; one of them is played by every user


def child(backend: str, requests: int) -> None:
    """Runs in a subprocess whose environment picks the database."""
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "server.settings")
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection
    from django.test import Client
    from django.utils import timezone

    from accounts.models import User
    from games import clock
    from games.engine import new_game
    from games.models import VARIANT_IDS, DailyChallenge, Deal, Game, VariantRecord

    call_command("migrate", verbosity=0)
    rng = random.Random(7)
    t0 = time.perf_counter()
    users = User.objects.bulk_create(
        [User(username=f"lb{i}", password="!") for i in range(USERS)], batch_size=5000
    )
    if users[0].pk is None:  # SQLite before 3.35 cannot return ids from bulk inserts
        users = list(User.objects.order_by("pk"))
    today = clock.today()
    challenges = []
    for d in range(DAYS):
        for v in VARIANT_IDS:
            deal = Deal.objects.create(variant=v, number=1 + d * 10 + VARIANT_IDS.index(v))
            challenges.append(
                DailyChallenge.objects.create(
                    date=today - dt.timedelta(days=d),
                    variant=v,
                    deal=deal,
                    winnable=True,
                    par_cards=52,
                    par_moves=90,
                    line=[],
                )
            )
    hot = challenges[0]  # today, portuguese: every user has an entry
    now = timezone.now()
    games, made = [], 0
    per_other = (GAMES - USERS) // (len(challenges) - 1)
    plan = [(hot, users)] + [(c, rng.sample(users, per_other)) for c in challenges[1:]]
    for challenge, players in plan:
        # Each row carries a game's stored position, as a played game's does (about 0.5 KB of
        # JSON): with `{}` the board's scans read a third of the pages they read in production.
        state = new_game(challenge.variant, challenge.deal.number).to_dict()
        for u in players:
            cards = rng.choice([52] * 3 + list(range(10, 52)))
            games.append(
                Game(
                    owner=u,
                    deal=challenge.deal,
                    daily=challenge,
                    ranked=True,
                    state=state,
                    status="won" if cards == 52 else "stuck",
                    foundation_cards=cards,
                    version=rng.randint(60, 250),
                    seconds=rng.randint(60, 3000),
                    finished_at=now - dt.timedelta(seconds=rng.randint(0, 80000)),
                )
            )
            made += 1
        if len(games) >= 10_000:
            Game.objects.bulk_create(games, batch_size=5000)
            games = []
    Game.objects.bulk_create(games, batch_size=5000)
    records = [
        VariantRecord(
            user=u,
            variant=v,
            played=rng.randint(1, 40),
            wins=rng.randint(0, 30),
            best_par_ratio=rng.random(),
            best_streak=rng.randint(0, 20),
        )
        for u in users
        for v in [*VARIANT_IDS, "all"]
    ]
    VariantRecord.objects.bulk_create(records, batch_size=5000)
    if connection.vendor == "postgresql":
        with connection.cursor() as cur:
            cur.execute("ANALYZE")
    load = time.perf_counter() - t0
    # The collector as the server sets it at its start (server.gc_tuning). Without it, full
    # passes over this process's heap, the loader's garbage included, stopped requests for
    # about 50 ms each and made much of the p99: spikes the server's frozen heap does not have.
    from server.gc_tuning import tune_collector

    del games, records, plan
    tune_collector()
    me = users[USERS // 2]
    client = Client()
    client.force_login(me)
    date = hot.date.isoformat()
    endpoints = {
        "daily board, page 1 (+ me)": f"/api/daily/{date}/portuguese/leaderboard",
        "daily board, page 250": f"/api/daily/{date}/portuguese/leaderboard?page=250",
        "all-time board, page 1": "/api/leaderboards/portuguese",
        "all-time board, page 250": "/api/leaderboards/portuguese?page=250",
        "profile": f"/api/users/{me.username}",
    }
    print(
        f"{backend}: loaded {Game.objects.count()} games, {User.objects.count()} users in "
        f"{load:.0f}s",
        file=sys.stderr,
    )
    for name, url in endpoints.items():
        for _ in range(20):
            assert client.get(url).status_code == 200
        times = []
        for _ in range(requests):
            t = time.perf_counter()
            res = client.get(url)
            times.append((time.perf_counter() - t) * 1000)
            assert res.status_code == 200
        times.sort()
        p99 = times[min(len(times) - 1, int(0.99 * len(times)))]
        print(f"| {backend} | {name} | {statistics.median(times):.2f} | {p99:.2f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backends", nargs="+", default=["sqlite", "postgres"])
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.requests)
        return
    url = os.environ.get(
        "BENCH_LB_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/arena_bench_lb"
    )
    if "postgres" in args.backends:
        fresh_pg_database(url)  # before any backend runs: a missing PostgreSQL says so at once
    print(
        f"Leaderboard endpoints, {GAMES:,} finished games, {USERS:,} users "
        f"({args.requests} requests each, Django test client in-process)"
    )
    print("| backend | endpoint | p50 ms | p99 ms |")
    print("|---|---|---|---|")
    for backend in args.backends:
        env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL"}}
        env["LOG_LEVEL"] = "WARNING"
        with tempfile.TemporaryDirectory() as tmp:
            env["SQLITE_PATH"] = str(Path(tmp) / "lb.sqlite3")
            if backend == "postgres":
                fresh_pg_database(url)
                env["DATABASE_URL"] = url
            subprocess.run(
                [sys.executable, __file__, "--child", backend, "--requests", str(args.requests)],
                env=env,
                check=True,
            )


if __name__ == "__main__":
    main()
