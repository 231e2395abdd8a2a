"""A stored game at any version, for a replay (`GET /api/games/{id}/positions`).

Only a game's latest position is stored, so an earlier one is played again from the deal. A
page deep into a long game would replay everything before it, and a client paging through a
game would replay it again for every page: a bot's game of 63,000 versions took 0.53 s of
engine work for its last page. So the positions at every CHECKPOINT-th version are kept in this
process as they are worked out (a stored history never changes: rows are only added), and a
page starts from the nearest one before it: at most CHECKPOINT + a page of engine steps.

An undo is replayed as the server played it: the move it took back, taken back from the
position (`State.before`), which needs no history in the state, so a checkpoint holds one
position alone. Which move an undo took back is read from the history's strings: from a
checkpoint on, unless an undo reaches back past it (`_actions`).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

from games import engine
from games.models import Game
from games.selectors import state_view

CHECKPOINT = 500
# Positions kept, all games together: one is a few hundred bytes (no history).
MAX_CHECKPOINTS = 20_000

# (game id, its start time, version) -> the position. The start time tells apart two games
# that had one id (a test database rolled back reuses ids).
_checkpoints: OrderedDict[tuple[int, Any, int], engine.State] = OrderedDict()
_lock = threading.Lock()  # REST views run on several threads


def positions(game: Game, start: int, limit: int) -> list[dict[str, Any]]:
    """The game as it stood at versions `start` to `start + limit - 1` (as far as it goes):
    `{"v", "state"}` each, the state as a player saw it then (no face-down card, its
    `last_move` the action that made it). The last, the game's own, is shown as
    `GET /api/games/{id}` shows it (`resigned`, a day's end)."""
    end = min(game.version, start + limit - 1)
    if start > end:
        return []
    v, state = _nearest_checkpoint(game, start)
    first, history, taken_back = _actions(game, v, end)
    shown = []
    while True:
        if v >= start:
            last_move = history[v - first - 1] if v > first else None
            shown.append({"v": v, "state": _view(game, state, v, last_move)})
        if v == end:
            return shown
        i = v - first  # the action numbered v + 1
        action = history[i]
        v += 1
        state = state.before(taken_back[i]) if action == engine.UNDO else state.apply(action)
        if v % CHECKPOINT == 0:
            state = state.detached()  # no chain of every position before it
            _keep(game, v, state)


def _actions(game: Game, v: int, end: int) -> tuple[int, list[str], dict[int, str]]:
    """The actions numbered `first` + 1 to `end` (a list from 0), `first`, and the move each undo
    among them took back (by index), for a replay from version `v`.

    From a kept position only the actions from the one that made it are read: a page at the
    end of a 100,000-action game read all of them before. An undo there that takes back a move
    from before that one needs the history before it, and then the whole of it is read."""
    if v > 0:
        history = _read(game, v - 1, end)
        made_v = history[0]
        taken = undone_moves(history[1:], [] if made_v == engine.UNDO else [made_v])
        if taken is not None:
            return v - 1, history, {i + 1: move for i, move in taken.items()}
    history = _read(game, 0, end)
    taken = undone_moves(history)
    if taken is None:  # the server takes back no move that is not there
        raise ValueError(f"Game {game.pk}: an undo in its history has no move to take back")
    return 0, history, taken


def _read(game: Game, after: int, end: int) -> list[str]:
    rows = game.move_rows.filter(n__gt=after, n__lte=end).order_by("n")
    return list(rows.values_list("move", flat=True))


def undone_moves(history: list[str], standing: list[str] | None = None) -> dict[int, str] | None:
    """For each undo in `history` (by index), the move it took back: the nearest one before it
    that no other undo had taken back, in `history` or else in `standing` (the moves standing
    before it, the latest last). None if an undo finds none there: it took back a move from
    further back, which the caller did not read."""
    standing = list(standing or ())
    taken: dict[int, str] = {}
    for i, action in enumerate(history):
        if action == engine.UNDO:
            if not standing:
                return None
            taken[i] = standing.pop()
        else:
            standing.append(action)
    return taken


def _view(game: Game, state: engine.State, v: int, last_move: str | None) -> dict[str, Any]:
    if v == game.version:
        return state_view(game, state, last_move)
    view = state.view()
    view["moves"], view["last_move"] = v, last_move
    return view


def _nearest_checkpoint(game: Game, start: int) -> tuple[int, engine.State]:
    """The latest kept position at or before `start`, or the deal."""
    with _lock:
        for v in range(start - start % CHECKPOINT, 0, -CHECKPOINT):
            key = (game.pk, game.started_at, v)
            state = _checkpoints.get(key)
            if state is not None:
                _checkpoints.move_to_end(key)
                return v, state
    return 0, engine.new_game(game.deal.variant, game.deal.number)


def _keep(game: Game, v: int, state: engine.State) -> None:
    key = (game.pk, game.started_at, v)
    with _lock:
        _checkpoints[key] = state
        _checkpoints.move_to_end(key)
        while len(_checkpoints) > MAX_CHECKPOINTS:
            _checkpoints.popitem(last=False)
