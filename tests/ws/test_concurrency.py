"""Two sockets (or threads) of one owner race on the same version: exactly one move lands.

On PostgreSQL the game row lock (select_for_update) decides; on SQLite the IMMEDIATE
transaction does. Both run in CI.
"""

from __future__ import annotations

import asyncio
import threading

import pytest
from channels.db import database_sync_to_async
from django.db import connection

from games import services
from games.models import Game, Move
from server.errors import AppError
from tests.ws.helpers import connect, recv, send

pytestmark = pytest.mark.django_db(transaction=True)


def test_threads_racing_on_one_version_apply_exactly_one(user):  # noqa: ANN001
    game = services.start_practice(user, "portuguese", 1)
    moves = services.engine.State.from_dict(game.state).legal_moves()[:4]
    barrier = threading.Barrier(len(moves))
    results: list[str] = []

    def attempt(move: str) -> None:
        barrier.wait()
        try:
            services.play_move(game.pk, user, move, 0)
            results.append("applied")
        except AppError as exc:
            results.append(exc.code)
        finally:
            connection.close()

    threads = [threading.Thread(target=attempt, args=(m,)) for m in moves]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == ["applied"] + ["stale_version"] * (len(moves) - 1)
    game.refresh_from_db()
    assert game.version == 1 and Move.objects.filter(game=game).count() == 1


async def test_two_sockets_of_one_owner_send_different_moves_on_one_version(user):  # noqa: ANN001
    game = await database_sync_to_async(services.start_practice)(user, "portuguese", 1)
    a = await connect(f"/ws/games/{game.pk}", user)
    b = await connect(f"/ws/games/{game.pk}", user)
    state = await recv(a)
    await recv(b)
    m1, m2 = state["d"]["legal_moves"][:2]
    await asyncio.gather(
        send(a, "move", {"move": m1, "v": 0, "id": "a"}),
        send(b, "move", {"move": m2, "v": 0, "id": "b"}),
    )
    frames = [await recv(a) for _ in range(2)] + [await recv(b) for _ in range(2)]
    kinds = sorted(f["t"] for f in frames)
    assert kinds == ["ack", "error", "state", "state"], frames
    error = next(f for f in frames if f["t"] == "error")
    assert error["d"]["code"] == "stale_version" and error["d"]["v"] == 1
    row = await database_sync_to_async(Game.objects.get)(pk=game.pk)
    assert row.version == 1
    assert await database_sync_to_async(Move.objects.filter(game_id=game.pk).count)() == 1
    await a.disconnect()
    await b.disconnect()
