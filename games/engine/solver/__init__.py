"""The solver: certifies daily deals (RULES.md W1) and gives hints.

``solve`` converts ``state.to_dict()`` (the full position, hidden cards included) into a compact
representation of its own (``_common``: one character per card, piles as ``str``), searches there
with a variant-specific search, then turns the abstract line into move strings by replaying it
through the engine, and checks the engine agrees (a win, or the claimed foundation count) before
returning it: a solver bug can cost a certification but never certify a wrong line.

Searches (each module documents its pruning and why it is sound):
- ``_builddown``: Portuguese, Spanish: best-first and depth-first taking turns, complete,
  closed sets on sorted piles, dead ends pruned by a proof;
- ``_freecell``: Chinese FreeCell: best-first, complete, closed set on sorted piles + cells;
- ``_stacks``: Countess, Barricade A: depth-first branch and bound on the par.

Soundness of the automatic foundation moves, shared by all of them: a card of rank r goes home
without branching only when no remaining card could ever want it as a base (every card of rank
r-1 that may build on it is home; a 2 only carries Aces, and an Ace can always go home itself)
and, with two decks, when it does not take the one foundation slot the other copy could use.
Then the position with the card home can make every move the other could, except moves onto
that card, which no card left can make: it reaches everything the other reaches, with at least
as many cards home.  So the searches lose no win and no par by these moves.

>>> from games.engine import new_game
>>> r = solve(new_game("spanish", 1), time_limit=5)
>>> r.outcome, r.par, r.par_proven
('won', 52, True)
"""

from __future__ import annotations

import gc
import logging
import random
import time
from collections import Counter
from collections.abc import Collection, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ._builddown import BuildDownSolver
from ._common import Budget, Outcome, Position, decode, encode
from ._freecell import FreeCellSolver
from ._stacks import NOSLOT, StackSolver

if TYPE_CHECKING:
    from ..state import State

log = logging.getLogger(__name__)

__all__ = ["SolveResult", "solve", "hint", "hint_line", "position_of"]

#: Share of ``solve``'s time limit kept for freeing the search's structures and replaying its line.
TEARDOWN_SHARE = 0.05


@dataclass
class SolveResult:
    """``outcome``: "won" (``line`` replays to a win), "lost" (proven: no line wins) or
    "unknown" (budget spent).  ``par``: cards home at the end of ``line``; ``par_proven``: no
    line from the position gets more home."""

    outcome: str
    line: list[str] = field(default_factory=list)
    par: int = 0
    par_proven: bool = False
    nodes: int = 0
    seconds: float = 0.0


def position_of(state: State) -> Position:
    """The full position of an engine state, from its ``to_dict()``."""
    d: dict[str, Any] = state.to_dict()
    return Position(
        variant=d["variant"],
        tableau=[list(p) for p in d["tableau"]],
        foundations=[list(f) for f in d["foundations"]],
        cells=list(d.get("cells") or []),
        stock=list(d.get("stock") or []),
        waste=list(d.get("waste") or []),
    )


def _heights(pos: Position, decks: int) -> list[int]:
    """Foundation heights as the searches keep them: two slots per suit, higher first."""
    by_suit: dict[int, list[int]] = {s: [] for s in range(4)}
    for f in pos.foundations:
        if f:
            by_suit[ord(encode(f[-1])) & 3].append(len(f))
    out = []
    for s in range(4):
        hs = sorted(by_suit[s], reverse=True) + [0, 0]
        out += [hs[0], hs[1]] if decks == 2 else [hs[0], NOSLOT]
    return out


