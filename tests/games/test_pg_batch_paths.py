"""The two PostgreSQL-only ways a move batch is written: the pipelined transaction on Django's
connection (`services.play_moves` outside an atomic block) and the event loop's own async
connection (`games.loop_writer`). Both must play a batch exactly as the ORM path does, hand a
batch that finishes a ranked attempt to the ORM path, and leave nothing behind when they fail.
"""

from __future__ import annotations

import asyncio
import os

import orjson
import psycopg
import pytest
from django.core.management import call_command
from django.db import DatabaseError, connection, transaction
from django.utils import timezone

from games import clock, engine, services, socket_calls, state_cache
from games.loop_writer import LoopBatchWriter, connection_params
from games.models import DailyChallenge, Game, Move, VariantRecord
from games.move_batcher import write_batch
from games.services import MoveRequest
from server.errors import AppError
from tests.batches import EXPECTED, kinds, legal, mixed_batch
from tests.conftest import WAITING_ON_THE_HOLDER, play_line

pytestmark = [
    pytest.mark.skipif(not os.environ.get("DATABASE_URL"), reason="DATABASE_URL not set"),
    pytest.mark.postgres,
    pytest.mark.django_db(transaction=True),
]
BROKEN_WRITE = "SELECT %s::bigint[], %s::jsonb, %s::int"  # the third is JSON text: always fails


def _ranked_one_move_from_a_win(api) -> tuple[Game, str]:  # noqa: ANN001
    """A ranked daily attempt with all of the certified winning line played but its last move."""
    date = clock.today().isoformat()
    game_id = api.post(f"/api/daily/{date}/portuguese/play").json()["id"]
    line = DailyChallenge.objects.get(date=clock.today(), variant="portuguese").line
    play_line(api, game_id, line[:-1])
    return Game.objects.get(pk=game_id), line[-1]


def test_the_pipelined_path_plays_a_batch_as_one_transaction(user, other_user):  # noqa: ANN001
    batch = mixed_batch(user, other_user)
    a, b = batch.a, batch.b
    assert not connection.in_atomic_block and services._can_pipeline()
    results = services.play_moves(batch.requests)
    assert kinds(results, lambda outcome: outcome.game.version) == EXPECTED
    a.refresh_from_db()
    b.refresh_from_db()
    assert (a.version, b.version) == (2, 1)
    assert Move.objects.filter(game=a).count() == 2
    call_command("replay_verify")


def test_a_failed_pipelined_write_changes_nothing_and_the_connection_goes_on(user, monkeypatch):  # noqa: ANN001
    game = services.start_practice(user, "portuguese", 1)
    move = legal(game)[0]
    monkeypatch.setattr(services, "_WRITE_BATCH_PG", BROKEN_WRITE)
    with pytest.raises(DatabaseError):
        services.play_moves([MoveRequest(game.pk, user, move, 0)])
    monkeypatch.undo()
    game.refresh_from_db()
    assert game.version == 0 and not Move.objects.filter(game=game).exists()
    assert services.play_move(game.pk, user, move, 0).game.version == 1  # same connection


def test_a_pipelined_batch_that_wins_a_ranked_attempt_updates_the_records(user, api):  # noqa: ANN001
    game, last = _ranked_one_move_from_a_win(api)
    services.play_moves([MoveRequest(game.pk, user, last, game.version)])
    game.refresh_from_db()
    assert game.status == "won"
    record = VariantRecord.objects.get(user=user, variant="portuguese")
    assert (record.played, record.wins) == (1, 1)


def _on_a_loop(coroutine_factory):  # noqa: ANN001, ANN202
    """Run a coroutine on a loop of its own, as daphne's, and close the writer it used."""

    async def main():  # noqa: ANN202
        writer = LoopBatchWriter()
        try:
            return await coroutine_factory(writer)
        finally:
            await writer.close()

    return asyncio.run(main())


async def _through_a_batcher(requests: list[MoveRequest]) -> list:
    """A batch as a game socket's batcher runs it (loop writer, thread fallback)."""
    batcher = socket_calls.new_move_batcher()
    try:
        return await batcher.run(requests)
    finally:
        await batcher.close()


