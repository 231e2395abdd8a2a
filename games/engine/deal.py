"""Seeded shuffles compatible with PySolFC (RULES D2, D3).

The shuffle is reimplemented rather than imported so that the hot path creates no Card objects;
the tests check it against the `pysol_cards` package on many deal numbers.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

#: Deal numbers up to this use Microsoft's LCG; above it, Python's Mersenne Twister (D2).
MS_LIMIT = 32000
#: PySolFC's largest seed (MTRandom.MAX_SEED); a larger number is not a PySolFC deal.
MAX_DEAL = 100_000_000_000_000_000_000
#: The largest deal number the server takes and gives. RULES.md D2 sets no upper bound, but
#: 2^53 - 1 is the largest whole number a JSON number carries exactly into every client
#: (JavaScript's Number.MAX_SAFE_INTEGER): a larger one would reach a browser as another deal.
MAX_SERVED_DEAL = 2**53 - 1

_MASK33 = (1 << 33) - 1


def ms_rearrange(cards: Sequence[int]) -> list[int]:
    """Microsoft's rank-major order, applied (by PySolFC) to 52-card decks only."""
    if len(cards) != 52:
        return list(cards)
    return [cards[i + j] for i in range(13) for j in (0, 39, 26, 13)]


def shuffle(cards: Sequence[int], deal: int) -> list[int]:
    """Shuffle a D1-ordered deck for deal number ``deal`` exactly as PySolFC does.

    The result is the talon: its LAST element is dealt first (D3).
    """
    if deal <= MS_LIMIT:
        out = ms_rearrange(cards)
        seed = deal
        for n in range(len(out) - 1, 0, -1):
            # LCRandom31: seeds below 2**31 take the plain 15-bit path; randint is modulo.
            seed = (seed * 214013 + 2531011) & _MASK33
            j = ((seed >> 16) & 0x7FFF) % (n + 1)
            out[n], out[j] = out[j], out[n]
        return out
    out = list(cards)
    rnd = random.Random(deal).random
    for n in range(len(out) - 1, 0, -1):
        # PySolFC's RandomBase.randint, not random.Random.randint.
        j = int(rnd() * (n + 1))
        out[n], out[j] = out[j], out[n]
    return out


def deal_round_robin(
    talon: Sequence[int], piles: int, cards: int | None = None
) -> tuple[list[list[int]], list[int]]:
    """Deal ``cards`` cards (all if None) one per pile left to right from the talon's end (D3).

    Returns the piles (bottom..top) and what remains of the talon (the stock, top last).
    """
    n = len(talon) if cards is None else cards
    order = list(reversed(talon))
    tableau: list[list[int]] = [[] for _ in range(piles)]
    for i in range(n):
        tableau[i % piles].append(order[i])
    return tableau, list(talon[: len(talon) - n])
