"""Cards as small ints (RULES C1, D1).

A card is ``rank * 4 + suit`` with rank 1..13 and suit an index into ``SUITS``. Ints keep piles
as cheap tuples and make the rule tests arithmetic: the card that goes next on a foundation whose
top is ``c`` is ``c + 4``; a card builds on a tableau card when ``rank(c) + 1 == rank(t)``. The
two copies of a card in a two-deck game are the same int, so interchangeable copies compare
equal, as C1 says they should.

>>> card_code(parse_card("TD"))
'TD'
>>> rank(parse_card("KH")), SUITS[suit(parse_card("KH"))]
(13, 'H')
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

RANKS = "A23456789TJQK"
#: Suit indices follow PySolFC's numbering (C, S, H, D), which is also the D1 deck order.
SUITS = "CSHD"

KING = 13
#: Every card int is in range(MIN_CARD, MAX_CARD + 1); 0 means "no card" (empty cell/foundation).
MIN_CARD = 1 * 4
MAX_CARD = 13 * 4 + 3
#: card < FIRST_TWO  <=>  the card is an Ace; card >= FIRST_KING  <=>  it is a King.
FIRST_TWO = 2 * 4
FIRST_KING = KING * 4

_CODES: list[str | None] = [None] * (MAX_CARD + 1)
_BY_CODE: dict[str, int] = {}
for _r in range(1, 14):
    for _s in range(4):
        _c = _r * 4 + _s
        _CODES[_c] = RANKS[_r - 1] + SUITS[_s]
        _BY_CODE[_CODES[_c]] = _c
#: Card int -> code string, as a tuple indexed by the int (None for non-card slots).
CODES: tuple[str | None, ...] = tuple(_CODES)


def make_card(rank_: int, suit_: str | int) -> int:
    """The card int for a rank (1..13) and a suit letter or index."""
    s = SUITS.index(suit_) if isinstance(suit_, str) else suit_
    return rank_ * 4 + s


def rank(card: int) -> int:
    """Rank 1 (Ace) .. 13 (King)."""
    return card >> 2


def suit(card: int) -> int:
    """Suit index into ``SUITS``."""
    return card & 3


def card_code(card: int) -> str:
    """The notation of a card, e.g. ``'AS'``."""
    code = CODES[card] if 0 < card <= MAX_CARD else None
    if code is None:
        raise ValueError(f"not a card: {card!r}")
    return code


def parse_card(code: str) -> int:
    """The card int for a code like ``'TD'``; ValueError if it is not one."""
    try:
        return _BY_CODE[code]
    except (KeyError, TypeError):
        raise ValueError(f"not a card code: {code!r}") from None


def codes(cards: Iterable[int]) -> list[str]:
    """Card ints -> list of codes (JSON-friendly)."""
    return [CODES[c] for c in cards]  # type: ignore[misc]


def make_deck(decks: int = 1, suits: Sequence[str] = SUITS) -> list[int]:
    """The unshuffled deck in D1 order: per deck, per suit in C, S, H, D order, Ace to King."""
    order = [s for s in "CSHD" if s in suits]
    return [make_card(r, s) for _ in range(decks) for s in order for r in range(1, 14)]
