"""Countess (RULES K1-K5)."""

from __future__ import annotations

from .base import Variant, round_robin

VARIANT = Variant(
    id="countess",
    name="Countess",
    decks=1,
    cards=52,
    tableau_piles=4,
    foundations=4,
    cells=0,
    stock=True,
    waste=True,
    rules=(
        "4 tableau piles of 1 card; the other 48 cards form a face-down stock; 4 foundations.",
        "Draw turns the top stock card onto the waste, one at a time, with no redeal.",
        "Foundations build up by suit from Ace to King; any Ace starts any empty foundation.",
        "The top waste card and top tableau cards move to a foundation or onto a tableau "
        "card one rank higher, regardless of suit.",
        "An empty tableau pile can never be filled again.",
    ),
    summary="Four piles and a one-pass stock; empty piles stay empty.",
    build="any_suit",
    empty="never",
    draw=True,
    rule_ids={"build": "K3", "empty": "K5", "one_card": "K4", "draw": "K2", "layout": "K1"},
    layout=round_robin(4, 4),
)
