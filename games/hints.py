"""A practice game's hints, one after another, that lead somewhere.

Each hint used to be a fresh search from the position alone, and following them could move
one card back and forth for ever: two positions can each win by a line through the other, and
the search from each started with the move to the other (Portuguese deal 1 after `t0-t2` and
29 hints). Two things keep a player who follows hints going forward:

- The line a hint came from is kept (in the cache, so every server process sees it), and while
  the game's history since then is that line's first moves, the next hint is the line's next
  move: following hints plays one line to its end (a win, or for Countess and Barricade A the
  most cards home the search found), and costs no new search.
- A fresh search is told the positions the game stood at on its way here (undone moves left
  out), and suggests no move back to one of them (`solver.hint_line`'s `avoid`).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager

from django.core.cache import cache

from games import engine
from games.engine.solver import hint_line
from games.models import Game
from server.stores import STORE_ERRORS, log_away

# How far back the positions a hint must not return to are read: a hint reads the history's
# last rows, and a game of tens of thousands of moves (a bot's) should not cost a read of all
# of them for each. A circle longer than this is not seen, and is not one a search's line makes.
PATH_ROWS = 2_000
# How long a kept line waits for the player's next move: long enough for a slow player, short
# enough that abandoned games' lines do not pile up.
LINE_SECONDS = 6 * 60 * 60
SEARCH_SECONDS = 1.0


def next_move(
    game: Game, state: engine.State, solver_slot: Callable[[], AbstractContextManager]
) -> str | None:
    """The hint for `game`, whose position is `state`: the kept line's next move while the
    player follows it, else the first move of a new search's line, run inside `solver_slot()`
    (the process's few searches at once); None when no move goes anywhere the game has not
    been."""
    key = _line_key(game)
    try:
        kept = cache.get(key)
    except STORE_ERRORS as exc:  # Redis away: a search of its own, as for a line not kept
        log_away("A hint's kept line (searched again)", exc)
        kept = None
    if kept is not None:
        move = _kept_line_move(game, state, kept["from"], kept["line"])
        if move is not None:
            return move
    behind = positions_behind(game, state)
    with solver_slot():
        line = hint_line(
            state, time_limit=SEARCH_SECONDS, seed=f"{game.pk}:{game.version}", avoid=behind
        )
    if len(line) > 1:  # a whole line, searched on the position itself: kept to follow
        try:
            cache.set(key, {"from": game.version, "line": line}, LINE_SECONDS)
        except STORE_ERRORS as exc:
            log_away("A hint's kept line (searched again)", exc)
    return line[0] if line else None


def positions_behind(game: Game, state: engine.State) -> set[engine.State]:
    """The positions `game` stood at on its way to `state`, its position now: the history
    read backwards from its end, each move taken back from the position after it, and a move
    an undo took back skipped (it is not on the way here). At most PATH_ROWS rows are read."""
    rows = game.move_rows.order_by("-n").values_list("move", flat=True)[:PATH_ROWS]
    behind: set[engine.State] = set()
    taken_back = 0  # undos seen, reading backwards, whose move has not been reached yet
    for action in rows:
        if action == engine.UNDO:
            taken_back += 1
        elif taken_back:
            taken_back -= 1
        else:
            try:
                state = state.before(action)
            except engine.EngineError:  # a history that does not lead here: replay_verify's
                break  # to report; the hint goes on with the positions read so far
            behind.add(state)
    return behind


def _kept_line_move(game: Game, state: engine.State, start: int, line: list[str]) -> str | None:
    """The kept line's move for now, if the game has played exactly its first moves since
    version `start` (an undo or another move ends the line) and it is still legal."""
    played = game.version - start
    if not 0 <= played < len(line):
        return None
    if played:
        since = game.move_rows.filter(n__gt=start).order_by("n").values_list("move", flat=True)
        if list(since) != line[:played]:
            return None
    move = line[played]
    return move if state.is_legal(move) else None


def _line_key(game: Game) -> str:
    """One game's kept line: the start time tells apart two games that had one id (a test
    database rolled back reuses ids)."""
    return f"hint-line:{game.pk}:{game.started_at.timestamp()}"
