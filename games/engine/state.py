"""The position of one game and its rules in motion.

A State is immutable and hashable by position, so a solver can keep states in a transposition
table; ``apply`` returns a new State that shares every pile the move did not touch. Internally a
card is an int (see cards.py), a pile a tuple of ints bottom..top, a foundation only its top card
(a foundation always holds Ace..top of one suit) and an empty cell/foundation is 0.

>>> s = new_game("portuguese", 1)
>>> s.to_dict()["tableau"][0]
['JD', 'QC', 'TS', '7D']
>>> s.status, s.moves, s.foundation_count
('playing', 0, 0)
>>> s2 = s.apply(s.legal_moves()[0])
>>> s2.moves, s2.undo() == s, s2.undo() is s
(1, True, True)
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .cards import CODES, FIRST_KING, FIRST_TWO, SUITS, card_code, parse_card
from .deal import MAX_DEAL, shuffle
from .errors import EngineError
from .moves import (
    C2F,
    C2T,
    DRAW,
    DRAW_MOVE,
    DRAW_STR,
    PARSED,
    S2F,
    S2T,
    STOCK,
    T2C,
    T2F,
    T2T,
    T2T_N,
    W2F,
    W2T,
    WASTE,
    C,
    F,
    Move,
    T,
    format_move,
    parse_move,
    pile_id,
)
from .variants import VARIANTS, Variant

UNDO = "undo"  # in a stored history, the action that took the move before it back

# Foundation top card -> the codes of the whole foundation pile (Ace..top, one suit).
_FOUNDATION_CODES: dict[int, tuple[str, ...]] = {0: ()}
for _top in range(4, 56):
    _FOUNDATION_CODES[_top] = tuple(CODES[c] for c in range(4 + (_top & 3), _top + 1, 4))  # type: ignore[misc]


def _variant(variant: str) -> Variant:
    try:
        return VARIANTS[variant]
    except (KeyError, TypeError):
        raise EngineError(
            "unknown_variant", f"unknown variant {variant!r}; one of: {', '.join(VARIANTS)}"
        ) from None


class State:
    """One position of one game: piles, foundations, cells, stock, waste, plus its history link.

    Equality and hash use only the position (and the variant), never the deal number, the move
    count or the parent, so transpositions compare equal.
    """

    __slots__ = (
        "_v",
        "_deal",
        "_moves",
        "_tab",
        "_fnd",
        "_cells",
        "_stock",
        "_waste",
        "_parent",
        "_last",
        "_fc",
        "_legal",
        "_hash",
        "_codes",
    )

    _v: Variant
    _deal: int
    _moves: int
    _tab: tuple[tuple[int, ...], ...]
    _fnd: tuple[int, ...]
    _cells: tuple[int, ...]
    _stock: tuple[int, ...]
    _waste: tuple[int, ...]
    _parent: State | None
    _last: str | None
    _fc: int
    _legal: list[str] | None
    _hash: int | None
    _codes: list[tuple[str, ...]] | None

    def __init__(self) -> None:
        raise TypeError("use new_game(), replay() or State.from_dict()")

    # ------------------------------------------------------------------ public attributes
    @property
    def variant(self) -> str:
        """The variant id, e.g. ``'portuguese'``."""
        return self._v.id

    @property
    def spec(self) -> Variant:
        """The Variant description (addition to the contract)."""
        return self._v

    @property
    def deal(self) -> int:
        return self._deal

    @property
    def moves(self) -> int:
        """Moves applied since the deal; an undo takes one back."""
        return self._moves

    @property
    def last_move(self) -> str | None:
        """The canonical string of the move that made this state, None at the deal."""
        return self._last

    @property
    def parent(self) -> State | None:
        """The state before the last move (what ``undo`` returns), None at the start."""
        return self._parent

    @property
    def foundation_count(self) -> int:
        """Cards on the foundations; a lost game still ranks by it (W1)."""
        return self._fc

    @property
    def status(self) -> str:
        """``'won'`` (C5: every card on the foundations), ``'stuck'`` or ``'playing'``."""
        if self._fc == self._v.cards:
            return "won"
        legal = self._legal if self._legal is not None else self._gen()
        return "playing" if legal else "stuck"

    @property
    def hidden_count(self) -> int:
        """Face-down cards: the stock, but for its top where it is played from (Barricade A)."""
        stock = self._stock
        return len(stock) - 1 if self._v.stock_playable and stock else len(stock)

    @property
    def revealed(self) -> bool:
        """Whether the last move turned a face-down card up (a ``draw``, or a play from a stock
        whose next card then shows). Taking such a move back would show a card for free, so a
        ranked game refuses to undo it."""
        parent = self._parent
        return parent is not None and self.hidden_count < parent.hidden_count

    @property
    def is_over(self) -> bool:
        return self.status != "playing"

    # ------------------------------------------------------------------ construction
    @classmethod
    def _make(
        cls,
        v: Variant,
        deal: int,
        moves: int,
        tab: tuple[tuple[int, ...], ...],
        fnd: tuple[int, ...],
        cells: tuple[int, ...],
        stock: tuple[int, ...],
        waste: tuple[int, ...],
        parent: State | None,
        last: str | None,
        fc: int,
    ) -> State:
        s = object.__new__(cls)
        s._v = v
        s._deal = deal
        s._moves = moves
        s._tab = tab
        s._fnd = fnd
        s._cells = cells
        s._stock = stock
        s._waste = waste
        s._parent = parent
        s._last = last
        s._fc = fc
        s._legal = None
        s._hash = None
        s._codes = None
        return s

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> State:
        """Rebuild a state from ``to_dict()`` output (or a hand-made position, for tests).

        Raises ValueError (EngineError("unknown_variant") for the variant) when the dict is not
        a position of its variant. The rebuilt state has no parent: it cannot be undone.
        """
        v = _variant(d.get("variant"))  # type: ignore[arg-type]
        deal = d.get("deal", 0)
        moves = d.get("moves", 0)
        if not isinstance(deal, int) or not isinstance(moves, int) or moves < 0:
            raise ValueError("deal and moves must be ints (moves >= 0)")

        def cards(seq: Any, what: str) -> tuple[int, ...]:
            if not isinstance(seq, list | tuple):
                raise ValueError(f"{what} must be a list of card codes")
            out = []
            for code in seq:
                c = parse_card(code)
                if SUITS[c & 3] not in v.suits:
                    raise ValueError(f"{code} is not a card of {v.name}")
                out.append(c)
            return tuple(out)

        tableau = d.get("tableau")
        if not isinstance(tableau, list | tuple) or len(tableau) != v.tableau_piles:
            raise ValueError(f"{v.name} has {v.tableau_piles} tableau piles")
        tab = tuple(cards(p, f"t{i}") for i, p in enumerate(tableau))

        founds = d.get("foundations")
        if not isinstance(founds, list | tuple) or len(founds) != v.foundations:
            raise ValueError(f"{v.name} has {v.foundations} foundations")
        fnd = []
        for i, pile in enumerate(founds):
            fp = cards(pile, f"f{i}")
            for k, c in enumerate(fp):
                if c != fp[0] + 4 * k or fp[0] >= FIRST_TWO:
                    raise ValueError(f"f{i} must hold Ace, 2, 3... of one suit")
            fnd.append(fp[-1] if fp else 0)

        raw_cells = d.get("cells", [])
        if not isinstance(raw_cells, list | tuple) or len(raw_cells) != v.cells:
            raise ValueError(f"{v.name} has {v.cells} free cells")
        cell_cards = tuple(0 if c is None else cards([c], "cells")[0] for c in raw_cells)

        stock = cards(d.get("stock", []), "stock")
        waste = cards(d.get("waste", []), "waste")
        if stock and not v.stock:
            raise ValueError(f"{v.name} has no stock")
        if waste and not v.waste:
            raise ValueError(f"{v.name} has no waste")

        counts: dict[int, int] = {}
        for c in (
            [c for p in tab for c in p]
            + [c for top in fnd for c in range(4 + (top & 3), top + 1, 4)]
            + [c for c in cell_cards if c]
            + list(stock)
            + list(waste)
        ):
            counts[c] = counts.get(c, 0) + 1
            if counts[c] > v.decks:
                raise ValueError(f"{card_code(c)} occurs more than {v.decks} time(s)")

        fc = sum(top >> 2 for top in fnd)
        return cls._make(v, deal, moves, tab, tuple(fnd), cell_cards, stock, waste, None, None, fc)

    # ------------------------------------------------------------------ serialisation
    def to_dict(self, shared: bool = False) -> dict[str, Any]:
        """The full position, hidden cards included, JSON-serialisable: for the server's cache
        and the solver, never for a player (use ``view()``).

        ``shared=True``: the tableau and foundation piles are tuples shared with other
        positions, not lists of the caller's own; for a caller that only encodes the result
        and never changes it (the server, for every move it stores)."""
        return {
            "variant": self._v.id,
            "deal": self._deal,
            "moves": self._moves,
            **self._piles(shared),
            "cells": [CODES[c] if c else None for c in self._cells],
            "stock": [CODES[c] for c in self._stock],
            "waste": [CODES[c] for c in self._waste],
        }

    def view(self, shared: bool = False) -> dict[str, Any]:
        """What a player may see (PROTOCOL.md): no face-down card and no deal number, since a
        daily deal's number would reveal its hidden cards. ``shared``: as for ``to_dict``."""
        v = self._v
        stock = self._stock
        return {
            "variant": v.id,
            **self._piles(shared),
            "cells": [CODES[c] if c else None for c in self._cells],
            "stock": {
                "count": len(stock),
                "top": CODES[stock[-1]] if (v.stock_playable and stock) else None,
            },
            "waste": [CODES[c] for c in self._waste],
            "status": self.status,
            "moves": self._moves,
            "legal_moves": self.legal_moves(),
        }

    def _piles(self, shared: bool) -> dict[str, list]:
        if shared:
            return {
                "tableau": self._tableau_codes(),
                "foundations": [_FOUNDATION_CODES[t] for t in self._fnd],
            }
        return {
            "tableau": [list(p) for p in self._tableau_codes()],
            "foundations": [list(_FOUNDATION_CODES[t]) for t in self._fnd],
        }

    def _tableau_codes(self) -> list[tuple[str, ...]]:
        """The tableau's card codes, pile by pile, worked out once per position. A move
        changes one or two piles: the others' codes are the position before's, taken as they
        are (a server writes both `to_dict` and `view` of every position it reaches)."""
        codes = self._codes
        if codes is None:
            parent = self._parent
            before = parent._codes if parent is not None else None
            tab = self._tab
            if before is None:
                codes = [tuple([CODES[c] for c in p]) for p in tab]  # type: ignore[misc]
            else:
                # The tableau piles this position's move changed are the ones it names.
                codes = before.copy()
                sk, si, dk, di, _ = PARSED[self._last]  # type: ignore[index]
                if sk == T:
                    codes[si] = tuple([CODES[c] for c in tab[si]])  # type: ignore[misc]
                if dk == T:
                    codes[di] = tuple([CODES[c] for c in tab[di]])  # type: ignore[misc]
            self._codes = codes
        return codes

    def render(self, reveal: bool = False) -> str:
        """A text picture for a terminal (``python -m games.engine deal``). Face-down stock
        cards are only counted unless ``reveal``: a CLI user may be a player."""
        v = self._v
        lines = [f"{v.name}  deal {self._deal}  move {self._moves}  {self.status}"]
        f = "  ".join(f"f{i}:{CODES[t] if t else '--'}" for i, t in enumerate(self._fnd))
        lines.append(f"foundations  {f}   ({self._fc}/{v.cards})")
        if v.cells:
            lines.append(
                "cells        "
                + "  ".join(f"c{i}:{CODES[c] if c else '--'}" for i, c in enumerate(self._cells))
            )
        if v.stock:
            st = self._stock
            if reveal:
                shown = " ".join(CODES[c] for c in st) or "-"  # type: ignore[misc]
            elif v.stock_playable and st:
                shown = f"{len(st)} cards, top {CODES[st[-1]]}"
            else:
                shown = f"{len(st)} cards face down"
            lines.append(f"stock        {shown}")
        if v.waste:
            lines.append("waste        " + (" ".join(CODES[c] for c in self._waste) or "-"))  # type: ignore[misc]
        for i, p in enumerate(self._tab):
            lines.append(f"t{i:<3}" + (" ".join(CODES[c] for c in p) if p else "."))  # type: ignore[misc]
        return "\n".join(lines)

    def __repr__(self) -> str:
        return (
            f"<State {self._v.id} deal={self._deal} moves={self._moves} "
            f"foundations={self._fc}/{self._v.cards}>"
        )

    # ------------------------------------------------------------------ identity
    def _key(self) -> tuple[Any, ...]:
        return (self._v.id, self._tab, self._fnd, self._cells, self._stock, self._waste)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not State:
            return NotImplemented
        o: State = other  # type: ignore[assignment]
        return (
            self._v is o._v
            and self._fnd == o._fnd
            and self._tab == o._tab
            and self._cells == o._cells
            and self._stock == o._stock
            and self._waste == o._waste
        )

    def __hash__(self) -> int:
        h = self._hash
        if h is None:
            h = self._hash = hash(self._key())
        return h

    def __copy__(self) -> State:
        return self

    def __deepcopy__(self, memo: object) -> State:
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        # The history is pickled as a root and a move list, not as nested parents, so a long
        # game does not hit the recursion limit.
        line: list[str] = []
        s = self
        while s._parent is not None:
            line.append(s._last)  # type: ignore[arg-type]
            s = s._parent
        line.reverse()
        return (_from_pickle, (s.to_dict(), s._last, line))

    # ------------------------------------------------------------------ moves
    def legal_moves(self) -> list[str]:
        """Every distinct legal move string, in a fixed order: moves from t0..tN, the cells,
        the waste, the stock, then ``draw``; each source's foundation targets first."""
        legal = self._legal
        if legal is None:
            legal = self._gen()
        return list(legal)

    def is_legal(self, move: str) -> bool:
        try:
            self._resolve(move)
        except EngineError:
            return False
        return True

    def apply(self, move: str) -> State:
        """The state after ``move``. EngineError("bad_move") if the string is not a move of
        this variant's notation, EngineError("illegal_move") if the rules forbid it here."""
        legal = self._legal
        if legal is None:
            legal = self._gen()
        if move in legal:
            return self._do(PARSED[move], move)
        mv, canon = self._resolve(move)
        return self._do(mv, canon)

    def successors(self) -> list[tuple[str, State]]:
        """``(move, state)`` for every legal move (addition, for search)."""
        legal = self._legal if self._legal is not None else self._gen()
        do = self._do
        return [(m, do(PARSED[m], m)) for m in legal]

    def detached(self) -> State:
        """This position without its history: `parent` is None, so `undo` is refused.

        Every state keeps the one before it, so holding a state holds the whole game that led
        to it. A long-lived holder (the server's cache of games in play) wants the position only.
        """
        if self._parent is None:
            return self
        s = State._make(
            self._v,
            self._deal,
            self._moves,
            self._tab,
            self._fnd,
            self._cells,
            self._stock,
            self._waste,
            None,
            self._last,
            self._fc,
        )
        s._legal, s._hash, s._codes = self._legal, self._hash, self._codes  # worked out: kept
        return s

    def step(self, action: str) -> State:
        """The state after one action of a stored history: a move, or UNDO (which takes the
        last one back)."""
        return self.undo() if action == UNDO else self.apply(action)

    def undo(self) -> State:
        """The state before the last move."""
        if self._parent is None:
            raise EngineError("illegal_move", "There is no move to undo")
        return self._parent

    def before(self, move: str) -> State:
        """The position before ``move``, this position's last move, taken back card by card:
        undo for a holder of the position alone (the server keeps no history in its states,
        and replaying a long game from its deal costs a move's work per move played).

        A move only carries cards from one pile to another, so taking it back is carrying them
        home; what the move was cannot be told from the position, so the caller names it. The
        result is checked by playing ``move`` on it again: EngineError("illegal_move") if that
        does not give this position back. That check cannot tell every wrong name: a move that
        also leads here from some other position (Portuguese deal 1 after ``t3-t10``, named
        ``t0-t3``) gives that other position, so the caller names the move actually played,
        as the server does from its stored history. The result has no parent and no last move,
        as a ``from_dict`` state."""
        sk, si, dk, di, n = parse_move(move)
        tab, fnd, cells = list(self._tab), list(self._fnd), list(self._cells)
        stock, waste, fc = self._stock, self._waste, self._fc
        try:
            if sk == DRAW:
                stock, waste = stock + waste[-1:], waste[:-1]
                if not stock:
                    raise IndexError
            else:
                if dk == F:
                    card = fnd[di]
                    fnd[di] = card - 4 if card >= FIRST_TWO else 0
                    fc -= 1
                    moved: tuple[int, ...] = (card,)
                elif dk == T:
                    moved = tab[di][-n:]
                    tab[di] = tab[di][:-n]
                else:  # C
                    card = cells[di]
                    cells[di] = 0
                    moved = (card,)
                if len(moved) != n or 0 in moved:
                    raise IndexError
                if sk == T:
                    tab[si] = tab[si] + moved
                elif sk == C:
                    cells[si] = moved[0]
                elif sk == STOCK:
                    stock = stock + moved
                else:  # WASTE
                    waste = waste + moved
            prior = State._make(
                self._v,
                self._deal,
                self._moves - 1,
                tuple(tab),
                tuple(fnd),
                tuple(cells),
                stock,
                waste,
                None,
                None,
                fc,
            )
            if self._moves < 1 or prior.apply(move) != self:
                raise IndexError
        except (IndexError, EngineError):
            raise EngineError(
                "illegal_move", f"{move} is not how this position was reached"
            ) from None
        return prior

    # ------------------------------------------------------------------ internals
    def _resolve(self, move: object) -> tuple[Move, str]:
        """Parse and check a move; return it with its canonical string or raise."""
        mv = parse_move(move)
        _check_piles(self._v, mv)
        canon = format_move(mv)
        legal = self._legal if self._legal is not None else self._gen()
        if canon in legal:
            return mv, canon
        raise EngineError("illegal_move", _why_illegal(self, mv))

    def _gen(self) -> list[str]:
        v = self._v
        tab = self._tab
        out: list[str] = []
        append = out.append

        # Lists indexed by card and by rank, not dicts: an index is one bytecode where
        # `dict.get` is a method call, and this runs for every position a server reaches.
        # Foundations: which card each one needs next; empty ones take any Ace (C3).
        fneed: list[list[int] | None] = [None] * _NEED_SLOTS
        fempty: list[int] = []
        for i, top in enumerate(self._fnd):
            if not top:
                fempty.append(i)
            elif top < FIRST_KING:
                lst = fneed[top + 4]
                if lst is None:
                    fneed[top + 4] = [i]
                else:
                    lst.append(i)

        # Tableau: piles indexed by the rank of their top card; the empty piles.
        byrank: list[list[int] | None] = [None] * _RANK_SLOTS
        empties: list[int] = []
        for i, p in enumerate(tab):
            if p:
                r = p[-1] >> 2
                lst = byrank[r]
                if lst is None:
                    byrank[r] = [i]
                else:
                    lst.append(i)
            else:
                empties.append(i)

        empty_rule = v.empty
        fill_any = empty_rule == "any" and empties
        fill_king = empty_rule == "king" and empties
        other_suit = v.build == "other_suit"

        if v.sequences:
            cells = self._cells
            ecells = [k for k in range(len(cells)) if not cells[k]]
            limit = len(ecells) + 1
            for i, p in enumerate(tab):
                if not p:
                    continue
                c = p[-1]
                if c < FIRST_TWO:
                    for fi in fempty:
                        append(T2F[i][fi])
                else:
                    lst = fneed[c]
                    if lst:
                        for fi in lst:
                            append(T2F[i][fi])
                # The movable run on top (F4): one rank lower and another suit each step.
                run = 1
                maxn = limit if limit < len(p) else len(p)
                prev = c
                while run < maxn:
                    b = p[-run - 1]
                    if (b >> 2) == (prev >> 2) + 1 and (b & 3) != (prev & 3):
                        run += 1
                        prev = b
                    else:
                        break
                rows = T2T_N[i]
                for k in range(1, run + 1):
                    h = p[-k]
                    lst = byrank[(h >> 2) + 1]
                    if lst:
                        hs = h & 3
                        for j in lst:
                            if (tab[j][-1] & 3) != hs:
                                append(rows[j][k])
                if fill_king:
                    k = 14 - (c >> 2)
                    if k <= run:
                        for j in empties:
                            append(rows[j][k])
                if ecells:
                    row = T2C[i]
                    for k in ecells:
                        append(row[k])
            for ci, c in enumerate(cells):
                if c:
                    _single(
                        c,
                        C2F[ci],
                        C2T[ci],
                        fempty,
                        fneed,
                        byrank,
                        tab,
                        other_suit,
                        empties if (fill_any or (fill_king and c >= FIRST_KING)) else (),
                        append,
                    )
        else:
            for i, p in enumerate(tab):
                if p:
                    c = p[-1]
                    if c < FIRST_TWO:
                        row = T2F[i]
                        for fi in fempty:
                            append(row[fi])
                    else:
                        lst = fneed[c]
                        if lst:
                            row = T2F[i]
                            for fi in lst:
                                append(row[fi])
                    lst = byrank[(c >> 2) + 1]
                    if lst:
                        row = T2T[i]
                        if other_suit:
                            for j in lst:
                                if (tab[j][-1] & 3) != (c & 3):
                                    append(row[j])
                        else:
                            for j in lst:
                                append(row[j])
                    if fill_any or (fill_king and c >= FIRST_KING):
                        row = T2T[i]
                        for j in empties:
                            append(row[j])

        fill = empties if (fill_any or fill_king) else ()
        if self._waste:
            c = self._waste[-1]
            _single(
                c,
                W2F,
                W2T,
                fempty,
                fneed,
                byrank,
                tab,
                other_suit,
                fill if (fill_any or c >= FIRST_KING) else (),
                append,
            )
        if self._stock:
            if v.stock_playable:
                c = self._stock[-1]
                _single(
                    c,
                    S2F,
                    S2T,
                    fempty,
                    fneed,
                    byrank,
                    tab,
                    other_suit,
                    fill if (fill_any or c >= FIRST_KING) else (),
                    append,
                )
            if v.draw:
                append(DRAW_STR)
        self._legal = out
        return out

    def _do(self, mv: Move, s: str) -> State:
        """Apply a move already known to be legal."""
        sk, si, dk, di, n = mv
        tab = self._tab
        cells = self._cells
        stock = self._stock
        waste = self._waste
        fnd = self._fnd
        fc = self._fc
        tl = None
        if sk == T:
            p = tab[si]
            tl = list(tab)
            if n == 1:
                card = p[-1]
                tl[si] = p[:-1]
                moved: tuple[int, ...] = (card,)
            else:
                moved = p[-n:]
                tl[si] = p[:-n]
                card = moved[0]
        elif sk == DRAW:
            card = stock[-1]
            return State._make(
                self._v,
                self._deal,
                self._moves + 1,
                tab,
                fnd,
                cells,
                stock[:-1],
                waste + (card,),
                self,
                s,
                fc,
            )
        elif sk == C:
            card = cells[si]
            cl = list(cells)
            cl[si] = 0
            cells = tuple(cl)
            moved = (card,)
        elif sk == STOCK:
            card = stock[-1]
            stock = stock[:-1]
            moved = (card,)
        else:  # WASTE
            card = waste[-1]
            waste = waste[:-1]
            moved = (card,)
        if dk == F:
            fl = list(fnd)
            fl[di] = card
            fnd = tuple(fl)
            fc += 1
        elif dk == T:
            if tl is None:
                tl = list(tab)
            tl[di] = tl[di] + moved
        else:  # C
            cl = list(cells)
            cl[di] = card
            cells = tuple(cl)
        return State._make(
            self._v,
            self._deal,
            self._moves + 1,
            tab if tl is None else tuple(tl),
            fnd,
            cells,
            stock,
            waste,
            self,
            s,
            fc,
        )


