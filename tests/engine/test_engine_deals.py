"""Deals against the pysol_cards package, computed independently of the engine."""

from __future__ import annotations

import pytest
from pysol_cards.cards import createCards
from pysol_cards.random import shuffle as pysol_shuffle
from pysol_cards.random_base import RandomBase

from games.engine import deal_layout

DEALS = (
    list(range(1, 201))
    + list(range(31990, 32000 + 1))
    + list(range(32001, 32101))
    + [10**6, 2**31 - 1, 2**31, 2**33 + 7, 10**15, 10**20]
)


def pysol_portuguese(deal: int) -> list[list[str]]:
    cards = pysol_shuffle(createCards(1), deal, RandomBase.DEALS_PYSOLFC)
    cards.reverse()  # PySolFC deals from the end of the talon
    piles: list[list[str]] = [[] for _ in range(13)]
    for i, c in enumerate(cards):
        piles[i % 13].append("0A23456789TJQK"[c.rank] + c.suit_s())
    return piles


@pytest.mark.parametrize("deal", DEALS)
def test_portuguese_deals_match_pysol_cards(deal: int) -> None:
    assert deal_layout("portuguese", deal)["tableau"] == pysol_portuguese(deal)


def test_two_deck_deals_use_the_d1_deck_and_no_ms_rearrangement() -> None:
    # pysol_cards builds two decks in D1 order (C, S, H, D per deck); compare the whole talon.
    for deal in (1, 500, 32000, 32001, 123456789):
        cards = pysol_shuffle(createCards(2), deal, RandomBase.DEALS_PYSOLFC)
        talon = ["0A23456789TJQK"[c.rank] + c.suit_s() for c in cards]
        d = deal_layout("barricade", deal)
        assert d["stock"] == talon[:68]
        for i in range(12):
            assert d["tableau"][i] == [talon[-1 - i], talon[-13 - i], talon[-25 - i]]


def test_chinese_freecell_deck_of_78() -> None:
    for deal in (1, 7, 32000, 32001, 10**9):
        deck = [r + s for _ in range(2) for s in "SHD" for r in "A23456789TJQK"]
        talon = pysol_shuffle(list(deck), deal, RandomBase.DEALS_PYSOLFC)
        order = talon[::-1]
        expected = [order[i::11] for i in range(11)]
        assert deal_layout("chinese_freecell", deal)["tableau"] == expected


def test_bad_deals_are_refused() -> None:
    from games.engine import EngineError, new_game

    for bad in (0, -1, True, 1.5, "7", None, 10**20 + 1):
        with pytest.raises(EngineError) as e:
            new_game("portuguese", bad)  # type: ignore[arg-type]
        assert e.value.code == "bad_deal"
    with pytest.raises(EngineError) as e:
        new_game("klondike", 1)
    assert e.value.code == "unknown_variant"
