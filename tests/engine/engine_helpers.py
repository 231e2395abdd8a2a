"""Shorthand for building positions in tests.

``pos("portuguese", {0: "5C 9H", 3: "KD"}, foundations={1: "4H"})`` is a Portuguese position
with t0 = 5C 9H, t3 = KD, f1 = AH..4H, everything else empty.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from games.engine import VARIANTS, EngineError, State

RANKS = "A23456789TJQK"


def cards(text: str) -> list[str]:
    return text.split()


def foundation(top: str) -> list[str]:
    """'4H' -> ['AH', '2H', '3H', '4H']."""
    return [RANKS[i] + top[1] for i in range(RANKS.index(top[0]) + 1)]


def pos(
    variant: str,
    tableau: dict[int, str] | None = None,
    *,
    foundations: dict[int, str] | None = None,
    cells: dict[int, str] | None = None,
    stock: str = "",
    waste: str = "",
    moves: int = 0,
) -> State:
    v = VARIANTS[variant]
    tab = [cards((tableau or {}).get(i, "")) for i in range(v.tableau_piles)]
    fnd = [
        foundation((foundations or {})[i]) if i in (foundations or {}) else []
        for i in range(v.foundations)
    ]
    cl = [(cells or {}).get(i) for i in range(v.cells)]
    return State.from_dict(
        {
            "variant": variant,
            "deal": 0,
            "moves": moves,
            "tableau": tab,
            "foundations": fnd,
            "cells": cl,
            "stock": cards(stock),
            "waste": cards(waste),
        }
    )


def refused(state: State, move: str) -> EngineError:
    """The EngineError that applying ``move`` raises (fails the test if none)."""
    try:
        state.apply(move)
    except EngineError as e:
        return e
    raise AssertionError(f"{move} was accepted")


def all_cards(d: dict[str, Any]) -> Counter[str]:
    """Multiset of every card of a to_dict()."""
    c: Counter[str] = Counter()
    for p in d["tableau"]:
        c.update(p)
    for p in d["foundations"]:
        c.update(p)
    c.update(x for x in d["cells"] if x)
    c.update(d["stock"])
    c.update(d["waste"])
    return c


def full_deck(variant: str) -> Counter[str]:
    v = VARIANTS[variant]
    return Counter({r + s: v.decks for r in RANKS for s in v.suits})


def view_cards(view: dict[str, Any]) -> Counter[str]:
    """Every card code anywhere in a view, except inside legal move strings."""
    found: Counter[str] = Counter()

    def walk(x: Any) -> None:
        if isinstance(x, str):
            if len(x) == 2 and x[0] in RANKS and x[1] in "CDHS":
                found[x] += 1
        elif isinstance(x, dict):
            for k, val in x.items():
                if k != "legal_moves":
                    walk(val)
        elif isinstance(x, list):
            for val in x:
                walk(val)

    walk(json.loads(json.dumps(view)))
    return found


def well_formed_moves(variant: str, max_n: int = 13) -> list[str]:
    """Every move string of this variant's notation (its own piles), legal or not."""
    v = VARIANTS[variant]
    piles = [f"t{i}" for i in range(v.tableau_piles)]
    piles += [f"f{i}" for i in range(v.foundations)]
    piles += [f"c{i}" for i in range(v.cells)]
    if v.stock:
        piles.append("stock")
    if v.waste:
        piles.append("waste")
    out = ["draw"]
    for a in piles:
        for b in piles:
            out.append(f"{a}-{b}")
            out.extend(f"{a}-{b}:{n}" for n in range(2, max_n + 1))  # ":N" for N >= 2
    return out
