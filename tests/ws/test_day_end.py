"""At midnight the day's open attempts close and join its board: sockets hear it with no write."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
from types import SimpleNamespace

import pytest
from channels.db import database_sync_to_async

from games import clock, daily, day_end
from games.leaderboards import alltime_board
from games.models import VARIANT_IDS
from tests.conftest import redis_down
from tests.ws.helpers import connect, recv

pytestmark = pytest.mark.django_db(transaction=True)


async def stop(task: asyncio.Task) -> None:
    """Stop a watch, and the jobs it started that are still running."""
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    while day_end._running:
        await asyncio.sleep(0.005)


def test_seconds_until_midnight_is_counted_in_utc() -> None:
    late = dt.datetime(2026, 11, 23, 23, 59, 30, tzinfo=dt.UTC)
    assert day_end.seconds_until_midnight(late) == 30.0
    assert day_end.seconds_until_midnight(late.replace(hour=0, minute=0, second=0)) == 86400.0
    paris = dt.timezone(dt.timedelta(hours=1))  # 00:30 there is 23:30 UTC the day before
    assert day_end.seconds_until_midnight(dt.datetime(2026, 11, 24, 0, 30, tzinfo=paris)) == 1800.0


async def test_day_end_tells_the_board_and_the_open_attempts(user, other_user, move_clock):  # noqa: ANN001
    today = clock.today()
    challenge = await database_sync_to_async(daily.ensure_daily)(today, "portuguese")
    game, _ = await database_sync_to_async(daily.play_daily)(user, challenge)
    board = await connect(f"/ws/leaderboards/{today.isoformat()}/portuguese", other_user)
    assert (await recv(board))["d"]["total"] == 0  # an open attempt is not on today's board
    play = await connect(f"/ws/games/{game.pk}", user)
    before = await recv(play)
    assert before["d"]["legal_moves"] and "day_over" not in before["d"]

    move_clock(1)
    published = await database_sync_to_async(day_end.publish_day_end)(today)
    assert published == 2  # the open attempt's state, the board

    closed = await recv(play)
    assert closed["t"] == "state" and closed["v"] == before["v"]
    assert closed["d"]["day_over"] is True and closed["d"]["legal_moves"] == []
    pushed = await recv(board)
    assert pushed["t"] == "leaderboard" and pushed["d"]["total"] == 1
    entry = pushed["d"]["entries"][0]
    assert (entry["rank"], entry["username"], entry["status"]) == (1, "alice", "playing")

    # Another process waking at the same midnight finds the day claimed: nothing twice.
    assert await database_sync_to_async(day_end.publish_day_end)(today) == 0
    assert await play.receive_nothing(timeout=0.3) and await board.receive_nothing(timeout=0.1)
    await play.disconnect()
    await board.disconnect()


async def _open_attempt_then_todays_board(user, other_user, move_clock):  # noqa: ANN001, ANN202
    """`user`'s Countess attempt left open yesterday; now today, and `other_user`'s socket on
    today's board, its first frame read: (today, the socket, that frame)."""
    yesterday = clock.today()
    challenge = await database_sync_to_async(daily.ensure_daily)(yesterday, "countess")
    await database_sync_to_async(daily.play_daily)(user, challenge)  # left open
    move_clock(1)
    today = clock.today()
    await database_sync_to_async(daily.ensure_daily)(today, "countess")
    board = await connect(f"/ws/leaderboards/{today.isoformat()}/countess", other_user)
    first = await recv(board)
    assert first["t"] == "leaderboard" and first["d"]["total"] == 0
    return today, board, first


