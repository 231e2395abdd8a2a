"""The pushes at midnight (UTC), when a day's boards and open attempts change with no write.

When a day ends, its ranked attempts still open count as they stand: they join the day's board,
and they can no longer be played (`day_over`). No move or finish happens then, so nothing else
would tell the sockets: a board socket would show yesterday's finished entries only, and a game
socket would offer moves that the server refuses. So each server process watches the clock
(`watch`, started with the worker), and at midnight the first process to claim the day
publishes, through the channel layer, the day's boards and a `state` for each attempt that
closed: every socket, on any process, hears each once. The claim is a cache key, shared when
REDIS_URL is set (every process sees the same cache) and the process's own otherwise (there is
then one process).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging

from channels.db import database_sync_to_async
from django.core.cache import cache
from django.utils import timezone

from games import clock, events, selectors
from games.broadcast import send_to_game_sync, wire
from games.leaderboards import publish_board
from games.models import DailyChallenge, Game
from games.services import Outcome

log = logging.getLogger(__name__)

GRACE_SECONDS = 1.0  # woken this long after midnight, so "today" is surely the new day
CLAIM_SECONDS = 3 * 24 * 3600  # how long a claimed day stays claimed


def seconds_until_midnight(now: dt.datetime) -> float:
    """From `now` to the next midnight, UTC."""
    now = now.astimezone(dt.UTC)
    midnight = dt.datetime.combine(now.date() + dt.timedelta(days=1), dt.time(), dt.UTC)
    return (midnight - now).total_seconds()


def publish_day_end(day: dt.date) -> int:
    """Tell every socket that `day` is over, unless another process has: its boards, and the
    state of each attempt left open. Returns the frames published (0 if already claimed)."""
    if day >= clock.today():
        raise ValueError(f"{day} is not over yet")
    if not cache.add(f"day-end:{day.isoformat()}", True, timeout=CLAIM_SECONDS):
        return 0
    published = 0
    for challenge in DailyChallenge.objects.filter(date=day):
        open_attempts = selectors.with_last_move(
            Game.objects.filter(
                daily=challenge, ranked=True, status=Game.Status.PLAYING
            ).select_related("deal", "daily")
        )
        for game in open_attempts:
            send_to_game_sync(game.pk, wire(events.state_frame(Outcome(game=game))))
            published += 1
        publish_board(challenge)
        published += 1
    return published


async def watch() -> None:
    """Publish each day's end as it comes, for as long as the process runs."""
    while True:
        now = timezone.now()
        day = now.astimezone(dt.UTC).date()
        await asyncio.sleep(seconds_until_midnight(now) + GRACE_SECONDS)
        if clock.today() <= day:
            continue  # woken early (the wall clock moved): wait again
        try:
            published = await database_sync_to_async(publish_day_end)(day)
        except Exception:  # noqa: BLE001 - tomorrow's push must not die of today's error
            log.exception("Publishing the end of %s failed.", day)
        else:
            log.info("End of %s: %d frames published.", day, published)


_running: set[asyncio.Task] = set()  # held, so a sleeping watch is never collected


def start(loop: asyncio.AbstractEventLoop) -> asyncio.Task:
    """Start `watch` on the server's loop (server.worker)."""
    task = loop.create_task(watch(), name="day-end")
    _running.add(task)
    task.add_done_callback(_running.discard)
    return task
