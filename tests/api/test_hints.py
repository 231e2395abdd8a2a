"""Practice hints over REST (`GET /api/games/{id}/hint`): followed one after another, they win.

Each hint was once a fresh search from the position alone, and following them on Portuguese
deal 1 after `t0-t2` moved the 3 of Diamonds between piles 1 and 5 for ever (a player's report:
180 moves of `t4-t0 t0-t4`). games.hints keeps the line a hint came from and tells a new
search where the game has been.
"""

from __future__ import annotations

import json

import pytest

from games import hints
from games.engine import new_game as engine_game
from tests.api.test_games_api import new_game

pytestmark = pytest.mark.django_db


@pytest.fixture
def searches(monkeypatch):  # noqa: ANN001, ANN201
    """The hint searches run, as the `avoid` sets they were given; and no hint throttle."""
    from games.api import throttles

    monkeypatch.setattr(throttles.HintThrottle, "rate", "10000/min", raising=False)
    made: list[set] = []
    real = hints.hint_line

    def counted(state, **kwargs):  # noqa: ANN001, ANN202
        made.append(kwargs["avoid"])
        return real(state, **kwargs)

    monkeypatch.setattr(hints, "hint_line", counted)
    return made


def hint(api, game_id: int) -> str | None:  # noqa: ANN001
    res = api.get(f"/api/games/{game_id}/hint")
    assert res.status_code == 200, res.content
    return res.json()["move"]


def move(api, game_id: int, move: str, v: int) -> dict:  # noqa: ANN001
    """Play `move` at version `v`, or "undo" the last one."""
    if move == "undo":
        res = api.post(f"/api/games/{game_id}/undo", {"v": v}, format="json")
    else:
        res = api.post(f"/api/games/{game_id}/moves", {"move": move, "v": v}, format="json")
    assert res.status_code == 200, res.content
    return res.json()


def position(state: dict) -> str:
    """A state's piles alone: the same position at two versions gives the same string."""
    return json.dumps([state.get(pile) for pile in ("tableau", "foundations", "cells", "waste")])


def test_following_hints_wins_in_one_line_with_no_position_twice(api, searches):  # noqa: ANN001
    game = new_game(api, "portuguese", 1)
    body = move(api, game["id"], "t0-t2", 0)
    seen = [position(body["state"])]
    while body["state"]["status"] == "playing" and len(seen) < 300:
        body = move(api, game["id"], hint(api, game["id"]), body["v"])
        seen.append(position(body["state"]))
    assert body["state"]["status"] == "won"
    assert len(set(seen)) == len(seen)
    assert len(searches) == 1  # one search; the rest of its line was handed out move by move


def test_the_same_hint_twice_without_a_move_between(api, searches):  # noqa: ANN001
    game = new_game(api, "spanish", 1)
    assert hint(api, game["id"]) == hint(api, game["id"])
    assert len(searches) == 1


def test_a_move_off_the_line_ends_it_and_a_new_search_avoids_the_way_back(api, searches):  # noqa: ANN001
    game = new_game(api, "portuguese", 1)
    start = engine_game("portuguese", 1)
    first = hint(api, game["id"])
    other = next(m for m in game["state"]["legal_moves"] if m != first)
    move(api, game["id"], other, 0)
    suggested = hint(api, game["id"])
    assert len(searches) == 2 and searches[1] == {start}
    assert start.apply(other).apply(suggested) != start
    move(api, game["id"], "undo", 1)  # back at the start: the undone move is not behind it
    hint(api, game["id"])
    assert len(searches) == 3 and searches[2] == set()


def test_positions_behind_leave_out_what_undos_took_back(api):  # noqa: ANN001
    from games.models import Game

    game = new_game(api, "portuguese", 1)
    start = engine_game("portuguese", 1)
    a, b, c = "t0-t2", *start.apply("t0-t2").legal_moves()[:2]
    for v, action in enumerate([a, b, "undo", c]):
        body = move(api, game["id"], action, v)
    assert body["v"] == 4
    row = Game.objects.get(pk=game["id"])
    now = start.apply(a).apply(c)
    assert hints.positions_behind(row, now) == {start, start.apply(a)}


def test_a_kept_lines_hint_needs_no_solver_slot(api, searches, monkeypatch):  # noqa: ANN001
    """Only a search waits for one of the process's solver slots: following a kept line is a
    cache read, answered while other players' hints hold every slot."""
    import threading

    from games import selectors

    slots = threading.BoundedSemaphore(1)
    monkeypatch.setattr(selectors, "_hint_slots", slots)
    monkeypatch.setattr(selectors, "HINT_WAIT_SECONDS", 0.05)
    game = new_game(api, "spanish", 1)
    move(api, game["id"], hint(api, game["id"]), 0)
    slots.acquire()  # every slot busy
    assert hint(api, game["id"]) is not None
    api.post(f"/api/games/{game['id']}/undo", {"v": 1}, format="json")  # off the line
    res = api.get(f"/api/games/{game['id']}/hint")
    assert res.status_code == 429 and res.json()["code"] == "rate_limited"
    assert len(searches) == 1
