"""Group commit of socket moves: `services.play_moves` and the `MoveBatcher` that feeds it."""

from __future__ import annotations

import asyncio
import functools
import os
import subprocess
import sys

import orjson
import pytest
from django.core.management import call_command
from django.db import DatabaseError, transaction

from games import engine, move_batcher, services, state_cache
from games.models import Game, Move
from games.move_batcher import MoveBatcher, write_batch
from games.services import MoveRequest
from server.errors import AppError
from tests.batches import EXPECTED, kinds, legal, mixed_batch
from tests.conftest import redis_down


@pytest.mark.django_db
def test_a_batch_plays_each_move_as_its_own_transaction_would(user, other_user):  # noqa: ANN001
    batch = mixed_batch(user, other_user)
    a, b, first, after_first = batch.a, batch.b, batch.first, batch.second
    results = services.play_moves(batch.requests)
    assert kinds(results, lambda outcome: outcome.game.version) == EXPECTED
    assert results[3].extra["v"] == 2 and results[1].extra["v"] == 0
    # Each outcome is the game as it stood right after its own move.
    assert results[0].game.state != results[2].game.state
    assert results[0].move == first and results[2].move == after_first
    a.refresh_from_db()
    b.refresh_from_db()
    assert (a.version, b.version) == (2, 1)
    assert list(Move.objects.filter(game=a).values_list("n", "move")) == [
        (1, first),
        (2, after_first),
    ]
    assert not Move.objects.filter(game=batch.theirs).exists()
    call_command("replay_verify")  # raises if a stored state differs from its replay


@pytest.mark.django_db
def test_a_failed_batch_is_replayed_one_move_at_a_time(user, monkeypatch):  # noqa: ANN001
    game = services.start_practice(user, "portuguese", 1)
    move = legal(game)[0]

    fails_once = _first_call_fails(services._persist, DatabaseError("deadlock detected"))
    monkeypatch.setattr(services, "_persist", fails_once)
    results = write_batch(
        [MoveRequest(game.pk, user, move, 0), MoveRequest(game.pk, user, move, 0)]
    )
    assert results[0][0] == 1 and results[0][1][0].t == "state"
    assert isinstance(results[1], AppError) and results[1].code == "stale_version"
    game.refresh_from_db()
    assert game.version == 1 and len(fails_once.calls) == 2  # the batch, then the first alone


def _first_call_fails(func, error: Exception, after: bool = False):  # noqa: ANN001, ANN202
    """`func`, whose first call raises `error`: before it does anything, or `after` it has
    done its work (a commit whose answer was lost). `.calls` holds each call's arguments."""

    def wrapper(*args):  # noqa: ANN002, ANN202
        wrapper.calls.append(args)
        if len(wrapper.calls) == 1 and not after:
            raise error
        result = func(*args)
        if len(wrapper.calls) == 1:
            raise error
        return result

    wrapper.calls = []
    return wrapper


@pytest.mark.django_db
def test_a_batch_that_committed_but_failed_to_say_so_answers_its_move_as_played(
    user, monkeypatch, caplog
):  # noqa: ANN001
    """The batch's COMMIT went out and its connection died before the answer came back: the
    move is in, and played again it is answered as the move it is, not as a stale version.
    A copy of it sent on the same version still gets `stale_version`."""
    game = services.start_practice(user, "portuguese", 1)
    move = legal(game)[0]
    lost = DatabaseError("server closed the connection unexpectedly")
    commits_then_fails = _first_call_fails(services.play_moves, lost, after=True)
    monkeypatch.setattr(services, "play_moves", commits_then_fails)
    results = write_batch(
        [MoveRequest(game.pk, user, move, 0), MoveRequest(game.pk, user, move, 0)]
    )
    assert results[0][0] == 1
    state = orjson.loads(results[0][1][0].text)
    assert (state["t"], state["v"], state["d"]["last_move"]) == ("state", 1, move)
    assert isinstance(results[1], AppError) and results[1].code == "stale_version"
    assert results[1].extra["v"] == 1
    assert list(Move.objects.filter(game=game).values_list("n", "move")) == [(1, move)]
    # Its moves answered one by one, the batch's failure is told in the log, else nowhere.
    [failed] = [r for r in caplog.records if r.name == "games.move_batcher"]
    assert failed.levelname == "WARNING" and failed.exc_info[1] is lost