def test_the_loop_writer_plays_a_batch_as_play_moves_does(user, other_user):  # noqa: ANN001
    batch = mixed_batch(user, other_user)
    a, b = batch.a, batch.b
    results = _on_a_loop(lambda writer: writer.write(batch.requests))
    assert kinds(results, lambda answer: answer[0]) == EXPECTED
    version, frames = results[0]
    assert frames[0].t == "state" and frames[0].v == 1
    assert results[3].extra["v"] == 2
    a.refresh_from_db()
    b.refresh_from_db()
    assert (a.version, b.version) == (2, 1)
    call_command("replay_verify")


def test_the_loop_writer_hands_a_ranked_win_back_untouched(user, api):  # noqa: ANN001
    game, last = _ranked_one_move_from_a_win(api)
    request = MoveRequest(game.pk, user, last, game.version)
    assert _on_a_loop(lambda writer: writer.write([request])) == [None]
    assert Game.objects.get(pk=game.pk).version == game.version  # nothing written

    [(version, frames)] = _on_a_loop(lambda _writer: _through_a_batcher([request]))
    assert version == game.version + 1 and [f.t for f in frames] == ["state", "result"]
    game.refresh_from_db()
    assert game.status == "won"
    assert VariantRecord.objects.get(user=user, variant="portuguese").wins == 1


def test_a_failed_loop_write_rolls_back_and_its_connection_is_reused(user, monkeypatch):  # noqa: ANN001
    game = services.start_practice(user, "portuguese", 1)
    move = legal(game)[0]
    request = MoveRequest(game.pk, user, move, 0)

    async def fail_then_succeed(writer: LoopBatchWriter):  # noqa: ANN202
        monkeypatch.setattr(services, "_WRITE_BATCH_PG", BROKEN_WRITE)
        with pytest.raises(psycopg.errors.InvalidTextRepresentation):
            await writer.write([request])
        [first] = writer.open
        assert first.pgconn.transaction_status == psycopg.pq.TransactionStatus.IDLE
        monkeypatch.undo()
        result = await writer.write([request])
        assert writer.open == [first]
        return result

    [(version, _)] = _on_a_loop(fail_then_succeed)
    assert version == 1
    assert Move.objects.filter(game=game).count() == 1


def test_a_batch_the_loop_writer_fails_is_played_on_a_thread(user, monkeypatch):  # noqa: ANN001
    game = services.start_practice(user, "portuguese", 1)
    request = MoveRequest(game.pk, user, legal(game)[0], 0)

    async def broken(self, requests):  # noqa: ANN001, ANN202
        raise DatabaseError("connection lost")

    monkeypatch.setattr(LoopBatchWriter, "write", broken)

    [(version, frames)] = _on_a_loop(lambda _writer: _through_a_batcher([request]))
    assert version == 1 and frames[0].v == 1
    assert Move.objects.filter(game=game).count() == 1


def test_a_loop_batch_that_committed_but_lost_its_answer_is_answered_as_played(user, monkeypatch):  # noqa: ANN001
    """The loop writer's COMMIT went through and its connection died before the answer came
    back: played again on a thread, the move is answered with its state, not as stale."""
    game = services.start_practice(user, "portuguese", 1)
    move = legal(game)[0]
    write = LoopBatchWriter.write

    async def commits_then_fails(self, requests):  # noqa: ANN001, ANN202
        await write(self, requests)
        raise DatabaseError("server closed the connection unexpectedly")

    monkeypatch.setattr(LoopBatchWriter, "write", commits_then_fails)
    [answer] = _on_a_loop(lambda _writer: _through_a_batcher([MoveRequest(game.pk, user, move, 0)]))
    assert not isinstance(answer, Exception), answer
    version, frames = answer
    assert version == 1 and frames[0].v == 1
    assert orjson.loads(frames[0].text)["d"]["last_move"] == move
    assert list(Move.objects.filter(game=game).values_list("n", "move")) == [(1, move)]


