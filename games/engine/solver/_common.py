"""Shared pieces of the solver: card codes, the search budget, the normalised position.

Cards are coded as one character ``chr(rank * 4 + suit)`` so that a pile is a ``str``: slicing,
concatenation, hashing and sorting of piles then run in C, which is what makes a pure-Python
search fast enough.  ``rank = ord(c) >> 2`` and ``suit = ord(c) & 3``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

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
    """Time/node budget; checked every 512 nodes so the clock costs nothing measurable."""

    __slots__ = ("deadline", "max_nodes", "nodes", "next_check", "start")

    def __init__(self, time_limit: float | None, max_nodes: int | None) -> None:
        self.start = time.perf_counter()
        self.deadline = None if time_limit is None else self.start + time_limit
        self.max_nodes = max_nodes
        self.nodes = 0
        self.next_check = 512

    def check(self) -> None:
        self.next_check = self.nodes + 512
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
