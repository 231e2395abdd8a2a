"""The pushes at midnight (UTC), when a day's boards and open attempts change with no write.

When a day ends, its ranked attempts still open count as they stand: they join the day's board,
and they can no longer be played (`day_over`). No move or finish happens then, so nothing else
would tell the sockets: a board socket would show yesterday's finished entries only, and a game
socket would offer moves that the server refuses. So each server process watches the clock
(`watch`, started with the worker), and at midnight the first process to claim the day
publishes, through the channel layer, the day's boards and a `state` for each attempt that
closed: every socket, on any process, hears each once. The claim is a cache key, shared when
REDIS_URL is set (every process sees the same cache) and the process's own otherwise (there is
then one process). A push's claim lapses after two minutes, for a process that died with it,
and the others try again until one has marked the push done.

After publishing, the watch closes the day (games.records.close_day), beside its other work:
the day's open attempts are counted in their players' records, once; then today's boards are
pushed again, for the all-time pages that follow them (`close_days`). As the process starts it
closes the days that ended while no server ran (after an upgrade from a version that did not
count them: every past day, in the background, one attempt per transaction).

The watch also certifies the next day's challenges ten minutes before midnight (at once, for
a process started later than that), and today's when the process starts (`prepare_day`),
claimed the same way. Made on demand instead, by the first request after midnight, the five
certifications took 7 to 11 s, and every request for the new day waited behind them. A
challenge made early stays out of reach until its day (games.daily.parse_day).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import time
from collections.abc import Callable

from channels.db import database_sync_to_async
from django.conf import settings
from django.core.cache import cache
from django.utils import timezone

from games import clock, daily, events, records, selectors
from games.broadcast import send_to_game_sync, wire
from games.leaderboards import publish_board
from games.models import VARIANT_IDS, DailyChallenge, Game
from games.services import Outcome

log = logging.getLogger(__name__)

GRACE_SECONDS = 1.0  # woken this long after midnight, so "today" is surely the new day
CLAIM_SECONDS = 3 * 24 * 3600  # how long a claimed day stays claimed
# How long a process may push a day's end before another takes the job over: its claim lapses
# then if the process died mid-push (a push takes a second or two; a done job is marked apart).
PUBLISH_LEASE_SECONDS = 120
PREPARE_AHEAD_SECONDS = 600.0  # the next day's challenges are certified this long before it
CLOSE_RETRY_SECONDS = 300.0  # a close of the days before that failed is tried again after this
PUBLISH_RETRY_SECONDS = 30.0  # a day's end whose push failed is pushed again after this…
PUBLISH_TRIES = 10  # …until it has been tried this often: a socket told late is still told


def seconds_until_midnight(now: dt.datetime) -> float:
    """From `now` to the next midnight, UTC."""
    now = now.astimezone(dt.UTC)
    midnight = dt.datetime.combine(now.date() + dt.timedelta(days=1), dt.time(), dt.UTC)
    return (midnight - now).total_seconds()


def publish_day_end(day: dt.date) -> int | None:
    """Tell every socket that `day` is over, unless another process has: its boards, and the
    state of each attempt left open. Returns the frames published: 0 if another process has
    done it, None while another holds the claim without having done it (it may be pushing, or
    have died: its claim lapses after PUBLISH_LEASE_SECONDS). A push that fails gives its
    claim back, so the next try (this process's, or another's) makes it: else a blip of the
    channel layer at midnight left the day's end untold for good."""
    if day >= clock.today():
        raise ValueError(f"{day} is not over yet")

    def publish() -> int:
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

    claim = f"day-end:{day.isoformat()}"
    published = _claimed(claim, publish, lease=PUBLISH_LEASE_SECONDS)
    if not published and not cache.get(_done(claim)):
        return None  # another process has it in hand, or died with it: try again later
    return published


def prepare_day(day: dt.date) -> int:
    """Certify `day`'s challenges now, unless another process has claimed them; returns how
    many it made (those already made, by `make_daily` or on demand, are left as they are)."""

    def prepare() -> int:
        before = DailyChallenge.objects.filter(date=day).count()
        made = {c.variant for c in daily.ensure_day(day)}
        if len(made) < len(VARIANT_IDS):  # the claim goes back: made on demand, or again
            missing = ", ".join(v for v in VARIANT_IDS if v not in made)
            raise RuntimeError(f"not certified: {missing}")
        return len(VARIANT_IDS) - before

    return _claimed(f"day-prepare:{day.isoformat()}", prepare)


def _claimed(claim: str, job: Callable[[], int], lease: int = CLAIM_SECONDS) -> int:
    """Run `job` unless it is done, or another process has claimed it (0 then). A job that
    fails gives its claim back: another process, a retry or the next start may try again. A
    claim lapses after `lease` seconds, for a process that died with it; a job done is marked
    so for CLAIM_SECONDS, apart from its claim."""
    if cache.get(_done(claim)):
        return 0
    if not cache.add(claim, True, timeout=lease):
        return 0
    try:
        result = job()
    except BaseException:
        cache.delete(claim)
        raise
    cache.set(_done(claim), True, timeout=CLAIM_SECONDS)
    return result