def _a_copy_of_a_landed_move(user) -> MoveRequest:  # noqa: ANN001
    """A move another socket has already played on version 0, sent again on version 0."""
    game = services.start_practice(user, "portuguese", 1)
    move = legal(game)[0]
    services.play_move(game.pk, user, move, 0)
    return MoveRequest(game.pk, user, move, 0)


def test_a_loop_batch_the_database_refused_is_played_again_as_new(user, monkeypatch):  # noqa: ANN001
    """A batch PostgreSQL refused with an ERROR (a deadlock, say) did not commit: played again
    on a thread, a copy in it of a move already played gets `stale_version`. Played as resent,
    as after a lost connection, it was answered as played: two `ack`s for one move."""
    copy = _a_copy_of_a_landed_move(user)

    async def refused(self, requests):  # noqa: ANN001, ANN202
        conn = await self._connection()
        try:
            await conn.execute("SELECT 1 / 0")  # an ERROR; the session goes on
        finally:
            self.idle.append(conn)

    monkeypatch.setattr(LoopBatchWriter, "write", refused)
    [answer] = _on_a_loop(lambda _writer: _through_a_batcher([copy]))
    assert isinstance(answer, AppError) and answer.code == "stale_version", answer
    assert Move.objects.filter(game_id=copy.game_id).count() == 1


def test_a_thread_batch_the_database_refused_is_played_again_as_new(user, monkeypatch):  # noqa: ANN001
    """As on the event loop: a batch refused with an ERROR is played again move by move as new,
    not as resent."""
    copy = _a_copy_of_a_landed_move(user)
    play_moves = services.play_moves
    calls = []

    def refused_once(requests, landed=None):  # noqa: ANN001, ANN202
        calls.append(landed)
        if len(calls) == 1:
            with connection.cursor() as cursor:
                cursor.execute("SELECT 1 / 0")
        return play_moves(requests, landed)

    monkeypatch.setattr(services, "play_moves", refused_once)
    [answer] = write_batch([copy])
    assert isinstance(answer, AppError) and answer.code == "stale_version", answer
    assert calls == [None, None]


def test_a_copy_in_a_batch_handed_to_the_orm_is_still_stale(user, api):  # noqa: ANN001
    """A batch handed back because it wins a ranked attempt did not fail: a copy in it of a
    move already played (the same move on the same version) gets `stale_version`, as ever,
    not the answer of a move whose batch failed."""
    game, last = _ranked_one_move_from_a_win(api)
    before = Move.objects.get(game=game, n=game.version)
    copy = MoveRequest(game.pk, user, before.move, game.version - 1)
    win = MoveRequest(game.pk, user, last, game.version)
    stale, (version, _) = _on_a_loop(lambda _writer: _through_a_batcher([copy, win]))
    assert isinstance(stale, AppError) and stale.code == "stale_version"
    assert version == game.version + 1


def test_a_pipelined_commit_whose_connection_died_answers_its_moves_as_played(user, monkeypatch):  # noqa: ANN001
    """On a thread (GAME_LOOP_WRITER=0, or a batch the loop hands over), the pipelined
    transaction commits and its connection dies before the answer: the moves, played again,
    find a new connection and are answered as played, the first of two chained moves with the
    game as it stands. The dead connection was kept, and every move failed on it."""
    game = services.start_practice(user, "portuguese", 1)
    first = legal(game)[0]
    second = engine.State.from_dict(game.state).apply(first).legal_moves()[0]
    pipelined = services._play_moves_pipelined
    params = connection_params()

    def commits_then_dies(requests):  # noqa: ANN001, ANN202
        assert pipelined(requests) is not None  # committed
        with psycopg.connect(**params) as admin:
            admin.execute(
                "SELECT pg_terminate_backend(%s)", [connection.connection.info.backend_pid]
            )
        raise DatabaseError("server closed the connection unexpectedly")

    monkeypatch.setattr(services, "_play_moves_pipelined", commits_then_dies)
    results = write_batch(
        [MoveRequest(game.pk, user, first, 0), MoveRequest(game.pk, user, second, 1)]
    )
    assert not any(isinstance(r, Exception) for r in results), results
    states = [orjson.loads(frames[0].text) for _, frames in results]
    assert [(s["v"], s["d"]["last_move"]) for s in states] == [(2, second), (2, second)]
    assert list(Move.objects.filter(game=game).values_list("move", flat=True)) == [first, second]


