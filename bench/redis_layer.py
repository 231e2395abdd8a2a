"""How fast one process takes cross-process messages off Redis (`server.channel_layer.RedisLayer`).

A move on one daphne process reaches the game's watchers on another through Redis: the sender
adds one message to the other process's key, and that process's reader pops it and hands it to
its sockets' inboxes. That reader is one task per process, so its rate bounds how many watched
moves a second a process can hear from the others. Here a backlog of messages (each the size of
a Spanish `state` frame, for one of 1-3 sockets) is put in a process's key, the reader is
started, and the time and this process's CPU to hand every message on are measured, over a few
rounds. The messages carry their number: the table also says whether every one arrived once and
in order.

And the sender's side: a game's group send after each move, timed and its process CPU taken,
for a game nobody else watches (the mover's socket alone, left out), one watched on the same
process, and one watched from another process.

    python bench/redis_layer.py [--messages 20000] [--rounds 3]

Redis: BENCH_REDIS_URL, else redis://127.0.0.1:6379/1 (flushed).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fresh_stores import fresh_redis_database  # noqa: E402

from server.channel_layer import RedisLayer  # noqa: E402

FRAME = "x" * 1_600  # about a Spanish `state` frame's text


def layer(url: str) -> RedisLayer:
    # The capacity only bounds the backlog put in before the reader starts.
    return RedisLayer(hosts=[{"address": url}], prefix="bench-layer", capacity=10**7, expiry=60)


async def fill(url: str, real: str, channels: list[str], n: int) -> None:
    """Put `n` messages for `channels` in `real`'s key, as another process's group sends do:
    one message naming every member (channels_redis' `__asgi_channel__` list)."""
    sender = layer(url)
    connection = sender.connection(sender.consistent_hash(real))
    key = sender.prefix + real
    step = 500
    for start in range(0, n, step):
        now = time.time()
        await connection.zadd(
            key,
            {
                sender.serialize(
                    {"type": "game.state", "n": i, "text": FRAME, "__asgi_channel__": channels}
                ): now + i * 1e-6
                for i in range(start, min(n, start + step))
            },
        )
    await sender.close_pools()


async def one_round(url: str, n: int, sockets: int) -> dict[str, float]:
    receiver = layer(url)
    channels = [await receiver.new_channel() for _ in range(sockets)]
    real = receiver.non_local_name(channels[0])
    await fill(url, real, channels, n)
    inboxes = [receiver.open_inbox(c) for c in channels]
    cpu, wall = time.process_time(), time.perf_counter()
    seen: list[list[int]] = [[] for _ in channels]
    while len(seen[0]) < n:
        for inbox, got in zip(inboxes, seen, strict=True):
            got.append((await inbox.get())["n"])
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    for channel in channels:
        receiver.close_inbox(channel)
    for task in list(receiver._here().readers.values()):
        task.cancel()
    await receiver.flush()
    in_order = all(got == list(range(n)) for got in seen)
    return {"rate": n / wall, "cpu_us": cpu / n * 1e6, "in_order": in_order}


GROUPS = {
    "nobody else": 0,
    "a watcher here": 1,
    "a watcher on another process": 2,
}


async def group_sends(url: str, n: int, case: int) -> dict[str, float]:
    sender = layer(url)
    mover = await sender.new_channel()
    inbox = sender.open_inbox(mover)  # the process's reader runs, as in a server
    members = [mover]
    if case == 1:
        members.append(await sender.new_channel())
        sender.open_inbox(members[-1])
    elif case == 2:
        members.append("specific.elsewhere!" + "0" * 32)
    for member in members:
        await sender.group_add("game-1", member)
    message = {"type": "game.state", "text": FRAME, "exclude": mover}
    cpu, wall = time.process_time(), time.perf_counter()
    for _ in range(n):
        await sender.group_send("game-1", message)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    assert inbox.empty()
    for task in list(sender._here().readers.values()):
        task.cancel()
    await sender.flush()
    return {"us": wall / n * 1e6, "cpu_us": cpu / n * 1e6}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sockets", type=int, nargs="+", default=[1, 3])
    args = parser.parse_args()
    url = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/1")
    fresh_redis_database(url)
    print(
        f"\nRedis layer: one process's reader handing on a backlog of {args.messages:,} messages "
        f"({len(FRAME):,} bytes each), median of {args.rounds} rounds"
    )
    print("| sockets per message | messages/s | process CPU µs per message | all, once, in order |")
    print("|---|---|---|---|")
    for sockets in args.sockets:
        rounds = [asyncio.run(one_round(url, args.messages, sockets)) for _ in range(args.rounds)]
        rate = statistics.median(r["rate"] for r in rounds)
        cpu = statistics.median(r["cpu_us"] for r in rounds)
        ok = "yes" if all(r["in_order"] for r in rounds) else "NO"
        print(f"| {sockets} | {rate:,.0f} | {cpu:.1f} | {ok} |")
    sends = args.messages // 4
    print(
        f"\nRedis layer: a game's group send after a move, {sends:,} sends, "
        f"median of {args.rounds} rounds"
    )
    print("| the game's other sockets | µs per send | process CPU µs per send |")
    print("|---|---|---|")
    for name, case in GROUPS.items():
        rounds = [asyncio.run(group_sends(url, sends, case)) for _ in range(args.rounds)]
        wall = statistics.median(r["us"] for r in rounds)
        cpu = statistics.median(r["cpu_us"] for r in rounds)
        print(f"| {name} | {wall:.0f} | {cpu:.0f} |")


if __name__ == "__main__":
    main()
