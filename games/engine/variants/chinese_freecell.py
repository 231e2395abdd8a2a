"""Chinese FreeCell (RULES F1-F5): three suits, two decks, 4 free cells, sequence moves."""

from __future__ import annotations

from .base import Variant, round_robin

VARIANT = Variant(
    id="chinese_freecell",
    name="Chinese FreeCell",
    decks=2,
    cards=78,
    tableau_piles=11,
    foundations=6,
    cells=4,
    stock=False,
    waste=False,
    rules=(
        "Two decks of spades, hearts and diamonds (78 cards) dealt to 11 tableau piles; "
        "4 free cells; 6 foundations.",
        "Foundations build up by suit from Ace to King; any Ace starts any empty foundation.",
        "Tableau piles build down by one rank in a different suit.",
        "A free cell holds one card; a top card may go to an empty cell, and a cell's card to "
        "the tableau or a foundation, never to another cell.",
        "A sequence of up to (empty free cells + 1) cards may move as a unit.",
        "Only a King, or a sequence headed by a King, may move to an empty tableau pile.",
    ),
    summary="FreeCell with three suits of two decks, 11 piles and different-suit builds.",
    suits="SHD",
    build="other_suit",
    empty="king",
    sequences=True,
    rule_ids={"build": "F2", "empty": "F5", "one_card": "F4", "cells": "F3", "layout": "F1"},
    layout=round_robin(11),
)