def test_a_writer_connection_the_database_ends_is_replaced_and_no_move_is_lost(user, caplog):  # noqa: ANN001
    """PostgreSQL ends the loop writer's connection between two batches (a restart, a killed
    backend): the next batch fails on it and is played on a thread, and the one after opens a
    new connection. Every move is answered once and stored once."""
    game = services.start_practice(user, "portuguese", 1)
    params = connection_params()

    def terminate(pid: int) -> None:
        with psycopg.connect(**params) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", [pid])

    async def play() -> tuple[list, list[int]]:
        batcher = socket_calls.new_move_batcher()
        writer = batcher.close.__self__  # the batcher's LoopBatchWriter
        answers, pids = [], []
        move, v = legal(game)[0], 0
        try:
            for _ in range(3):
                [answer] = await batcher.run([MoveRequest(game.pk, user, move, v)])
                answers.append(answer)
                v, frames = answer
                move = orjson.loads(frames[0].text)["d"]["legal_moves"][0]
                pids += [c.info.backend_pid for c in writer.open if not c.broken]
                if len(answers) == 1:
                    await asyncio.to_thread(terminate, pids[0])
        finally:
            await batcher.close()
        return answers, pids

    answers, pids = asyncio.run(play())
    retried = [r for r in caplog.records if "retrying it on a thread" in r.getMessage()]
    assert len(retried) == 1  # the second batch, on the ended connection
    assert [v for v, _ in answers] == [1, 2, 3]
    assert pids[0] not in pids[1:] and len(set(pids[1:])) == 1  # a new connection, kept
    assert list(Move.objects.filter(game=game).values_list("n", flat=True).order_by("n")) == [
        1,
        2,
        3,
    ]
    call_command("replay_verify")


def test_the_lock_query_sends_the_state_only_when_this_process_lacks_it(user):  # noqa: ANN001
    """A state cached at the locked version stays in the database; a stale or missing entry
    gets the stored state, and each way the move is played from the right position."""
    game = services.start_practice(user, "portuguese", 1)
    first, *_ = legal(game)
    services.play_move(game.pk, user, first, 0)  # commits, and caches version 1
    cached = state_cache.states.entries_for([game.pk])
    assert cached[game.pk][0] == 1

    def state_json(entries: dict) -> str | None:
        with transaction.atomic():
            [locked] = services._locked_rows([game.pk], entries)
            return locked.state_json

    assert state_json(cached) is None
    assert orjson.loads(state_json({})) == Game.objects.get(pk=game.pk).state
    stale = {game.pk: (0, *cached[game.pk][1:])}
    assert state_json(stale) is not None

    state_cache.states.entries.clear()  # as in another process: the state comes from the row
    second = legal(Game.objects.get(pk=game.pk))[0]
    assert services.play_move(game.pk, user, second, 1).game.version == 2
    third = legal(Game.objects.get(pk=game.pk))[0]
    state_cache.states.put(game.pk, 1, *cached[game.pk][1:])  # an older version's entry
    assert services.play_move(game.pk, user, third, 2).game.version == 3
    call_command("replay_verify")


BROKEN_LOCK = "SELECT %s::bigint[], %s::jsonb, %s::bigint[]"  # the second is an array: always fails


def _cache(*games: Game) -> None:
    """Put the games in this process's cache as a committed batch would."""
    with transaction.atomic():
        locked = services._lock_many([g.pk for g in games])
    for game in locked.values():
        game.engine_state = engine.State.from_dict(game.state)
    services._cache_after_commit(list(locked.values()))()