@pytest.mark.django_db
def test_a_resent_move_the_game_does_not_have_is_played_or_refused_as_ever(user):  # noqa: ANN001
    """Resent, a move on the current version is played, and one on an older version whose
    next move was another is refused as stale."""
    game = services.start_practice(user, "portuguese", 1)
    first, other = legal(game)[:2]
    [played] = write_batch([MoveRequest(game.pk, user, first, 0)], resent=True)
    assert played[0] == 1
    [stale] = write_batch([MoveRequest(game.pk, user, other, 0)], resent=True)
    assert isinstance(stale, AppError) and stale.code == "stale_version"


def _request(i: int) -> MoveRequest:
    return MoveRequest(i, None, "draw", 0)


async def test_moves_that_arrive_while_a_batch_is_written_go_together_in_the_next():
    sizes: list[int] = []
    release = asyncio.Event()

    async def run(requests: list[MoveRequest]) -> list:
        sizes.append(len(requests))
        await release.wait()
        return [r.game_id for r in requests]

    batcher = MoveBatcher(run, max_batch=4)
    tasks = [asyncio.ensure_future(batcher.submit(_request(0)))]
    while not sizes:  # the lone first move is being written
        await asyncio.sleep(0)
    tasks += [asyncio.ensure_future(batcher.submit(_request(i))) for i in range(1, 7)]
    await asyncio.sleep(0)
    release.set()
    assert await asyncio.gather(*tasks) == list(range(7))
    assert sizes == [1, 4, 2]  # a lone first move waits for nothing; then capped batches
    assert batcher.active == 0


async def test_a_failing_batch_fails_its_callers_and_the_next_batch_still_runs():
    calls = 0

    async def run(requests: list[MoveRequest]) -> list:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise DatabaseError("connection lost")
        return ["ok"] * len(requests)

    batcher = MoveBatcher(run)
    with pytest.raises(DatabaseError):
        await batcher.submit(_request(1))
    assert await batcher.submit(_request(2)) == "ok"


async def test_each_event_loop_has_its_own_batcher():
    made = move_batcher.batcher_for_loop(lambda: MoveBatcher(None))
    assert move_batcher.batcher_for_loop(lambda: MoveBatcher(None)) is made


@pytest.mark.django_db(transaction=True)
def test_only_committed_versions_reach_the_state_cache(user):  # noqa: ANN001
    game = services.start_practice(user, "portuguese", 1)
    first, second = legal(game)[:2]
    with pytest.raises(RuntimeError), transaction.atomic():
        services.play_move(game.pk, user, first, 0)
        raise RuntimeError("rolled back after the move")
    assert game.pk not in state_cache.states.entries_for([game.pk])
    services.play_move(game.pk, user, second, 0)  # version 1 again, another move
    version, state, stored, row = state_cache.states.entries_for([game.pk])[game.pk]
    assert version == 1 and row.version == 1
    game.refresh_from_db()
    # The cache keeps the state as it was encoded (piles as tuples shared between positions).
    assert orjson.loads(orjson.dumps(stored)) == game.state
    assert state == engine.State.from_dict(game.state)
    assert state.last_move == second


@pytest.mark.django_db(transaction=True)
def test_the_state_cache_holds_positions_not_the_games_behind_them(user):  # noqa: ANN001
    """Each state keeps its parent; a cached one that did held every state of its game."""
    game = services.start_practice(user, "spanish", 3)
    for v in range(6):
        game.refresh_from_db()
        services.play_move(game.pk, user, legal(game)[0], v)
    version, state, _, row = state_cache.states.entries_for([game.pk])[game.pk]
    assert version == 6 and state.parent is None and state.moves == 6
    assert row.version == 6 and row.engine_state is state  # the row holds no history either


