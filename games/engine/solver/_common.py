"""Shared pieces of the solver: card codes, the search budget, the normalised position.

Cards are coded as one character ``chr(rank * 4 + suit)`` so that a pile is a ``str``: slicing,
concatenation, hashing and sorting of piles then run in C, which is what makes a pure-Python
search fast enough.  ``rank = ord(c) >> 2`` and ``suit = ord(c) & 3``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

RANKS = "A23456789TJQK"
SUITS = "CSHD"


def encode(card: str) -> str:
    """``"TD"`` -> internal one-character code."""
    return chr((RANKS.index(card[0]) + 1) * 4 + SUITS.index(card[1]))


def decode(ch: str) -> str:
    """Internal one-character code -> ``"TD"``."""
    o = ord(ch)
    return RANKS[(o >> 2) - 1] + SUITS[o & 3]


class OutOfBudget(Exception):
    """Raised deep inside a search when the time or node budget is spent."""


class Budget:
    """Time/node budget, checked every ``EVERY`` nodes: often enough that a search whose nodes
    cost up to a millisecond stops within a few hundredths of a second of its deadline, rarely
    enough that the clock costs nothing measurable."""

    EVERY = 32

    __slots__ = ("deadline", "max_nodes", "nodes", "next_check", "start")

    def __init__(self, time_limit: float | None, max_nodes: int | None) -> None:
        self.start = time.perf_counter()
        self.deadline = None if time_limit is None else self.start + time_limit
        self.max_nodes = max_nodes
        self.nodes = 0
        self.next_check = self.EVERY

    def check(self) -> None:
        self.next_check = self.nodes + self.EVERY
        if self.max_nodes is not None and self.nodes >= self.max_nodes:
            raise OutOfBudget
        if self.deadline is not None and time.perf_counter() >= self.deadline:
            raise OutOfBudget

    def elapsed(self) -> float:
        return time.perf_counter() - self.start


@dataclass
class Position:
    """The full position in plain card codes, independent of the engine's dict layout.

    ``stock`` lists the stock with the next card to come off it LAST (like a pile).
    """

    variant: str
    tableau: list[list[str]]
    foundations: list[list[str]]
    cells: list[str | None] = field(default_factory=list)
    stock: list[str] = field(default_factory=list)
    waste: list[str] = field(default_factory=list)


@dataclass
class Outcome:
    """What a variant search reports: abstract moves, best count, and whether it is exhaustive."""

    won: bool
    exhausted: bool  # the search space was fully explored (or closed by the bound)
    line: list[tuple]
    best: int
    nodes: int
    lost_proven: bool = False  # no win exists, even if the par is not proven


class LinkedSearch(Protocol):
    """What ``search_outcome`` needs of a search: its budget, its card count, and ``best``,
    the most cards home seen with the path that got them there."""

    budget: Budget
    total: int
    best: tuple[int, Any]


def unlink(path: Any, step: Callable[[Any], tuple]) -> list[tuple]:
    """A path kept as linked pairs ``(move, previous)`` -> the list of ``step(move)``."""
    line = []
    while path:
        mv, path = path
        line.append(step(mv))
    line.reverse()
    return line


def search_outcome(
    search: Callable[[], Any], solver: LinkedSearch, step: Callable[[Any], tuple]
) -> Outcome:
    """Runs ``search`` (the winning path, or None once every position is explored) and turns
    it into an Outcome.  Without a win, the line is the one to the most cards home seen: the
    best the player can be shown, and the par whenever the search was exhaustive."""
    try:
        path = search()
        exhausted = True
    except OutOfBudget:
        path = None
        exhausted = False
    won = path is not None
    home, line = (solver.total, path) if won else solver.best
    return Outcome(won, exhausted or won, unlink(line, step), home, solver.budget.nodes)