def test_a_batch_of_cached_games_is_written_without_the_lock_query(user, other_user, monkeypatch):  # noqa: ANN001
    """Every case of the mixed batch but the missing game (it cannot be cached) is answered as
    under the lock, with the lock query broken: it is not sent."""
    batch = mixed_batch(user, other_user)
    requests = [r for r in batch.requests if r.game_id != 999_999]
    _cache(batch.a, batch.b, batch.theirs)
    monkeypatch.setattr(services, "_LOCK_SQL_PG", BROKEN_LOCK)
    results = _on_a_loop(lambda writer: writer.write(requests))
    expected = [e for e in EXPECTED if e != "not_found"]
    # The forbidden move's game had nothing written: it is played again with the lock (broken
    # here), so that move alone is handed back for a thread to play, as new (None): the
    # database refused the lock query, so nothing of that transaction committed.
    assert kinds(results, lambda answer: answer[0] if isinstance(answer, tuple) else answer) == [
        *expected[:4],
        None,
        *expected[5:],
    ]
    assert results[3].extra["v"] == 2
    a, b = Game.objects.get(pk=batch.a.pk), Game.objects.get(pk=batch.b.pk)
    assert (a.version, b.version) == (2, 1)
    assert state_cache.states.entries_for([a.pk])[a.pk][0] == 2
    monkeypatch.undo()
    call_command("replay_verify")


def _moved_elsewhere(user) -> tuple[Game, state_cache.Entry]:  # noqa: ANN001
    """A game at version 2 whose cache entry here says 1, as if another process made move 2."""
    game = services.start_practice(user, "portuguese", 1)
    services.play_move(game.pk, user, legal(game)[0], 0)
    old = state_cache.states.entries_for([game.pk])[game.pk]
    game.refresh_from_db()
    services.play_move(game.pk, user, legal(game)[0], 1)
    state_cache.states.put(game.pk, *old)
    return Game.objects.get(pk=game.pk), old


def test_a_move_answered_from_a_stale_cache_is_played_again_with_the_lock(user):  # noqa: ANN001
    game, old = _moved_elsewhere(user)
    on_old = old[1].legal_moves()[0]  # legal at version 1, which the cache still holds
    [stale] = _on_a_loop(lambda w: w.write([MoveRequest(game.pk, user, on_old, 1)]))
    assert stale.code == "stale_version" and stale.extra["v"] == 2
    assert Game.objects.get(pk=game.pk).version == 2

    state_cache.states.put(game.pk, *old)
    current = legal(game)[0]  # the cache would refuse it as stale: the database says it is not
    [(version, frames)] = _on_a_loop(lambda w: w.write([MoveRequest(game.pk, user, current, 2)]))
    assert version == 3 and frames[0].v == 3
    assert Move.objects.filter(game=game).count() == 3
    call_command("replay_verify")


def test_a_move_on_a_game_resigned_elsewhere_is_refused_though_cached(user):  # noqa: ANN001
    game = services.start_practice(user, "portuguese", 1)
    services.play_move(game.pk, user, legal(game)[0], 0)
    Game.objects.filter(pk=game.pk).update(status="resigned", finished_at=timezone.now())
    game.refresh_from_db()
    [refused] = _on_a_loop(lambda w: w.write([MoveRequest(game.pk, user, legal(game)[0], 1)]))
    assert refused.code == "game_over"
    assert Game.objects.get(pk=game.pk).version == 1
    assert Move.objects.filter(game=game).count() == 1


def test_a_cached_row_stays_as_it_was_written_while_later_moves_are_played_on_copies(user):  # noqa: ANN001
    """The cache keeps the very row a batch wrote (no copy); a later batch plays on a copy, so
    a row that an entry (or a REST caller's Outcome) holds never changes under it."""
    game = services.start_practice(user, "spanish", 5)
    services.play_move(game.pk, user, legal(game)[0], 0)
    version, state, _, row = state_cache.states.entries_for([game.pk])[game.pk]
    assert version == row.version == 1 and row.engine_state is state
    written_at = row.last_move_at
    moves = []
    for v in (1, 2):
        move = state_cache.states.entries_for([game.pk])[game.pk][1].legal_moves()[0]
        moves.append(move)
        [(answered, _)] = _on_a_loop(
            lambda w, m=move, v=v: w.write([MoveRequest(game.pk, user, m, v)])
        )
        assert answered == v + 1
    assert (row.version, row.engine_state, row.last_move_at) == (1, state, written_at)
    newest = state_cache.states.entries_for([game.pk])[game.pk][3]
    assert newest is not row and newest.version == 3 and newest.engine_state.last_move == moves[-1]
    call_command("replay_verify")