def test_the_state_cache_is_bounded_and_drops_the_oldest_first():
    cache = state_cache.StateCache(size=2)
    s = engine.new_game("portuguese", 1)
    for game_id in (1, 2, 1, 3):
        cache.put(game_id, 5, s, {})
    assert set(cache.entries_for([1, 2, 3])) == {1, 3}
    cache.put(1, 6, s, {})  # a game's next version replaces its entry
    assert cache.entries_for([1])[1][0] == 6 and len(cache.entries) == 2


def test_a_state_cache_of_no_games_keeps_none():
    cache = state_cache.StateCache(size=0)
    cache.put(1, 5, engine.new_game("portuguese", 1), {})
    assert cache.entries == {}


def test_the_servers_state_cache_holds_as_many_games_as_game_state_cache_says():
    """GAME_STATE_CACHE sets the bound (a whole number: one that is not stops the start)."""
    code = (
        "import django; django.setup(); from games import state_cache; "
        "print(state_cache.states.size)"
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "server.settings"}
    run = functools.partial(
        subprocess.run, [sys.executable, "-c", code], capture_output=True, text=True, timeout=60
    )
    assert run(env={**env, "GAME_STATE_CACHE": "7"}).stdout.strip() == "7"
    refused = run(env={**env, "GAME_STATE_CACHE": "-1"})
    assert refused.returncode != 0 and "GAME_STATE_CACHE must be a whole number" in refused.stderr


def test_the_deals_a_process_keeps_are_bounded(monkeypatch):  # noqa: ANN001
    """A practice game gets a deal of its own: the deals kept for locked games stay under
    DEALS_KEPT (they were kept up to 100,000, 35 MB), and a deal asked for again is the same
    instance while it is kept."""
    monkeypatch.setattr(services, "_deals", {})
    monkeypatch.setattr(services, "DEALS_KEPT", 50)
    first = services._deal(1, "spanish", 1)
    assert services._deal(1, "spanish", 1) is first
    for i in range(2, 200):
        services._deal(i, "spanish", i)
        assert len(services._deals) <= 50


def test_a_game_read_outside_a_write_never_replaces_a_later_cached_version():
    """A socket's connect reads a game on a thread while a batch may commit its next move: the
    read, older, must not push the committed version out."""
    cache = state_cache.StateCache()
    s = engine.new_game("portuguese", 1)
    assert cache.offer(1, 3, s, {}, None)  # nothing cached: kept
    cache.put(1, 4, s, {})  # a batch committed version 4
    assert not cache.offer(1, 3, s, {}, None) and not cache.offer(1, 4, s, {}, None)
    assert cache.entries_for([1])[1][0] == 4
    assert cache.offer(1, 5, s, {}, None)  # committed elsewhere, read here: later, kept
    assert cache.entries_for([1])[1][0] == 5


async def test_an_unexpected_error_reaches_only_its_own_caller():
    async def run(requests: list[MoveRequest]) -> list:
        return [ValueError("broken row") if r.game_id == 2 else r.game_id for r in requests]

    batcher = MoveBatcher(run)
    results = await asyncio.gather(
        *(batcher.submit(_request(i)) for i in (1, 2, 3)), return_exceptions=True
    )
    assert results[0] == 1 and results[2] == 3 and isinstance(results[1], ValueError)


def test_a_locked_games_deal_is_made_once_per_row():
    first = services._deal(7, "spanish", 1000)
    assert services._deal(7, "spanish", 1000) is first
    reused = services._deal(7, "countess", 3)  # the id of a deleted row, reused
    assert (reused.pk, reused.variant, reused.number) == (7, "countess", 3)


