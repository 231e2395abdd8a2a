"""Move notation (PROTOCOL.md), parsed and formatted both ways.

A parsed move is a plain tuple ``(src_kind, src_index, dst_kind, dst_index, n)``; kinds are the
small ints below. Every move string the engine can generate is precomputed once, so generating
legal moves never formats a string and applying a generated move never runs the regex.

>>> parse_move("t2-t7:3")
(0, 2, 0, 7, 3)
>>> parse_move("t2-t7:1")
Traceback (most recent call last):
    ...
games.engine.errors.EngineError: 't2-t7:1' is not a move: ':N' is written only for N >= 2
>>> format_move(parse_move("draw"))
'draw'
"""

from __future__ import annotations

import re

from .errors import EngineError

T, F, C, STOCK, WASTE, DRAW = 0, 1, 2, 3, 4, 5
KIND_NAMES = {T: "t", F: "f", C: "c", STOCK: "stock", WASTE: "waste"}

#: Largest layouts of any variant: the notation admits t0..t12, f0..f7, c0..c3.
MAX_TABLEAU, MAX_FOUNDATIONS, MAX_CELLS = 13, 8, 4
MAX_SEQUENCE = 13

Move = tuple[int, int, int, int, int]
DRAW_MOVE: Move = (DRAW, 0, DRAW, 0, 1)

_PILE = r"(?:([tfc])(0|[1-9][0-9]?)|(stock|waste))"
# ":N" only for N >= 2 (PROTOCOL.md): one card is written without a count, so every move string
# the server accepts is one that `legal_moves` can list, and no position has two spellings.
_MOVE_RE = re.compile(rf"{_PILE}-{_PILE}(?::([2-9]|[1-9][0-9]))?")
_KIND_OF = {"t": T, "f": F, "c": C, "stock": STOCK, "waste": WASTE}


def pile_id(kind: int, index: int = 0) -> str:
    """``(T, 3)`` -> ``'t3'``; stock and waste have no index."""
    name = KIND_NAMES[kind]
    return name if kind in (STOCK, WASTE) else f"{name}{index}"


def format_move(move: Move) -> str:
    """The canonical string of a parsed move (``:N`` only for N >= 2)."""
    sk, si, dk, di, n = move
    if sk == DRAW:
        return "draw"
    s = f"{pile_id(sk, si)}-{pile_id(dk, di)}"
    return f"{s}:{n}" if n > 1 else s


def _parse_uncached(text: str) -> Move:
    if text == "draw":
        return DRAW_MOVE
    m = _MOVE_RE.fullmatch(text)
    if m is None:
        why = "write FROM-TO, FROM-TO:N or draw"
        if text.endswith(":1") and _MOVE_RE.fullmatch(text[:-2]):
            why = "':N' is written only for N >= 2"
        raise EngineError("bad_move", f"{text!r} is not a move: {why}")
    k1, i1, w1, k2, i2, w2, n = m.groups()
    src = (_KIND_OF[k1], int(i1)) if k1 else (_KIND_OF[w1], 0)
    dst = (_KIND_OF[k2], int(i2)) if k2 else (_KIND_OF[w2], 0)
    return (src[0], src[1], dst[0], dst[1], int(n) if n else 1)


def _pile_ids(kind: int, count: int) -> list[str]:
    return [f"{KIND_NAMES[kind]}{i}" for i in range(count)]


TABLEAU_IDS = _pile_ids(T, MAX_TABLEAU)
FOUNDATION_IDS = _pile_ids(F, MAX_FOUNDATIONS)
CELL_IDS = _pile_ids(C, MAX_CELLS)

# Precomputed move strings, indexed [source][target] (and [n] for sequences).
T2T = [[f"{a}-{b}" for b in TABLEAU_IDS] for a in TABLEAU_IDS]
T2T_N = [
    [
        [f"{a}-{b}" if n == 1 else f"{a}-{b}:{n}" for n in range(MAX_SEQUENCE + 1)]
        for b in TABLEAU_IDS
    ]
    for a in TABLEAU_IDS
]
T2F = [[f"{a}-{b}" for b in FOUNDATION_IDS] for a in TABLEAU_IDS]
T2C = [[f"{a}-{b}" for b in CELL_IDS] for a in TABLEAU_IDS]
C2T = [[f"{a}-{b}" for b in TABLEAU_IDS] for a in CELL_IDS]
C2F = [[f"{a}-{b}" for b in FOUNDATION_IDS] for a in CELL_IDS]
S2T = [f"stock-{b}" for b in TABLEAU_IDS]
S2F = [f"stock-{b}" for b in FOUNDATION_IDS]
W2T = [f"waste-{b}" for b in TABLEAU_IDS]
W2F = [f"waste-{b}" for b in FOUNDATION_IDS]
DRAW_STR = "draw"

#: Canonical move string -> parsed move, for every string the generator can produce.
PARSED: dict[str, Move] = {}
for _table in (T2T, T2F, T2C, C2T, C2F, [S2T, S2F, W2T, W2F, [DRAW_STR]]):
    for _row in _table:
        for _s in _row:
            PARSED[_s] = _parse_uncached(_s)
for _row in T2T_N:
    for _cell in _row:
        for _s in _cell[2:]:
            PARSED[_s] = _parse_uncached(_s)


def parse_move(text: object) -> Move:
    """Parse a move string; EngineError("bad_move") if it is not in the notation.

    The pile indices are not checked against any variant here (see State.apply).
    """
    if not isinstance(text, str):
        raise EngineError("bad_move", f"a move is a string, not {type(text).__name__}")
    mv = PARSED.get(text)
    if mv is not None:
        return mv
    if len(text) > 20:
        raise EngineError("bad_move", "that is not a move: write FROM-TO, FROM-TO:N or draw")
    return _parse_uncached(text)