def test_the_loop_writer_writes_two_batches_at_once_on_two_connections(user, other_user):  # noqa: ANN001
    games = [services.start_practice(u, "portuguese", 1) for u in (user, other_user)]
    firsts = [legal(g)[0] for g in games]
    seconds = [
        engine.State.from_dict(g.state).apply(m).legal_moves()[0]
        for g, m in zip(games, firsts, strict=True)
    ]
    requests = [MoveRequest(g.pk, g.owner, m, 0) for g, m in zip(games, firsts, strict=True)]
    more = [MoveRequest(g.pk, g.owner, m, 1) for g, m in zip(games, seconds, strict=True)]

    async def both(writer: LoopBatchWriter):  # noqa: ANN202
        results = await asyncio.gather(*(writer.write([r]) for r in requests))
        assert len(writer.open) == 2 and len(writer.idle) == 2
        again = await asyncio.gather(*(writer.write([r]) for r in more))
        assert len(writer.open) == 2  # kept for the next batches, not opened anew
        return results + again

    results = _on_a_loop(both)
    assert [version for [(version, _)] in results] == [1, 1, 2, 2]
    assert Move.objects.filter(game__in=games).count() == 4
    call_command("replay_verify")


def test_a_game_opened_on_a_socket_plays_its_first_move_without_the_lock_query(user, monkeypatch):  # noqa: ANN001
    """The owner's socket caches the game it loads (services.remember), so the first move takes
    the cached path, and answers exactly as the lock path does for a twin game of the deal."""
    opened = services.start_practice(user, "spanish", 11)
    twin = services.start_practice(user, "spanish", 11)
    socket_calls.load_state(opened.pk, user)  # what the socket's connect does
    assert set(state_cache.states.entries_for([opened.pk, twin.pk])) == {opened.pk}
    first = legal(opened)[0]

    monkeypatch.setattr(services, "_LOCK_SQL_PG", BROKEN_LOCK)
    [(version, frames)] = _on_a_loop(lambda w: w.write([MoveRequest(opened.pk, user, first, 0)]))
    monkeypatch.undo()
    [(twin_version, twin_frames)] = _on_a_loop(
        lambda w: w.write([MoveRequest(twin.pk, user, first, 0)])
    )
    assert version == twin_version == 1
    assert [f.text for f in frames] == [f.text for f in twin_frames]

    second = legal(Game.objects.get(pk=opened.pk))[0]
    monkeypatch.setattr(services, "_LOCK_SQL_PG", BROKEN_LOCK)  # and the moves after it too
    [(version, _)] = _on_a_loop(lambda w: w.write([MoveRequest(opened.pk, user, second, 1)]))
    assert version == 2
    monkeypatch.undo()
    assert Move.objects.filter(game=opened).count() == 2
    call_command("replay_verify")


def test_a_writer_connection_whose_prepared_statements_are_gone_is_replaced(user):  # noqa: ANN001
    """psycopg remembers which statements it has prepared on a connection; if the server no
    longer has one (a soak once saw `prepared statement "_pg3_2" does not exist` on one loop
    connection for about 3 s, every batch on it failing and going to a thread), a batch on that
    connection fails. The connection is then closed, and the next batch gets a new one."""
    game = services.start_practice(user, "portuguese", 1)

    async def play(writer: LoopBatchWriter) -> list:
        move, v, answers = legal(game)[0], 0, []
        for _ in range(3):
            try:
                [answer] = await writer.write([MoveRequest(game.pk, user, move, v)])
            except psycopg.errors.InvalidSqlStatementName:
                answers.append("failed")
                continue
            answers.append(answer[0])
            v, frames = answer
            move = orjson.loads(frames[0].text)["d"]["legal_moves"][0]
            if v == 1:  # the server forgets them; psycopg does not know
                [conn] = writer.idle
                conn.pgconn.exec_(b"DEALLOCATE ALL")
        return answers

    assert _on_a_loop(play) == [1, "failed", 2]