async def test_a_close_that_counts_attempts_pushes_todays_boards_for_the_all_time_pages(
    user, other_user, move_clock
):  # noqa: ANN001
    """An attempt left open changes its player's all-time records only when its day is closed,
    after midnight; all-time pages follow today's boards (web/static/web/players.js), so the
    close pushes them again, and only when it counted something."""
    today, board, first = await _open_attempt_then_todays_board(user, other_user, move_clock)

    assert await database_sync_to_async(day_end.close_days)(today) == 1
    pushed = await recv(board)
    assert pushed == first  # today's board is as it was: the push only says "read again"
    alltime = await database_sync_to_async(alltime_board)("countess")
    assert [(e["username"], e["played"]) for e in alltime["entries"]] == [("alice", 1)]

    # Nothing counted (claimed, or nothing left open): nothing pushed.
    assert await database_sync_to_async(day_end.close_days)(today) == 0
    assert await board.receive_nothing(timeout=0.3)
    await board.disconnect()


async def test_a_close_whose_push_failed_pushes_at_its_retry(
    user, other_user, move_clock, monkeypatch
):  # noqa: ANN001
    """The count claimed and done, a push that failed (the channel layer away) was lost: the
    retry found nothing to count, and so nothing to push."""
    today, board, _ = await _open_attempt_then_todays_board(user, other_user, move_clock)

    def layer_away(challenge) -> None:  # noqa: ANN001
        raise ConnectionError("the channel layer is away")

    publish_board = day_end.publish_board
    monkeypatch.setattr(day_end, "publish_board", layer_away)
    with pytest.raises(ConnectionError):
        await database_sync_to_async(day_end.close_days)(today)
    monkeypatch.setattr(day_end, "publish_board", publish_board)
    assert await database_sync_to_async(day_end.close_days)(today) == 0  # counted before
    assert (await recv(board))["t"] == "leaderboard"  # and pushed now
    assert await database_sync_to_async(day_end.close_days)(today) == 0
    assert await board.receive_nothing(timeout=0.3)  # once
    await board.disconnect()


def test_a_day_not_over_is_not_published() -> None:
    with pytest.raises(ValueError):
        day_end.publish_day_end(clock.today())


async def test_the_watch_publishes_the_day_that_just_ended(monkeypatch, move_clock):  # noqa: ANN001
    """The server's loop runs `watch` (server.worker); it sleeps until midnight, then publishes
    the day it slept through, and goes on watching."""
    published: list[dt.date] = []
    monkeypatch.setattr(day_end, "seconds_until_midnight", lambda now: 0.0)
    monkeypatch.setattr(day_end, "GRACE_SECONDS", 0.01)
    monkeypatch.setattr(day_end, "publish_day_end", lambda day: published.append(day) or 0)
    real_today = clock.today()
    move_clock(1)  # the sleep "crossed" midnight
    task = day_end.start(asyncio.get_running_loop())
    while len(published) < 2:
        await asyncio.sleep(0.01)
    assert not task.done()  # still watching
    await stop(task)
    assert published[:2] == [real_today, real_today]


async def test_the_server_worker_starts_the_watch() -> None:
    from server.worker import start_day_end_pushes

    loop = asyncio.get_running_loop()
    start_day_end_pushes(loop)
    (task,) = [t for t in asyncio.all_tasks(loop) if t.get_name() == "day-end"]
    await stop(task)


def test_the_next_day_is_prepared_once_and_stays_out_of_reach(api) -> None:  # noqa: ANN001
    """Certified before midnight, so the new day's first requests wait for nothing; claimed,
    so one process does it; and not playable, nor its board open, before its day."""
    from games.models import DailyChallenge

    tomorrow = clock.today() + dt.timedelta(days=1)
    daily.ensure_daily(tomorrow, "spanish")  # made already (make_daily): left as it is
    assert day_end.prepare_day(tomorrow) == 4
    assert DailyChallenge.objects.filter(date=tomorrow).count() == 5
    assert day_end.prepare_day(tomorrow) == 0  # claimed
    for path in ("play", "leaderboard"):
        method = api.post if path == "play" else api.get
        assert method(f"/api/daily/{tomorrow.isoformat()}/countess/{path}").status_code == 404