# Slots of `_gen`'s lookups: a foundation's next card is at most a King (its code + 4 from a
# Queen), and a card one rank up from a King is rank 14.
_NEED_SLOTS = FIRST_KING + 4
_RANK_SLOTS = 15


def _single(c, rowF, rowT, fempty, fneed, byrank, tab, other_suit, fill, append) -> None:  # noqa: ANN001
    """Targets of one available card that is not a tableau top (stock, waste or cell)."""
    if c < FIRST_TWO:
        for fi in fempty:
            append(rowF[fi])
    else:
        lst = fneed[c]
        if lst:
            for fi in lst:
                append(rowF[fi])
    lst = byrank[(c >> 2) + 1]
    if lst:
        for j in lst:
            if not other_suit or (tab[j][-1] & 3) != (c & 3):
                append(rowT[j])
    for j in fill:
        append(rowT[j])


def _from_pickle(root: dict[str, Any], last: str | None, line: list[str]) -> State:
    s = State.from_dict(root)
    s._deal = root["deal"]
    s._last = last
    for m in line:
        s = s.apply(m)
    return s


def _check_piles(v: Variant, mv: Move) -> None:
    """bad_move for a pile the variant does not have (t13 in a 13-pile game, c0 without cells)."""
    sk, si, dk, di, _ = mv
    if sk == DRAW:
        return
    for kind, idx in ((sk, si), (dk, di)):
        if kind == T and idx >= v.tableau_piles:
            why = f"{v.name} has tableau piles t0..t{v.tableau_piles - 1}"
        elif kind == F and idx >= v.foundations:
            why = f"{v.name} has foundations f0..f{v.foundations - 1}"
        elif kind == C and idx >= v.cells:
            why = (
                f"{v.name} has free cells c0..c{v.cells - 1}"
                if v.cells
                else f"{v.name} has no free cells"
            )
        elif kind == STOCK and not v.stock:
            why = f"{v.name} has no stock"
        elif kind == WASTE and not v.waste:
            why = f"{v.name} has no waste pile"
        else:
            continue
        raise EngineError("bad_move", f"unknown pile {pile_id(kind, idx)}: {why}")


