"""Choosing and certifying a day's deal: pure computation, no Django.

Kept free of Django so a spawned worker process can run it without setting up the project
(games.daily runs it there, off the request threads). The secret comes in as an argument.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import time
from dataclasses import dataclass

from games import engine
from games.engine.deal import MAX_SERVED_DEAL
from games.engine.solver import solve

# Variants whose daily deal must be proven winnable; the others are chosen by par (RULES W1).
WINNABLE = ("portuguese", "spanish", "chinese_freecell")
# Daily deals come from the whole range a client may ask for. The cards a player sees narrow a
# deal number down among those it could be: over a range of 10^9, the first cards seen and a
# brute force of an hour's CPU named the deal, and so the face-down stock of Countess and
# Barricade A. Over 2^53 the same search would take centuries.
MAX_DAILY_DEAL = MAX_SERVED_DEAL


@dataclass(frozen=True)
class Budget:
    """How hard the certifier tries: candidates to look at and solver nodes for each."""

    candidates: int
    max_nodes: int
    time_limit: float


BUDGETS: dict[str, Budget] = {
    "portuguese": Budget(candidates=40, max_nodes=200_000, time_limit=20.0),
    "spanish": Budget(candidates=40, max_nodes=200_000, time_limit=20.0),
    "chinese_freecell": Budget(candidates=40, max_nodes=200_000, time_limit=20.0),
    "countess": Budget(candidates=6, max_nodes=60_000, time_limit=8.0),
    "barricade": Budget(candidates=6, max_nodes=60_000, time_limit=8.0),
}


@dataclass
class Certificate:
    deal: int
    winnable: bool
    par_cards: int
    line: list[str]
    par_proven: bool
    candidates_tried: int
    seconds: float


def candidate_deal(secret: str, date: dt.date, variant: str, index: int) -> int:
    """The index-th candidate deal number for a day: unpredictable without the secret."""
    message = f"{date.isoformat()}|{variant}|{index}".encode()
    digest = hmac.new(secret.encode(), message, hashlib.sha256).digest()
    return 1 + int.from_bytes(digest[:8], "big") % MAX_DAILY_DEAL


def tidy_line(variant: str, deal: int, line: list[str]) -> list[str]:
    """The same result in fewer moves: a short route through the line's own positions.

    A search line can wander (a Barricade A line of 3,510 moves was seen reaching 14 cards),
    and the stored line's length is shown to players as the par. From each position the route
    jumps to the furthest later position of the line that one legal move reaches (which also
    cuts every loop), and it stops at the first position with the line's most foundation cards.
    """
    states = [engine.new_game(variant, deal)]
    for move in line:
        states.append(states[-1].apply(move))
    best = max(s.foundation_count for s in states)
    goal = next(i for i, s in enumerate(states) if s.foundation_count == best)
    if states[-1].status == "won":
        goal = len(states) - 1
    last_seen = {state: i for i, state in enumerate(states[: goal + 1])}
    route: list[str] = []
    i = 0
    while i < goal:
        move, i = max(
            ((m, last_seen.get(nxt, -1)) for m, nxt in states[i].successors()),
            key=lambda pair: pair[1],
        )
        route.append(move)
    return route


def certify(secret: str, date: dt.date, variant: str, budget: Budget) -> Certificate:
    """Choose and certify the day's deal."""
    started = time.perf_counter()
    best: Certificate | None = None
    for index in range(budget.candidates):
        deal = candidate_deal(secret, date, variant, index)
        state = engine.new_game(variant, deal)
        result = solve(state, time_limit=budget.time_limit, max_nodes=budget.max_nodes)
        line = tidy_line(variant, deal, list(result.line))
        if variant in WINNABLE:
            if result.outcome == "won":
                # Never trust a certificate that does not replay to a win.
                if engine.replay(variant, deal, line).status != "won":
                    continue
                return Certificate(
                    deal,
                    True,
                    result.par,
                    line,
                    True,
                    index + 1,
                    time.perf_counter() - started,
                )
            continue
        if best is None or result.par > best.par_cards:
            best = Certificate(
                deal,
                result.outcome == "won",
                result.par,
                line,
                result.par_proven,
                index + 1,
                0.0,
            )
        if result.outcome == "won":
            break
    if best is None:
        raise RuntimeError(
            f"No {variant} candidate for {date} was proven winnable within the budget "
            f"({budget.candidates} candidates)."
        )
    best.candidates_tried = budget.candidates
    best.seconds = time.perf_counter() - started
    return best