async def test_the_watch_prepares_the_next_day_before_midnight(monkeypatch, move_clock):  # noqa: ANN001
    """Asleep until ahead of midnight, it prepares the next day; then it sleeps through
    midnight and publishes the day that ended."""
    done: list[tuple[str, dt.date]] = []
    monkeypatch.setattr(day_end, "PREPARE_AHEAD_SECONDS", 0.05)
    monkeypatch.setattr(day_end, "GRACE_SECONDS", 0.01)
    monkeypatch.setattr(day_end, "seconds_until_midnight", lambda now: 0.0 if done else 0.08)
    monkeypatch.setattr(day_end, "prepare_day", lambda day: done.append(("prepare", day)) or 0)
    monkeypatch.setattr(day_end, "publish_day_end", lambda day: done.append(("end", day)) or 0)
    real_today = clock.today()
    move_clock(1)  # the sleep "crossed" midnight
    task = day_end.start(asyncio.get_running_loop())
    while len(done) < 2:
        await asyncio.sleep(0.005)
    await stop(task)
    assert done[:2] == [("prepare", real_today + dt.timedelta(days=1)), ("end", real_today)]


async def test_a_server_started_in_a_days_last_minutes_prepares_the_next_day_at_once(
    monkeypatch,  # noqa: ANN001
    move_clock,  # noqa: ANN001
) -> None:
    """Started 10 minutes or less before midnight, the watch prepared nothing ahead: the new
    day's first requests waited for its five certifications (7 to 11 s; an end-to-end test
    run that crossed midnight timed out on them). It prepares the next day at once, and does
    not hold the day's end back for it."""
    import threading

    release, done = threading.Event(), []

    def prepare(day: dt.date) -> int:
        release.wait(10)  # a certification that lasts past midnight
        done.append(("prepare", day))
        return 0

    waits = iter([0.05])  # the watch starts 50 ms before midnight, and then sleeps
    monkeypatch.setattr(day_end, "GRACE_SECONDS", 0.01)
    monkeypatch.setattr(day_end, "seconds_until_midnight", lambda now: next(waits, 1e6))
    monkeypatch.setattr(day_end, "prepare_day", prepare)
    monkeypatch.setattr(day_end, "publish_day_end", lambda day: done.append(("end", day)) or 0)
    real_today = clock.today()
    move_clock(1)  # the sleep "crossed" midnight

    async def until(count: int) -> None:
        while len(done) < count:
            await asyncio.sleep(0.005)

    task = day_end.start(asyncio.get_running_loop())
    try:
        await asyncio.wait_for(until(1), timeout=5)
        assert done == [("end", real_today)]  # midnight's push, the preparation still running
        release.set()
        await asyncio.wait_for(until(2), timeout=5)
    finally:
        release.set()
        await stop(task)
    assert done == [("end", real_today), ("prepare", real_today + dt.timedelta(days=1))]


async def test_the_watch_prepares_today_as_the_server_starts(monkeypatch, settings):  # noqa: ANN001
    """So a new server's first visitor does not wait for the day's five certifications."""
    settings.DAILY_PREPARE_AT_START = True
    done: list[dt.date] = []
    monkeypatch.setattr(day_end, "seconds_until_midnight", lambda now: 1e6)
    monkeypatch.setattr(day_end, "prepare_day", lambda day: done.append(day) or 0)
    task = day_end.start(asyncio.get_running_loop())
    while not done:
        await asyncio.sleep(0.005)
    await stop(task)
    assert done == [clock.today()]