def _search(pos: Position, budget: Budget) -> Outcome:
    v = pos.variant
    piles = ["".join(encode(c) for c in p) for p in pos.tableau]
    if v in ("portuguese", "spanish"):
        found = _heights(pos, 1)[0::2]
        return BuildDownSolver(piles, found, v == "portuguese", budget).run()
    if v in ("countess", "barricade"):
        decks = 2 if v == "barricade" else 1
        seq = "".join(encode(c) for c in reversed(pos.stock))
        waste = "".join(encode(c) for c in pos.waste)
        return StackSolver(
            piles, _heights(pos, decks), seq, waste, v == "countess", decks, budget
        ).run()
    if v == "chinese_freecell":
        cells = [encode(c) for c in pos.cells if c]
        return FreeCellSolver(piles, _heights(pos, 2), cells, budget).run()
    raise ValueError(f"no solver for variant {v!r}")


def _emit(state: State, line: list[tuple]) -> tuple[list[str], State]:
    """Abstract moves -> move strings, replayed through the engine (which checks legality).

    The searches name a foundation or a free cell only as "f" / "c" (they are interchangeable)
    and a cell card by its card; the engine's own legal moves pick the concrete slot.
    """
    out = []
    st = state
    for mv in line:
        src, dst = mv[0], mv[1]
        if src == "draw":
            s = "draw"
        else:
            if src.startswith("c:"):
                cell = st.to_dict()["cells"].index(decode(src[2:]))
                src = f"c{cell}"
            if dst in ("f", "c"):
                prefix = f"{src}-{dst}"
                s = next(m for m in st.legal_moves() if m.startswith(prefix))
            else:
                s = f"{src}-{dst}"
                if len(mv) > 2 and mv[2] > 1:
                    s += f":{mv[2]}"
        st = st.apply(s)
        out.append(s)
    return out, st


def solve(
    state: State, *, time_limit: float | None = 10.0, max_nodes: int | None = None
) -> SolveResult:
    """Search ``state`` for a win (or the par, for Countess/Barricade) within the budget."""
    t0 = time.perf_counter()
    pos = position_of(state)
    # Freeing a big search's millions of objects takes a few percent of the time it ran: keep
    # that back so the whole call fits the time limit.
    search_time = None if time_limit is None else time_limit * (1 - TEARDOWN_SHARE)
    budget = Budget(search_time, max_nodes)
    # The searches allocate millions of small tuples that never form cycles; the cyclic garbage
    # collector would rescan them all again and again (searches ran 3x slower with it on).
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        res = _search(pos, budget)
    finally:
        if was_enabled:
            gc.enable()
    elapsed = time.perf_counter() - t0
    try:
        moves, end = _emit(state, res.line)
        par = end.foundation_count
        if res.won and end.status != "won":
            raise ValueError("the line does not win in the engine")
        if not res.won and res.best > 0 and par != res.best:
            raise ValueError(f"the search counted {res.best} cards home, the engine {par}")
    except Exception:  # a solver bug: report it, never certify it
        log.exception("solver line rejected by the engine (%s deal %s)", pos.variant, state.deal)
        return SolveResult("unknown", [], state.foundation_count, False, res.nodes, elapsed)
    if res.won:
        outcome = "won"
        proven = True
    else:
        proven = res.exhausted
        outcome = "lost" if proven or res.lost_proven else "unknown"
    return SolveResult(
        outcome=outcome,
        line=moves,
        par=par,
        par_proven=proven,
        nodes=res.nodes,
        seconds=time.perf_counter() - t0,
    )


# A hint on a position with face-down cards searches this many orders of them.
HINT_SAMPLES = 5


def hint(state: State, **options: Any) -> str | None:
    """The move to play now: the first of ``hint_line``'s (which takes the same keywords),
    None when it has none."""
    line = hint_line(state, **options)
    return line[0] if line else None


