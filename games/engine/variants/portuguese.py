"""Portuguese Solitaire (RULES P1-P4)."""

from __future__ import annotations

from .base import Variant, round_robin

VARIANT = Variant(
    id="portuguese",
    name="Portuguese Solitaire",
    decks=1,
    cards=52,
    tableau_piles=13,
    foundations=4,
    cells=0,
    stock=False,
    waste=False,
    rules=(
        "13 tableau piles of 4 face-up cards; no stock, no free cells; 4 foundations.",
        "Foundations build up by suit from Ace to King; any Ace starts any empty foundation.",
        "Tableau piles build down by one rank regardless of suit; nothing goes on an Ace.",
        "Move one top card at a time, to another tableau pile or to a foundation.",
        "Only a King may move to an empty tableau pile.",
    ),
    summary="Build all 52 cards onto the foundations; only Kings fill empty piles.",
    build="any_suit",
    empty="king",
    rule_ids={"build": "P2", "empty": "P4", "one_card": "P2", "layout": "P1"},
    layout=round_robin(13, 52),
)
