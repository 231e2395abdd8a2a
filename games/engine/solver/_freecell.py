"""Chinese FreeCell: 11 piles, 4 cells, 6 foundations, 78 cards (two copies of S, H, D).

Representation: a tuple of 11 ``str`` piles in engine order, the cells as a sorted ``str``
(a multiset: cells are interchangeable, and so are the two copies of a card, which share one
code), and two foundation slots per suit, higher first.  The transposition key is the sorted
piles plus the cells; the foundations are implied by the rest.

Moves: cards home; a cell card to a pile; a sequence of k cards (each one rank lower than and of
another suit than the card beneath) from pile to pile with k <= empty cells + 1 (F4); a King or
King-headed sequence to the first empty pile only (F5; empty piles are alike), never a whole pile
to an empty one; a top card to a cell (one move, cells are alike).

Search: best-first (cards still out, weighted, plus cards sitting above a lower card of their
pile, plus occupied cells) with a closed set; complete, so an exhausted open list is a proof.
"""

from __future__ import annotations

import heapq

from ._common import Budget, Outcome, search_outcome

SUITS_USED = (1, 2, 3)  # S, H, D in the engine's suit numbering (C=0 is absent)


def _home_ok(found: list[int], c: int) -> bool:
    r = c >> 2
    s2 = (c & 3) << 1
    return found[s2] == r - 1 or found[s2 + 1] == r - 1


def _put_home(found: list[int], c: int) -> None:
    r = c >> 2
    s2 = (c & 3) << 1
    if found[s2] == r - 1:
        found[s2] = r
    else:
        found[s2 + 1] = r


def _safe(found: list[int], c: int) -> bool:
    """Whether card c (which fits a foundation) may go home without branching.

    No remaining card may want it as a base: it is a 2 or lower (only Aces build on a 2, and an
    Ace can always go home), or both copies of rank r-1 of each other suit are home.  And it must
    not take the only slot the other copy could use (``hi == r-1 > lo``): which copy goes first
    can matter.
    """
    r = c >> 2
    s = c & 3
    s2 = s << 1
    hi = found[s2]
    lo = found[s2 + 1]
    if hi == r - 1:
        if lo < r - 1:
            return False
    elif lo != r - 1:
        return False
    if r <= 2:
        return True
    return all(not (t != s and found[2 * t + 1] < r - 1) for t in SUITS_USED)


def _autoplay(piles: list[str], cells: str, found: list[int], path):
    while True:
        for i, p in enumerate(piles):
            if p:
                c = ord(p[-1])
                if _safe(found, c):
                    piles[i] = p[:-1]
                    _put_home(found, c)
                    path = ((f"t{i}", "f"), path)
                    break
        else:
            for k, ch in enumerate(cells):
                c = ord(ch)
                if _safe(found, c):
                    cells = cells[:k] + cells[k + 1 :]
                    _put_home(found, c)
                    path = (("c:" + ch, "f"), path)
                    break
            else:
                return cells, path


def _run_length(p: str) -> int:
    """How many top cards of p form a movable sequence (F4)."""
    n = len(p)
    if not n:
        return 0
    k = 1
    c = ord(p[-1])
    while k < n:
        u = ord(p[-k - 1])
        if (u >> 2) != (c >> 2) + 1 or (u & 3) == (c & 3):
            break
        c = u
        k += 1
    return k


def _score(piles, cells: str, left: int) -> int:
    b = 0
    for p in piles:
        m = 99
        for ch in p:
            r = ord(ch) >> 2
            if r > m:
                b += 1
            elif r < m:
                m = r
    return 2 * left + b + len(cells)


class FreeCellSolver:
    def __init__(self, piles: list[str], found: list[int], cells: list[str], budget: Budget):
        self.piles = list(piles)
        self.found = list(found)
        self.found[0] = self.found[1] = 13  # no clubs in this deck
        self.cells = "".join(sorted(cells))
        self.budget = budget
        self.total = 78
        self.best = (sum(self.found) - 26, None)

    def run(self) -> Outcome:
        return search_outcome(self._search, self, lambda mv: mv)

    def _search(self):
        budget = self.budget
        piles = list(self.piles)
        found = list(self.found)
        cells, path = _autoplay(piles, self.cells, found, None)
        if sum(found) - 26 == 78:
            return path or ()
        seen = {(tuple(sorted(piles)), cells)}
        heap = [(0, 0, tuple(piles), cells, tuple(found), path)]
        count = 0
        push = heapq.heappush
        pop = heapq.heappop
        best = self.best[0]
        while heap:
            _, _, piles, cells, found, path = pop(heap)
            budget.nodes += 1
            if budget.nodes >= budget.next_check:
                budget.check()
            children = []  # (piles list, cells, found list, move)
            free = 4 - len(cells)
            cap = free + 1
            tops = [ord(p[-1]) if p else 0 for p in piles]
            empty = tops.index(0) if 0 in tops else -1
            # cells -> foundation / pile
            done = set()
            for k, ch in enumerate(cells):
                if ch in done:
                    continue
                done.add(ch)
                c = ord(ch)
                rest = cells[:k] + cells[k + 1 :]
                if _home_ok(found, c):
                    nf = list(found)
                    _put_home(nf, c)
                    children.append((list(piles), rest, nf, ("c:" + ch, "f")))
                r = c >> 2
                for j, t in enumerate(tops):
                    if (t and (t >> 2) == r + 1 and (t & 3) != (c & 3)) or (j == empty and r == 13):
                        np = list(piles)
                        np[j] += ch
                        children.append((np, rest, list(found), ("c:" + ch, f"t{j}")))
            for i, p in enumerate(piles):
                if not p:
                    continue
                c = tops[i]
                r = c >> 2
                if _home_ok(found, c):
                    np = list(piles)
                    np[i] = p[:-1]
                    nf = list(found)
                    _put_home(nf, c)
                    children.append((np, cells, nf, (f"t{i}", "f")))
                run = _run_length(p)
                if run > cap:
                    run = cap
                for j, t in enumerate(tops):
                    if j == i:
                        continue
                    if t:
                        k = (t >> 2) - r
                        if k < 1 or k > run or (ord(p[-k]) & 3) == (t & 3):
                            continue
                    elif j == empty:
                        k = 14 - r
                        if k < 1 or k > run or k >= len(p):
                            continue
                    else:
                        continue
                    np = list(piles)
                    np[i] = p[:-k]
                    np[j] += p[-k:]
                    children.append((np, cells, list(found), (f"t{i}", f"t{j}", k)))
                if free:
                    np = list(piles)
                    np[i] = p[:-1]
                    nc = "".join(sorted(cells + p[-1]))
                    children.append((np, nc, list(found), (f"t{i}", "c")))
            for np, nc, nf, mv in children:
                nc, npath = _autoplay(np, nc, nf, (mv, path))
                home = sum(nf) - 26
                if home == 78:
                    return npath
                key = (tuple(sorted(np)), nc)
                if key in seen:
                    continue
                seen.add(key)
                if home > best:
                    best = home
                    self.best = (home, npath)
                count += 1
                push(heap, (_score(np, nc, 78 - home), count, tuple(np), nc, tuple(nf), npath))
        return None
