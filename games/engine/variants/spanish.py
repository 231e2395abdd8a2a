"""Spanish Patience (RULES S1-S4)."""

from __future__ import annotations

from ..cards import FIRST_KING
from ..deal import deal_round_robin
from .base import Variant


def kings_to_bottom(pile: list[int]) -> list[int]:
    """S2: a stable partition, Kings first (bottom), each group keeping its order."""
    return [c for c in pile if c >= FIRST_KING] + [c for c in pile if c < FIRST_KING]


def layout(talon: list[int]) -> tuple[list[list[int]], list[int]]:
    tableau, stock = deal_round_robin(talon, 13, 52)
    return [kings_to_bottom(p) for p in tableau], stock


VARIANT = Variant(
    id="spanish",
    name="Spanish Patience",
    decks=1,
    cards=52,
    tableau_piles=13,
    foundations=4,
    cells=0,
    stock=False,
    waste=False,
    rules=(
        "13 tableau piles of 4 face-up cards; no stock, no free cells; 4 foundations.",
        "During the deal the Kings of each pile go to its bottom, keeping their order.",
        "Foundations build up by suit from Ace to King; any Ace starts any empty foundation.",
        "Tableau piles build down by one rank regardless of suit; one card at a time.",
        "Any card may move to an empty tableau pile.",
    ),
    summary="Portuguese Solitaire with Kings dealt to the bottom and any card filling a space.",
    build="any_suit",
    empty="any",
    rule_ids={"build": "S3", "empty": "S4", "one_card": "S3", "layout": "S1"},
    layout=layout,
)