def test_a_batch_handed_to_the_orm_keeps_the_prepared_statements(user, api):  # noqa: ANN001
    """A batch that finishes a ranked attempt ends its locked transaction having written
    nothing. Ended with ROLLBACK, psycopg dropped every statement it had prepared on the
    connection only after preparing the next one, which the server then lacked: each later
    batch on that connection failed (`prepared statement "_pg3_N" does not exist`)."""
    ranked, last = _ranked_one_move_from_a_win(api)
    practice = services.start_practice(user, "portuguese", 1)

    async def play(writer: LoopBatchWriter) -> list:
        move, v, answers = legal(practice)[0], 0, []
        for step in range(5):
            if step == 2:  # not cached here: written with the lock, then handed back
                state_cache.states.entries.pop(ranked.pk, None)
                request = MoveRequest(ranked.pk, user, last, ranked.version)
                answers.append(await writer.write([request]))
                continue
            [answer] = await writer.write([MoveRequest(practice.pk, user, move, v)])
            v, frames = answer
            answers.append(v)
            move = orjson.loads(frames[0].text)["d"]["legal_moves"][0]
        assert len(writer.open) == 1  # all on one connection, as a quiet loop's batches are
        return answers

    assert _on_a_loop(play) == [1, 2, [None], 3, 4]
    assert Game.objects.get(pk=ranked.pk).version == ranked.version  # nothing written
    call_command("replay_verify")


def test_every_plan_of_the_batch_statements_reaches_games_by_id_however_small_the_table(user):  # noqa: ANN001
    """A prepared statement's generic plan is made from the table as it is then, and kept: made
    on a new database's few pages, both batch statements hashed a scan of all of `games_game`,
    and went on doing so, a full read per batch, as the table grew (bench/soak.py). Here the
    table holds a test's few rows: the plans PostgreSQL makes for the loop writer's prepared
    statements, generic and custom, must reach each game through the primary key."""
    game = services.start_practice(user, "countess", 1)  # `draw` lasts for 40 moves

    async def plans_after_runs(writer: LoopBatchWriter) -> dict[tuple[str, str], str]:
        for v in range(8):  # PostgreSQL weighs a generic plan from a prepared one's sixth run
            state_cache.states.entries.pop(game.pk, None)  # the locked path: both statements
            [(version, _)] = await writer.write([MoveRequest(game.pk, user, "draw", v)])
            assert version == v + 1
        [conn] = writer.open
        rows = await (
            await conn.execute(
                "SELECT name, statement FROM pg_prepared_statements "
                "WHERE statement LIKE '%games_game%'"
            )
        ).fetchall()
        plans = {}
        for mode in ("force_generic_plan", "force_custom_plan"):
            await conn.execute(f"SET plan_cache_mode = {mode}")
            for name, statement in rows:
                kind = "write" if "INSERT INTO" in statement else "lock"
                ids = f"'{{{game.pk}}}'"
                args = f"{ids}, '[]', '[]'" if kind == "write" else f"{ids}, '{{-1}}', {ids}"
                explained = await (await conn.execute(f"EXPLAIN EXECUTE {name}({args})")).fetchall()
                plans[kind, mode] = "\n".join(line for (line,) in explained)
        await conn.execute("RESET plan_cache_mode")
        return plans

    plans = _on_a_loop(plans_after_runs)
    assert {kind for kind, _ in plans} == {"lock", "write"}
    for (kind, mode), plan in plans.items():
        assert "Seq Scan on games_game" not in plan, f"{kind}, {mode}:\n{plan}"
        assert "games_game_pkey" in plan, f"{kind}, {mode}:\n{plan}"


