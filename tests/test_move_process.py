"""The move process (games.move_process): a daphne worker's socket move batches, played in a
child process of its own on PostgreSQL. It must answer each move exactly as the event loop's
writer does, hand back what only the ORM path may write, and survive its child dying.
"""

from __future__ import annotations

import asyncio
import os
import signal

import pytest
from django.core.management import call_command

from games import consumers
from games.loop_writer import connection_params
from games.models import Game, Move
from games.move_process import MoveProcessError, MoveProcessWriter
from games.services import MoveRequest
from server.errors import AppError
from tests.batches import EXPECTED, kinds, legal, mixed_batch
from tests.test_pg_batch_paths import _ranked_one_move_from_a_win

pytestmark = [
    pytest.mark.skipif(not os.environ.get("DATABASE_URL"), reason="DATABASE_URL not set"),
    pytest.mark.postgres,
    pytest.mark.django_db(transaction=True),
]


def _with_process(coroutine_factory, batches: int = 2):  # noqa: ANN001, ANN202
    """Run `coroutine_factory(writer)` on a new loop with a move process of its own."""

    async def main():  # noqa: ANN202
        writer = MoveProcessWriter(connection_params(), batches)
        try:
            return await coroutine_factory(writer)
        finally:
            await writer.close()

    return asyncio.run(main())


def test_the_move_process_plays_a_batch_as_the_loop_writer_does(user, other_user):  # noqa: ANN001
    batch = mixed_batch(user, other_user)
    results = _with_process(lambda writer: writer.write(batch.requests))
    assert kinds(results, lambda answer: answer[0]) == EXPECTED
    version, frames = results[0]
    assert frames[0].t == "state" and frames[0].v == 1 and '"last_move"' in frames[0].text
    assert isinstance(results[3], AppError) and results[3].extra["v"] == 2
    assert (Game.objects.get(pk=batch.a.pk).version, Game.objects.get(pk=batch.b.pk).version) == (
        2,
        1,
    )
    assert Move.objects.filter(game=batch.a).count() == 2
    call_command("replay_verify")


def test_batches_in_flight_together_are_each_answered_with_their_own_moves(user):  # noqa: ANN001
    games = [consumers.services.start_practice(user, "spanish", n) for n in range(1, 5)]
    requests = [MoveRequest(g.pk, user, legal(g)[0], 0) for g in games]

    async def two_at_once(writer: MoveProcessWriter) -> list:
        return await asyncio.gather(writer.write(requests[:2]), writer.write(requests[2:]))

    first, second = _with_process(two_at_once)
    assert [answer[1][0].v for answer in first + second] == [1, 1, 1, 1]
    assert all(Game.objects.get(pk=g.pk).version == 1 for g in games)
    call_command("replay_verify")


def test_a_batch_that_wins_a_ranked_attempt_comes_back_for_the_orm(user, api):  # noqa: ANN001
    game, last = _ranked_one_move_from_a_win(api)
    request = MoveRequest(game.pk, user, last, game.version)
    assert _with_process(lambda writer: writer.write([request])) == [None]
    assert Game.objects.get(pk=game.pk).version == game.version  # nothing written there


def test_a_dead_move_process_fails_its_batch_and_the_next_batch_starts_a_new_one(user):  # noqa: ANN001
    game = consumers.services.start_practice(user, "portuguese", 1)
    first = legal(game)[0]

    async def kill_then_play(writer: MoveProcessWriter) -> tuple:
        await writer.start()
        old = writer.proc.pid
        os.kill(old, signal.SIGKILL)
        with pytest.raises(MoveProcessError):
            await writer.write([MoveRequest(game.pk, user, first, 0)])
        [answer] = await writer.write([MoveRequest(game.pk, user, first, 0)])
        return old, writer.proc.pid, answer

    old, new, (version, _) = _with_process(kill_then_play)
    assert new != old and version == 1
    assert Game.objects.get(pk=game.pk).version == 1


def test_the_move_process_exits_when_its_worker_lets_it_go():
    async def start_and_close() -> asyncio.subprocess.Process:
        writer = MoveProcessWriter(connection_params())
        proc = await writer.start()
        await writer.close()
        return proc

    proc = asyncio.run(start_and_close())
    assert proc.returncode == 0


def test_a_game_socket_batcher_on_postgresql_plays_in_the_move_process(settings, user):  # noqa: ANN001
    settings.GAME_MOVE_PROCESS = True
    game = consumers.services.start_practice(user, "portuguese", 1)

    async def play() -> tuple:
        batcher = consumers._new_batcher()
        try:
            results = await batcher.run([MoveRequest(game.pk, user, legal(game)[0], 0)])
            return batcher.writers, results
        finally:
            await batcher.close()

    writers, [(version, frames)] = asyncio.run(play())
    assert writers == settings.GAME_MOVE_PROCESS_BATCHES and version == 1
    assert [f.t for f in frames] == ["state"]