async def test_a_days_certification_leaves_the_sockets_thread_free(monkeypatch, settings):  # noqa: ANN001
    """A socket's sign-in (and on SQLite its every read) runs on asgiref's thread-sensitive
    thread: a certification held there for seconds stalled every connect."""
    import threading

    settings.DAILY_PREPARE_AT_START = True
    started, release = threading.Event(), threading.Event()

    def slow_prepare(day: dt.date) -> int:
        started.set()
        release.wait(10)
        return 0

    monkeypatch.setattr(day_end, "prepare_day", slow_prepare)
    monkeypatch.setattr(day_end, "seconds_until_midnight", lambda now: 1e6)
    task = day_end.start(asyncio.get_running_loop())
    try:
        while not started.is_set():
            await asyncio.sleep(0.005)
        assert await asyncio.wait_for(database_sync_to_async(lambda: 42)(), timeout=2) == 42
    finally:
        release.set()
        await stop(task)


def test_a_failed_preparation_leaves_the_day_unclaimed(monkeypatch) -> None:  # noqa: ANN001
    """Else no process would try again for the claim's three days."""
    tomorrow = clock.today() + dt.timedelta(days=1)

    def broken(day: dt.date) -> None:
        raise RuntimeError("the pool died")

    monkeypatch.setattr(daily, "ensure_day", broken)
    with pytest.raises(RuntimeError):
        day_end.prepare_day(tomorrow)
    # One certification failed: the others are made, and the claim is given back all the same.
    made = [SimpleNamespace(variant=v) for v in VARIANT_IDS]
    monkeypatch.setattr(daily, "ensure_day", lambda day: made[1:])
    with pytest.raises(RuntimeError, match="not certified: portuguese"):
        day_end.prepare_day(tomorrow)
    monkeypatch.setattr(daily, "ensure_day", lambda day: made)
    assert day_end.prepare_day(tomorrow) == 5  # claimed and run this time (nothing was stored)


async def test_the_watch_closes_past_days_at_start_and_after_each_midnight(monkeypatch, move_clock):  # noqa: ANN001
    """Attempts left open count in their players' records (games.records): the days that ended
    while no server ran are closed as it starts, beside its other work, and each day after
    its end is published."""
    done: list[tuple[str, dt.date]] = []
    monkeypatch.setattr(day_end, "seconds_until_midnight", lambda now: 0.0)
    monkeypatch.setattr(day_end, "GRACE_SECONDS", 0.01)
    monkeypatch.setattr(day_end, "publish_day_end", lambda day: done.append(("end", day)) or 0)
    monkeypatch.setattr(
        day_end.records, "close_days_before", lambda day: done.append(("close", day)) or 0
    )
    real_today = clock.today()
    task = day_end.start(asyncio.get_running_loop())
    while not done:
        await asyncio.sleep(0.005)
    move_clock(1)  # the sleep "crossed" midnight
    tomorrow = real_today + dt.timedelta(days=1)
    # The end is published and the close runs as tasks of their own, in either order; and the
    # wall clock the watch sleeps on did not move, so it may publish the same end again before
    # it is stopped (a loaded run did: its third entry was the end a second time).
    async with asyncio.timeout(10):
        while not {("end", real_today), ("close", tomorrow)} <= set(done):
            await asyncio.sleep(0.005)
    await stop(task)
    assert done[0] == ("close", real_today)
    assert set(done) == {("close", real_today), ("end", real_today), ("close", tomorrow)}


async def test_a_close_that_failed_is_tried_again(monkeypatch):  # noqa: ANN001
    tries: list[dt.date] = []

    def flaky(day: dt.date) -> int:
        tries.append(day)
        if len(tries) == 1:
            raise RuntimeError("the database went away")
        return 0

    monkeypatch.setattr(day_end, "CLOSE_RETRY_SECONDS", 0.01)
    monkeypatch.setattr(day_end.records, "close_days_before", flaky)
    await asyncio.wait_for(day_end._close_days(), timeout=5)
    assert tries == [clock.today(), clock.today()]