@pytest.mark.django_db
def test_games_from_lock_rows_are_what_the_orm_would_build(user):  # noqa: ANN001
    """The lock query's rows skip Django's constructor; the instances must not differ, and a
    receiver of the model's init signals still gets them through the constructor."""
    from django.db.models.signals import post_init

    game = services.start_practice(user, "portuguese", 1)
    fields = services._LOCKED_FIELDS
    row = (*(getattr(game, name) for name in fields), "{}", "portuguese", 1, None)
    [fast] = services._games_from_pg_rows([row])
    orm = Game.from_db("default", fields, row[: len(fields)])
    assert {k: v for k, v in fast.__dict__.items() if k != "_state"} == {
        **{k: v for k, v in orm.__dict__.items() if k != "_state"},
        "state_json": "{}",
        "deal_variant": "portuguese",
        "deal_number": 1,
        "daily_date": None,
    }
    assert (fast._state.adding, fast._state.db) == (False, "default") and fast.pk == game.pk

    heard = []

    def listener(sender, instance, **kwargs):  # noqa: ANN001, ANN003, ANN202
        heard.append(instance)

    post_init.connect(listener, sender=Game)
    try:
        [slow] = services._games_from_pg_rows([row])
    finally:
        post_init.disconnect(listener, sender=Game)
    assert heard == [slow] and slow.deal_variant == "portuguese"


async def test_with_two_writers_a_games_next_move_waits_for_the_batch_that_has_its_last():
    """Two batches in flight, but a game in one of them at a time: its next move is played
    after the batch with its previous one commits, and checked against the version it made."""
    started: list[list[int]] = []
    release: dict[int, asyncio.Event] = {}

    async def run(requests: list[MoveRequest]) -> list:
        started.append([r.game_id for r in requests])
        gate = release[len(started)] = asyncio.Event()
        await gate.wait()
        return [r.game_id for r in requests]

    async def until(n: int) -> None:
        while len(started) < n:
            await asyncio.sleep(0)

    batcher = MoveBatcher(run, writers=2)
    first = [asyncio.ensure_future(batcher.submit(_request(1)))]
    await until(1)
    second = [asyncio.ensure_future(batcher.submit(_request(i))) for i in (2, 1, 3)]
    await until(2)
    assert started == [[1], [2, 3]]  # game 1's next move is not in the second batch
    assert batcher.writing == {1, 2, 3} and [r.game_id for r, _ in batcher.queue] == [1]
    release[2].set()  # the second batch commits first: game 1 is still being written
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert len(started) == 2 and batcher.active == 1
    release[1].set()  # now game 1's next move goes, in a batch of its own
    await until(3)
    assert started[2] == [1]
    release[3].set()
    assert await asyncio.gather(*first, *second) == [1, 2, 1, 3]
    assert batcher.active == 0 and not batcher.writing and not batcher.queue


async def test_with_one_writer_batches_take_every_waiting_move_in_order():
    batcher = MoveBatcher(None, max_batch=3)
    batcher.queue = [(_request(i), None) for i in (1, 1, 2, 3, 4)]
    assert [r.game_id for r, _ in batcher._take()] == [1, 1, 2]
    assert [r.game_id for r, _ in batcher._take()] == [3, 4]
    assert batcher._take() == []