def hint_line(
    state: State,
    *,
    time_limit: float | None = 1.0,
    max_nodes: int | None = None,
    samples: int = HINT_SAMPLES,
    seed: str = "",
    avoid: Collection[State] = frozenset(),
) -> list[str]:
    """The moves a hint suggests, the one to play now first: the best line a short search
    finds; a plain legal move otherwise; [] when no move goes anywhere new.

    Where the search saw the position itself, this is its whole line, so a caller can hand it
    out move by move while the player follows it. Hints searched afresh at every move went
    round in circles: two positions can each win by a line through the other (Portuguese deal
    1 after ``t0-t2`` and 29 hints: one line starts ``t0-t4``, the next ``t4-t0``), and the
    player was sent back and forth for ever.

    ``avoid``: the positions the game stood at on its way here. No suggested move leads back
    to one, so hints cannot go round in a circle however the searches' lines change: when the
    best line found starts by going back, each move forward is searched on its own instead,
    and when every legal move goes back there is no hint (the way on is to undo).

    Where two or more cards are face down (Countess' stock, Barricade A's below its top), the
    search must not see them: a line found with the true stock would tell the player about
    its order, which no API may reveal (RULES.md K2). So the face-down cards are dealt in
    `samples` random orders (from `seed`: the same position gets the same hint), each
    searched for a share of the time, and the move most of their lines start with is the hint,
    alone (the rest of a line played a guessed stock): what a player who knows which cards are
    unseen, but not their order, could work out.
    """
    legal = state.legal_moves()
    forward = [m for m in legal if state.apply(m) not in avoid] if avoid else legal
    if not forward:
        return []
    deadline = None if time_limit is None else time.perf_counter() + time_limit
    guessed = state.hidden_count > 1  # face-down cards, whose order the player does not know
    if guessed:
        positions = _unseen_orders(state, random.Random(seed), samples)
    else:
        positions, samples = [state], 1
    share = None if time_limit is None else time_limit / samples
    votes: Counter[str] = Counter()
    lines: dict[str, list[str]] = {}
    went_back = False
    for position in positions:
        line = solve(position, time_limit=share, max_nodes=max_nodes).line
        if line and line[0] in forward:
            votes[line[0]] += 1
            lines.setdefault(line[0], line)
        elif line:
            went_back = True
    if votes:
        most = max(votes.values())
        first = next(m for m in forward if votes[m] == most)  # a tie: in legal-move order
        return [first] if guessed else lines[first]
    if went_back and not guessed:
        line = _line_forward(state, forward, {*avoid, state}, deadline, max_nodes)
        if line:
            return line
    return [next((m for m in forward if "-f" in m), forward[0])]


def _line_forward(
    state: State,
    forward: list[str],
    behind: Collection[State],
    deadline: float | None,
    max_nodes: int | None,
) -> list[str]:
    """A line from one of the `forward` moves (foundation moves first) that never steps on a
    position `behind`, each move searched for an equal share of the time left; [] if none."""
    ordered = sorted(forward, key=lambda m: "-f" not in m)
    for i, move in enumerate(ordered):
        share = None if deadline is None else (deadline - time.perf_counter()) / (len(ordered) - i)
        if share is not None and share <= 0:
            break
        after = state.apply(move)
        if after.status == "won":
            return [move]
        line = solve(after, time_limit=share, max_nodes=max_nodes).line
        if line and not any(s in behind for s in _positions_along(after, line)):
            return [move, *line]
    return []


def _positions_along(state: State, line: list[str]) -> Iterator[State]:
    for move in line:
        state = state.apply(move)
        yield state


def _unseen_orders(state: State, rng: random.Random, samples: int) -> Iterator[State]:
    """`state` with its face-down cards in `samples` random orders; the stock's top stays
    where it is when it is face up (Barricade A). Shuffled from their sorted list, so the
    orders depend on which cards are unseen, not on the true one. The legal moves are the
    same in each: none depends on a face-down card."""
    full = state.to_dict()
    hidden = state.hidden_count
    unseen, seen = sorted(full["stock"][:hidden]), full["stock"][hidden:]
    for _ in range(samples):
        order = unseen[:]
        rng.shuffle(order)
        yield type(state).from_dict({**full, "stock": order + seen})