def test_the_loop_writer_plays_an_undo_it_can_and_hands_the_others_to_the_orm(user):  # noqa: ANN001
    """A socket's undo is played in its batch on the event loop when the cached game knows
    its standing moves (it was played here from its deal), without the lock query; one that
    must read the history first (a game loaded mid-play) is handed to the ORM path untouched,
    and played there."""
    game = services.start_practice(user, "spanish", 5)
    socket_calls.load_state(game.pk, user)  # as a socket's connect: cached at version 0
    deal = engine.State.from_dict(game.state)
    first = deal.legal_moves()[0]
    [(version, _)] = _on_a_loop(lambda w: w.write([MoveRequest(game.pk, user, first, 0)]))
    assert version == 1

    undo = MoveRequest(game.pk, user, services.UNDO_REQUEST, 1)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(services, "_LOCK_SQL_PG", BROKEN_LOCK)  # the cached path, or a failure
        [(version, frames)] = _on_a_loop(lambda w: w.write([undo]))
    assert version == 2 and frames[0].t == "state"
    assert orjson.loads(frames[0].text)["d"]["last_move"] == engine.UNDO
    assert Game.objects.get(pk=game.pk).state == deal.to_dict()

    second = MoveRequest(game.pk, user, first, 2)
    assert _on_a_loop(lambda w: w.write([second]))[0][0] == 3
    state_cache.states.entries.clear()
    socket_calls.load_state(game.pk, user)  # cached at version 3, its history not known
    undo = MoveRequest(game.pk, user, services.UNDO_REQUEST, 3)
    assert _on_a_loop(lambda w: w.write([undo])) == [None]
    assert Game.objects.get(pk=game.pk).version == 3  # nothing written
    [(version, _)] = _on_a_loop(lambda _w: _through_a_batcher([undo]))
    assert version == 4
    assert Game.objects.get(pk=game.pk).state == deal.to_dict()
    call_command("replay_verify")


async def _wait_for_a_lock_wait(holder: psycopg.AsyncConnection) -> None:
    """Until another session waits for a lock `holder` holds."""
    for _ in range(500):
        await holder.execute("SELECT pg_stat_clear_snapshot()")  # read afresh in a transaction
        waiting = await holder.execute(WAITING_ON_THE_HOLDER, [holder.info.backend_pid])
        if (await waiting.fetchone())[0]:
            return
        await asyncio.sleep(0.01)
    raise AssertionError("no session came to wait for a lock this one holds")


def test_a_batch_written_without_the_lock_query_takes_its_games_in_id_order(user):  # noqa: ANN001
    """Every writer that locks several games takes them in id order, so no two can wait for
    each other. A batch of cached games is written without the lock query, and its update
    locked them in the order its moves came (a plan that hashes the batch's rows): with its
    moves on Y, then X, it held Y and waited for X, which another writer held on its way to
    Y, and PostgreSQL broke the cycle by failing one of them (an audit saw REST moves answer
    500, and socket batches played twice). Now the write locks X first, holding nothing, and
    the other writer gets Y."""
    x = services.start_practice(user, "spanish", 1)
    y = services.start_practice(user, "spanish", 2)
    assert x.pk < y.pk
    _cache(x, y)
    requests = [MoveRequest(y.pk, user, legal(y)[0], 0), MoveRequest(x.pk, user, legal(x)[0], 0)]
    lock = "SELECT id FROM games_game WHERE id = %s FOR UPDATE"

    async def main(writer: LoopBatchWriter) -> list:
        other = await psycopg.AsyncConnection.connect(**connection_params())
        try:
            await other.set_autocommit(False)
            # This session finds the cycle, if there is one, long before the batch's own
            # check (a second after it began to wait): it fails, and the batch goes on.
            await other.execute("SET deadlock_timeout = '50ms'")
            await other.execute(lock, [x.pk])  # a writer in id order, at X
            batch = asyncio.ensure_future(writer.write(requests))
            await _wait_for_a_lock_wait(other)  # the batch waits for X
            try:
                await other.execute(lock, [y.pk])  # on its way to Y
            except psycopg.errors.DeadlockDetected:
                pytest.fail("the batch held Y while it waited for X")
            finally:
                await other.rollback()
            return await batch
        finally:
            await other.close()

    results = _on_a_loop(main)
    assert [answer[0] for answer in results] == [1, 1], results
    assert Game.objects.filter(pk__in=[x.pk, y.pk], version=1).count() == 2