def _done(claim: str) -> str:
    return f"{claim}:done"


async def watch() -> None:
    """Count the open attempts of days that ended while no server ran, and prepare today's
    challenges if none are yet (DAILY_PREPARE_AT_START); then prepare each next day shortly
    before it comes, and publish and close each day's end as it comes, for as long as the
    process runs."""
    _start_closing()  # the days that ended while no server ran
    if settings.DAILY_PREPARE_AT_START:  # beside the watch: a start just before midnight
        _keep(asyncio.create_task(_run("Preparing", prepare_day, clock.today())))
    while True:
        now = timezone.now()
        day = now.astimezone(dt.UTC).date()
        midnight = time.monotonic() + seconds_until_midnight(now)
        tomorrow = day + dt.timedelta(days=1)
        if midnight - time.monotonic() > PREPARE_AHEAD_SECONDS:
            await asyncio.sleep(midnight - time.monotonic() - PREPARE_AHEAD_SECONDS)
            await _run("Preparing", prepare_day, tomorrow)
        else:  # started in the day's last minutes: now, beside the wait for midnight's push
            _keep(asyncio.create_task(_run("Preparing", prepare_day, tomorrow)))
        await asyncio.sleep(max(0.0, midnight - time.monotonic()) + GRACE_SECONDS)
        if clock.today() <= day:
            continue  # woken early (the wall clock moved): wait again
        _keep(asyncio.create_task(_publish_end(day)))
        _start_closing()


def close_days(today: dt.date) -> int:
    """Count the open attempts of the days before `today` in their players' records, unless
    another process has claimed it (each attempt is counted once either way: the claim only
    spares the others the walk). Returns the attempts counted (0 if claimed).

    Counted, they change the all-time boards, which have no socket of their own: an all-time
    page follows today's board of its game (web/static/web/players.js), so today's boards are
    pushed again once any was counted, unchanged, as the sign to read the records again.

    The push is owed from the count until it is made: a push that failed (the channel layer
    away for a moment) fails the close, whose retry finds the count claimed and done, and
    counts nothing; so a count marks the push owed, and whichever close comes next makes it.
    Made twice (two processes), it costs a read of an unchanged board."""
    counted = _claimed(f"day-close:{today.isoformat()}", lambda: records.close_days_before(today))
    owed = f"day-close-push:{today.isoformat()}"
    if counted:
        cache.set(owed, True, timeout=CLAIM_SECONDS)
    if cache.get(owed):
        for challenge in DailyChallenge.objects.filter(date=today):
            publish_board(challenge)
        cache.delete(owed)
    return counted


_closing: asyncio.Task | None = None  # this process's close, while it runs (one at a time)


def _start_closing() -> None:
    global _closing
    if _closing is None or _closing.done():
        _closing = _keep(asyncio.create_task(_close_days()))


async def _close_days() -> None:
    """Close the days before today; if that fails (a lost connection), again a few minutes
    later, where it stopped, until it is done."""
    while not await _run("Closing the days before", close_days, clock.today()):
        await asyncio.sleep(CLOSE_RETRY_SECONDS)


async def _publish_end(day: dt.date) -> None:
    """Publish `day`'s end; if that fails (the channel layer or the database unreachable for a
    moment), or another process claimed it and has not marked it done (it may have died with
    the claim, which then lapses: PUBLISH_LEASE_SECONDS), again a little later, a few times.
    Beside the close, which does not wait for it."""
    for _ in range(PUBLISH_TRIES):
        if await _run("Publishing the end of", publish_day_end, day):
            return
        await asyncio.sleep(PUBLISH_RETRY_SECONDS)


async def _run(what: str, job: Callable[[dt.date], int | None], day: dt.date) -> bool:
    """Run a day's job on a thread; log what it did, or its error: tomorrow's job must not die
    of today's. Returns whether it ran to the end (not if another process holds it undone:
    None)."""
    try:
        # Not on asgiref's one thread-sensitive thread: a socket's sign-in (and on SQLite
        # every socket's reads) runs there, and waited seconds behind a certification.
        done = await database_sync_to_async(job, thread_sensitive=False)(day)
    except Exception:  # noqa: BLE001
        log.exception("%s %s failed.", what, day)
        return False
    if done is None:
        log.info("%s %s: claimed by another process, not done yet.", what, day)
        return False
    log.info("%s %s: %d done.", what, day, done)
    return True


_running: set[asyncio.Task] = set()  # held, so a sleeping watch is never collected


def start(loop: asyncio.AbstractEventLoop) -> asyncio.Task:
    """Start `watch` on the server's loop (server.worker)."""
    return _keep(loop.create_task(watch(), name="day-end"))


def _keep(task: asyncio.Task) -> asyncio.Task:
    _running.add(task)
    task.add_done_callback(_running.discard)
    return task
