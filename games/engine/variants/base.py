"""What a variant is: data plus a few rule functions.

The move generator in ``state.py`` is shared; a variant only says how it deals, what builds on
what, what may fill an empty pile, and which optional parts (stock, waste, cells, sequence moves)
it has. The rule ids let error messages name the rule a player broke.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Literal

from ..cards import make_deck
from ..deal import deal_round_robin

#: A layout function takes the shuffled talon (last card dealt first) and returns
#: (tableau piles bottom..top, stock bottom..top).
Layout = Callable[[list[int]], tuple[list[list[int]], list[int]]]

BuildRule = Literal["any_suit", "other_suit"]
EmptyRule = Literal["king", "any", "never"]


@dataclass(frozen=True, eq=False)
class Variant:
    """One game's description; see docs/engine-contract.md for the public fields."""

    id: str
    name: str
    decks: int
    cards: int
    tableau_piles: int
    foundations: int
    cells: int
    stock: bool
    waste: bool
    rules: tuple[str, ...]
    summary: str
    # --- engine data (additions to the contract) ---
    #: Suit letters of the deck, a subset of "CSHD".
    suits: str = "CSHD"
    #: C4 ("any_suit") or F2 ("other_suit").
    build: BuildRule = "any_suit"
    #: What may go to an empty tableau pile: a King (or King-headed sequence), anything, nothing.
    empty: EmptyRule = "king"
    #: Whether sequences of up to (empty cells + 1) cards move as a unit (F4).
    sequences: bool = False
    #: Whether the top stock card is face up and playable (Barricade A).
    stock_playable: bool = False
    #: Whether `draw` turns the top stock card onto the waste (Countess).
    draw: bool = False
    #: Rule ids quoted in error messages: keys build, empty, one_card, draw.
    rule_ids: Mapping[str, str] = field(default_factory=dict)
    #: How the talon is dealt; see ``Layout``.
    layout: Layout = field(default=lambda talon: ([], []), repr=False)

    def deck(self) -> list[int]:
        """The unshuffled deck, in D1 order."""
        return make_deck(self.decks, self.suits)

    def rule(self, key: str) -> str:
        return self.rule_ids.get(key, "")


def round_robin(piles: int, cards: int | None = None) -> Layout:
    """The D3 deal as a layout function."""

    def layout(talon: list[int]) -> tuple[list[list[int]], list[int]]:
        return deal_round_robin(talon, piles, cards)

    return layout