def _why_illegal(st: State, mv: Move) -> str:
    """A player-readable reason, naming the rule, for a well-formed move that is not legal."""
    v = st._v
    sk, si, dk, di, n = mv
    rid = v.rule
    if sk == DRAW:
        if v.draw:
            return f"The stock is empty and there is no redeal ({rid('draw')})"
        if v.stock_playable:
            return (
                f"There is no draw in {v.name}: play the face-up stock card with "
                f"stock-tN or stock-fN ({rid('draw')})"
            )
        return f"{v.name} has no stock to draw from ({rid('layout')})"
    src, dst = pile_id(sk, si), pile_id(dk, di)
    if sk == F:
        return "A card on a foundation never leaves it (C3)"
    if dk in (STOCK, WASTE):
        return f"No card may be put on the {dst}"
    if (sk, si) == (dk, di):
        return "A card cannot move onto the pile it is on"
    if sk == STOCK and not v.stock_playable:
        return f"The stock is face down: use draw to turn its top card ({rid('draw')})"
    if sk == C and dk == C:
        return "A card in a free cell may not move to another cell (F3)"
    # The moving cards.
    if sk == T:
        pile = st._tab[si]
    elif sk == C:
        pile = (st._cells[si],) if st._cells[si] else ()
    elif sk == STOCK:
        pile = st._stock
    else:
        pile = st._waste
    if not pile:
        return f"{src} is empty"
    if n > 1:
        if not v.sequences:
            return f"Only one card moves at a time ({rid('one_card')})"
        if sk != T or dk != T:
            return "Only a sequence from one tableau pile to another moves as a unit (F4)"
        if n > len(pile):
            return f"{src} has only {len(pile)} card(s)"
        for k in range(1, n):
            a, b = pile[-k], pile[-k - 1]
            if (a >> 2) + 1 != (b >> 2) or (a & 3) == (b & 3):
                return (
                    f"The top {n} cards of {src} are not a sequence: each card must be one "
                    f"rank lower than, and of another suit than, the one beneath it (F4)"
                )
        free = sum(1 for c in st._cells if not c)
        if n > free + 1:
            return (
                f"With {free} empty free cell(s) at most {free + 1} card(s) may move as a unit (F4)"
            )
    card = pile[-n]
    cc = CODES[card]
    if dk == F:
        top = st._fnd[di]
        if not top:
            return f"Only an Ace may start an empty foundation (C3); {cc} is not an Ace"
        return (
            f"{cc} does not go on {CODES[top]}: foundations build up by suit from Ace to King (C3)"
        )
    if dk == C:
        if st._cells[di]:
            return f"{dst} already holds a card; a free cell holds one card (F3)"
        return "Only the top card of a tableau pile may move to a free cell (F3)"
    # dk == T
    target = st._tab[di]
    if not target:
        if v.empty == "never":
            return f"An empty pile can never be filled again ({rid('empty')})"
        if v.sequences:
            return (
                f"Only a King, or a sequence headed by a King, may move to an empty pile "
                f"({rid('empty')})"
            )
        return f"Only a King may move to an empty pile ({rid('empty')})"
    top = target[-1]
    tc = CODES[top]
    if top < FIRST_TWO:
        return f"Nothing goes on an Ace (C4); {dst} shows {tc}"
    if (card >> 2) + 1 != (top >> 2):
        how = "in a different suit" if v.build == "other_suit" else "regardless of suit"
        return (
            f"{cc} does not go on {tc}: tableau piles build down by one rank {how} ({rid('build')})"
        )
    if v.build == "other_suit" and (card & 3) == (top & 3):
        return f"{cc} does not go on {tc}: build down in a different suit ({rid('build')})"
    if n == 1 and v.sequences:
        return f"That move is not legal here ({rid('one_card')})"
    return "That move is not legal here"


