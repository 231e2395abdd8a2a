"""Barricade A (RULES B1-B5): two decks, the stock's top card face up and playable."""

from __future__ import annotations

from .base import Variant, round_robin

VARIANT = Variant(
    id="barricade",
    name="Barricade A",
    decks=2,
    cards=104,
    tableau_piles=12,
    foundations=8,
    cells=0,
    stock=True,
    waste=False,
    rules=(
        "Two decks. 12 tableau piles of 3 face-up cards; the other 68 cards form the stock, "
        "whose top card is face up and playable; there is no draw. 8 foundations.",
        "Foundations build up by suit from Ace to King; any Ace starts any empty foundation.",
        "Tableau piles build down by one rank regardless of suit; one card at a time.",
        "The top stock card moves to a tableau pile or a foundation; the next one then shows.",
        "An empty tableau pile can never be filled again.",
    ),
    summary="Two decks, twelve piles and a face-up stock card; empty piles stay empty.",
    suits="CSHD",
    build="any_suit",
    empty="never",
    stock_playable=True,
    rule_ids={"build": "B2", "empty": "B5", "one_card": "B2", "draw": "B1", "layout": "B1"},
    layout=round_robin(12, 36),
)