def _ranked_one_move_from_a_win(api) -> tuple[Game, str]:  # noqa: ANN001
    """A ranked Portuguese attempt with its certified line played but for its last move."""
    from games import clock
    from games.models import DailyChallenge
    from tests.conftest import play_line

    game_id = api.post(f"/api/daily/{clock.today().isoformat()}/portuguese/play").json()["id"]
    line = DailyChallenge.objects.get(date=clock.today(), variant="portuguese").line
    play_line(api, game_id, line[:-1])
    return Game.objects.get(pk=game_id), line[-1]


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("error", [redis_down, lambda: ValueError("a bug")])
def test_a_board_push_that_fails_after_the_commit_refuses_no_committed_move(
    api,
    user,
    other_user,
    monkeypatch,  # noqa: ANN001
    caplog,  # noqa: ANN001
    error,  # noqa: ANN001
):
    """The board's push runs once the batch has committed; if it fails (the channel layer
    unreachable), the batch's moves stand, and their players must hear so. It used to raise
    out of the committed write: the batch was played again move by move, and every move in
    it, the winning one too, was answered `stale_version`. A store away is a line; anything
    else keeps its traceback."""
    from games import leaderboards

    game, last = _ranked_one_move_from_a_win(api)
    bystander = services.start_practice(other_user, "spanish", 5)
    their_move = legal(bystander)[0]

    def push_fails(daily) -> None:  # noqa: ANN001
        raise error()

    monkeypatch.setattr(leaderboards, "publish_board", push_fails)
    results = write_batch(
        [
            MoveRequest(game.pk, user, last, game.version),
            MoveRequest(bystander.pk, other_user, their_move, 0),
        ]
    )
    game.refresh_from_db()
    bystander.refresh_from_db()
    assert (game.status, bystander.version) == ("won", 1)
    assert [r for r in results if isinstance(r, AppError)] == []
    assert [frame.t for frame in results[0][1]] == ["state", "result"]
    (line,) = [r for r in caplog.records if "Leaderboard pushes" in r.getMessage()]
    if error is redis_down:
        assert line.exc_info is None  # a line, not a traceback a finish
    else:
        assert line.exc_info is not None


@pytest.mark.django_db(transaction=True)
def test_a_board_push_to_a_layer_that_hangs_gives_up_in_a_second(api, monkeypatch):  # noqa: ANN001
    """It runs on the committed write's thread: a Redis that hung held a ranked finish 15 s."""
    import asyncio
    import time

    from channels.layers import get_channel_layer

    from games import broadcast, leaderboards
    from games.models import DailyChallenge

    game, _ = _ranked_one_move_from_a_win(api)

    async def hang(*args: object) -> None:
        await asyncio.Event().wait()

    monkeypatch.setattr(broadcast, "SEND_SECONDS", 0.2)
    monkeypatch.setattr(get_channel_layer(), "group_send", hang)
    started = time.monotonic()
    with pytest.raises(TimeoutError):
        leaderboards.publish_board(DailyChallenge.objects.get(pk=game.daily_id))
    assert time.monotonic() - started < 2


@pytest.mark.django_db(transaction=True)
def test_a_result_whose_rank_cannot_be_read_still_answers_the_move(api, user, monkeypatch):  # noqa: ANN001
    """The rank is read after the commit; a database error there leaves the rank out of the
    result (the board has it) rather than failing a move that stands."""
    from games import leaderboards

    game, last = _ranked_one_move_from_a_win(api)

    def board_unreadable(games) -> None:  # noqa: ANN001
        raise DatabaseError("server closed the connection unexpectedly")

    monkeypatch.setattr(leaderboards, "ranks_of_games", board_unreadable)
    [(version, frames)] = write_batch([MoveRequest(game.pk, user, last, game.version)])
    result = orjson.loads(frames[1].text)
    assert (version, result["t"], result["d"]["status"]) == (game.version + 1, "result", "won")
    assert result["d"]["rank"] is None


def test_a_batch_that_fails_after_its_writes_leaves_nothing_behind(user, monkeypatch):  # noqa: ANN001
    """A batch is one transaction: a failure after its rows were written (the commit refused,
    a bug) takes them all back, the game's version and its move rows still equal."""
    game = services.start_practice(user, "portuguese", 1)
    persist = services._persist

    def written_then_failed(moves, games):  # noqa: ANN001, ANN202
        persist(moves, games)
        raise DatabaseError("failed after the writes")

    monkeypatch.setattr(services, "_can_pipeline", lambda: False)  # the ORM's transaction
    monkeypatch.setattr(services, "_persist", written_then_failed)
    with pytest.raises(DatabaseError):
        services.play_moves([MoveRequest(game.pk, user, legal(game)[0], 0)])
    game.refresh_from_db()
    assert game.version == 0 and not Move.objects.filter(game=game).exists()