# ---------------------------------------------------------------------- entry points
def _check_deal(deal: object) -> int:
    if isinstance(deal, bool) or not isinstance(deal, int) or not 1 <= deal <= MAX_DEAL:
        raise EngineError("bad_deal", f"a deal number is an integer from 1 to {MAX_DEAL}")
    return deal


def deal_position(variant: str, deal: int) -> State:
    v = _variant(variant)
    deal = _check_deal(deal)
    talon = shuffle(v.deck(), deal)
    tableau, stock = v.layout(talon)
    return State._make(
        v,
        deal,
        0,
        tuple(tuple(p) for p in tableau),
        (0,) * v.foundations,
        (0,) * v.cells,
        tuple(stock),
        (),
        None,
        None,
        0,
    )


def new_game(variant: str, deal: int) -> State:
    """The dealt position of ``variant`` number ``deal`` (C6: the same forever).

    EngineError("unknown_variant") or EngineError("bad_deal") (deal must be >= 1).
    """
    return deal_position(variant, deal)


def deal_layout(variant: str, deal: int) -> dict[str, Any]:
    """``to_dict()`` of the dealt position (addition)."""
    return deal_position(variant, deal).to_dict()


def replay(variant: str, deal: int, moves: Iterable[str]) -> State:
    """Play ``moves`` from the deal; the move ``"undo"`` steps back one.

    Raises the EngineError of the first move that fails.
    """
    s = deal_position(variant, deal)
    for m in moves:
        s = s.step(m)
    return s


__all__ = [
    "UNDO",
    "State",
    "new_game",
    "replay",
    "deal_layout",
    "card_code",
    "DRAW_MOVE",
]