async def test_the_start_up_close_does_not_hold_up_the_days_preparation(monkeypatch, settings):  # noqa: ANN001
    """A server started after an upgrade closes every past day: today's challenges are made
    beside it, not after it."""
    import threading

    settings.DAILY_PREPARE_AT_START = True
    release, prepared = threading.Event(), []
    monkeypatch.setattr(day_end.records, "close_days_before", lambda day: release.wait(10) and 0)
    monkeypatch.setattr(day_end, "prepare_day", lambda day: prepared.append(day) or 0)
    monkeypatch.setattr(day_end, "seconds_until_midnight", lambda now: 1e6)
    task = day_end.start(asyncio.get_running_loop())

    async def preparation() -> None:
        while not prepared:
            await asyncio.sleep(0.005)

    try:
        await asyncio.wait_for(preparation(), timeout=2)  # the close still holds on
    finally:
        release.set()
        await stop(task)


def test_a_day_end_push_that_failed_can_be_made_again(api, move_clock, monkeypatch):  # noqa: ANN001
    """A push that fails (a Redis blip at midnight) gives its claim back: the push used to
    keep it for three days, so no retry and no other process ever told the day's sockets."""
    day = clock.today()
    api.post(f"/api/daily/{day.isoformat()}/portuguese/play")  # an attempt left open
    move_clock(1)
    real_send = day_end.send_to_game_sync
    failed: list[int] = []

    def flaky_send(game_id, frame) -> None:  # noqa: ANN001
        if not failed:
            failed.append(game_id)
            raise redis_down()
        real_send(game_id, frame)

    monkeypatch.setattr(day_end, "send_to_game_sync", flaky_send)
    with pytest.raises(ConnectionError):
        day_end.publish_day_end(day)
    assert day_end.publish_day_end(day) == 2  # the open attempt's state and the board
    assert day_end.publish_day_end(day) == 0  # now claimed, by the push that was made


async def test_the_watch_pushes_a_failed_day_end_again(monkeypatch, move_clock):  # noqa: ANN001
    tries: list[dt.date] = []

    def fails_once(day: dt.date) -> int:
        tries.append(day)
        if len(tries) == 1:
            raise redis_down()
        return 1

    midnights = iter([0.0])  # the watch crosses one midnight, then sleeps on
    monkeypatch.setattr(day_end, "seconds_until_midnight", lambda now: next(midnights, 1e6))
    monkeypatch.setattr(day_end, "GRACE_SECONDS", 0.01)
    monkeypatch.setattr(day_end, "PUBLISH_RETRY_SECONDS", 0.01)
    monkeypatch.setattr(day_end, "publish_day_end", fails_once)
    real_today = clock.today()
    move_clock(1)
    task = day_end.start(asyncio.get_running_loop())
    while len(tries) < 2:
        await asyncio.sleep(0.005)
    await stop(task)
    assert tries == [real_today, real_today]


async def test_a_day_end_claimed_by_a_process_that_died_is_pushed_when_its_claim_lapses(
    monkeypatch, move_clock
):  # noqa: ANN001
    """A process that claimed a day's end and died before pushing it kept the claim for three
    days: every other process saw it claimed and stopped, and no socket was told. A claim now
    lapses after PUBLISH_LEASE_SECONDS, and the others try again until the push is done."""
    from django.core.cache import cache

    day = clock.today()
    move_clock(1)
    pushed: list[dt.date] = []
    monkeypatch.setattr(day_end, "PUBLISH_RETRY_SECONDS", 0.25)  # ten tries: 2.5 s
    monkeypatch.setattr(day_end, "PUBLISH_LEASE_SECONDS", 1)
    monkeypatch.setattr(day_end, "publish_board", lambda challenge: pushed.append(day))
    await database_sync_to_async(daily.ensure_daily)(day, "portuguese")
    # The process that died: its claim, with the lease a push now takes.
    cache.add(f"day-end:{day.isoformat()}", True, timeout=day_end.PUBLISH_LEASE_SECONDS)
    assert await database_sync_to_async(day_end.publish_day_end)(day) is None  # not done
    await asyncio.wait_for(day_end._publish_end(day), timeout=10)
    assert pushed == [day]
    assert await database_sync_to_async(day_end.publish_day_end)(day) == 0  # done: once
