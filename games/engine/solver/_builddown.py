"""Portuguese Solitaire and Spanish Patience: 13 open piles, single cards, build down any suit.

Representation: a position is a tuple of 13 ``str`` piles (one char per card, see ``_common``)
in the engine's pile order, plus each suit's foundation height.  The foundations are implied by
the cards left in the tableau, and piles are interchangeable, so the transposition key is the
sorted piles joined into one ``str`` (empty piles included: they are all alike).

Search: two searches over the same move generator and dead-end test take turns (``TURN``
expansions each) until one wins or exhausts its space:

- greedy best-first with alternating open lists (see ``WEIGHTS``); its heuristics reach most
  wins in a few hundred expansions;
- depth-first with children tried best heuristic first.  It commits to a line and so leaves
  the huge plateaus of equivalent rearrangements (cards shuffled between bases of one rank) the
  best-first lists wander in: it finds wins they miss.

Both are complete: every reachable position (up to the safe moves home and pile symmetry, both
exact) is generated once and expanded once unless ``_dead_end`` proves that no line from it
wins.  So either one exhausting its space proves that the deal cannot be won.  Its best count
is the true par only when no pruned position could have got more cards home (``par_bound``).
Pruning dead ends is what makes the searches fast: most of a Portuguese deal's positions are
lost ones that the best-first lists would otherwise keep expanding.

Moves generated: a top card home (besides the automatic safe ones), onto a pile whose top is one
rank higher, or to the first empty pile (Portuguese: Kings only, P4; Spanish: anything, S4) but
never from a pile it is alone in (that only renames the piles).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator

from ._common import Budget, Outcome, search_outcome

#: A search line: ``((from pile, to pile or -1 for home), previous node)``, ``None`` at the root.
Path = tuple | None

#: Expansions a search makes before it hands over to the other one.
TURN = 256


def _autoplay(piles: list[str], found: list[int], path: Path) -> Path:
    """Plays every provably safe card home, in place; returns the extended path.

    A card of rank r is never needed as a base once every card of rank r-1 is home, a 2 only
    ever carries an Ace, and an Ace can always go home by itself: playing such a card home
    leaves a position that can do everything the original could (see the package docs).
    """
    while True:
        lim = min(found) + 1
        if lim < 2:
            lim = 2
        for i, p in enumerate(piles):
            if p:
                c = ord(p[-1])
                r = c >> 2
                if r <= lim and found[c & 3] == r - 1:
                    piles[i] = p[:-1]
                    found[c & 3] = r
                    path = ((i, -1), path)
                    break
        else:
            return path


def _dead_end(piles: tuple[str, ...] | list[str], found: list[int], kings_only: bool) -> int:
    """-1, or a proof that the position cannot be won: then the most cards it can ever get home.

    A relaxation computes the set M of cards that might ever move, as a least fixpoint.  A card
    joins M once every card above it in its pile is in M and one of these holds:
    - home: every lower card of its suit still out is in M;
    - build: some card of rank r+1 is, or may become, a top: every card above it is in M
      (it may be in M itself, and it is never one beneath the card, which stays covered);
    - empty pile (Kings in Portuguese, any card in Spanish): some other pile is all in M.

    Why it is sound: let S be the cards outside M and suppose some line moves one of them;
    take the first such move, of card c.  No card of S has moved yet, so c is still where it
    was, every card above it has moved (so is in M), and whatever c uses is accounted for: the
    lower cards of its suit that are home have moved (so are in M); a base x that is a top now
    has either moved before (x in M) or is uncovered where it was (every card above x in M);
    an empty pile had every card of it moved (all in M).  Then c meets the rule that would have
    put it in M: a contradiction.  So no card of S ever moves, none of them ever goes home and
    neither does any higher card of its suit nor any card beneath it (those are in S as well).
    The bound returned counts, per suit, the ranks below the lowest card of S.
    """
    n = len(piles)
    pile_of = [-1] * 56  # card code -> its pile (-1: home)
    above = [0] * 56  # card code -> cards above it
    for q, p in enumerate(piles):
        k = len(p)
        for ch in p:
            k -= 1
            o = ord(ch)
            pile_of[o] = q
            above[o] = k
    moved = [0] * n  # how many top cards of each pile are in M
    low = [f + 1 for f in found]  # per suit, the lowest rank not in M
    todo = [q for q in range(n) if piles[q]]
    while todo:
        stalled = []
        progress = False
        for q in todo:
            p = piles[q]
            size = len(p)
            k = start = moved[q]
            while k < size:
                o = ord(p[size - 1 - k])
                r = o >> 2
                s = o & 3
                if low[s] != r:
                    ok = False
                    if r < 13:
                        for b in _BASES[r]:
                            w = pile_of[b]
                            if w >= 0 and above[b] <= moved[w]:
                                ok = True
                                break
                    if not ok and (r == 13 or not kings_only):
                        ok = any(j != q and moved[j] == len(piles[j]) for j in range(n))
                    if not ok:
                        break
                k += 1
                moved[q] = k
                if low[s] == r:
                    r += 1
                    while r <= 13:
                        b = (r << 2) | s
                        if above[b] >= moved[pile_of[b]]:
                            break
                        r += 1
                    low[s] = r
            if k < size:
                stalled.append(q)
            if k > start:
                progress = True
        if not progress:
            return sum(h - 1 for h in low)
        todo = stalled
    return -1


#: Codes of the four cards of rank r+1, by r.
_BASES = [tuple(((r + 1) << 2) | t for t in range(4)) for r in range(14)]


def _pile_blocks(p: str) -> tuple[int, int]:
    """(hard, soft) blocks of one pile: cards above a lower card of their own suit (each must
    move to another pile before that card can go home), and the other cards above a lower card.
    """
    hard = soft = 0
    low = [99, 99, 99, 99]
    m = 99
    for ch in p:
        o = ord(ch)
        r = o >> 2
        s = o & 3
        if low[s] < r:
            hard += 1
        elif r > m:
            soft += 1
        if r < low[s]:
            low[s] = r
        if r < m:
            m = r
    return hard, soft


def _features(piles: list[str], found: list[int], memo: dict) -> tuple[int, int, int]:
    """(hard, soft, next) for the heuristics; next counts the cards covering the next card
    each foundation needs.  Per-pile values are memoised: most piles recur in many positions."""
    hard = soft = 0
    for p in piles:
        f = memo.get(p)
        if f is None:
            f = memo[p] = _pile_blocks(p)
        hard += f[0]
        soft += f[1]
    nxt = 0
    for s in range(4):
        h = found[s]
        if h < 13:
            ch = chr((h + 1) * 4 + s)
            for p in piles:
                k = p.find(ch)
                if k >= 0:
                    nxt += len(p) - 1 - k
                    break
    return hard, soft, nxt


def _key(piles: list[str]) -> str:
    """Transposition key: the piles as a set (card codes never include chr(0))."""
    return "\0".join(sorted(piles))


#: Weights (cards left, hard, soft, next) of the alternating open lists.  No single weighting
#: finds every win quickly; taking turns between several (one closed set, every position in every
#: list, like Fast Downward's alternation open lists) finds far more of them in the same time.
#: Measured on Portuguese deals 1-200 at 5 s: three lists missed 17 deals that these six find 8 of.
WEIGHTS = ((1, 1, 1, 1), (1, 2, 1, 1), (1, 2, 1, 2), (2, 2, 1, 1), (1, 3, 1, 1), (1, 1, 0, 2))


class BuildDownSolver:
    """Search for a win of a Portuguese (``kings_only``) or Spanish position."""

    def __init__(self, piles: list[str], found: list[int], kings_only: bool, budget: Budget):
        self.piles = list(piles)
        self.found = list(found)
        self.kings_only = kings_only
        self.budget = budget
        self.total = sum(len(p) for p in piles) + sum(found)
        self.best: tuple[int, Path] = (sum(found), None)
        self.par_bound = 0  # the most cards home any pruned position could still reach

    def run(self) -> Outcome:
        """Search, then report; a loss proven with pruning proves no win but maybe not the par."""
        out = search_outcome(self._search, self, lambda mv: (f"t{mv[0]}", _target(mv[1])))
        if out.exhausted and not out.won and self.par_bound > out.best:
            out.exhausted = False
            out.lost_proven = True
        return out

    def _search(self) -> Path | tuple:
        """The winning path, or None once the start is proven dead or a search exhausts."""
        piles = list(self.piles)
        found = list(self.found)
        path = _autoplay(piles, found, None)
        if sum(found) == self.total:
            return path or ()
        self.best = (sum(found), path)
        bound = _dead_end(piles, found, self.kings_only)
        if bound >= 0:
            self.par_bound = bound
            return None
        searches = [self._best_first(piles, found, path), self._depth_first(piles, found, path)]
        while True:  # take turns; the first to win, or to exhaust (a proof), decides
            for search in searches:
                try:
                    next(search)
                except StopIteration as end:
                    return end.value

    def _children(self, piles: tuple[str, ...], found: tuple[int, ...], path: Path) -> Iterator:
        """(piles, found, path, undo) for every move, each followed by the safe moves home;
        ``undo``: the move can be undone at once (a card from a base of its rank + 1 to
        another, no card home), so the child is as winnable as the position it came from."""
        tops = [ord(p[-1]) >> 2 if p else 0 for p in piles]
        empty = tops.index(0) if 0 in tops else -1
        at: dict[int, list[int]] = {}
        for q, t in enumerate(tops):
            if t:
                at.setdefault(t, []).append(q)
        lim = max(2, min(found) + 1)
        for i, p in enumerate(piles):
            if not p:
                continue
            c = ord(p[-1])
            r = c >> 2
            targets = list(at.get(r + 1, ()))
            if found[c & 3] == r - 1:
                targets.append(-1)
            if empty >= 0 and len(p) > 1 and (r == 13 or not self.kings_only):
                targets.append(empty)
            under = p[:-1]
            for j in targets:
                np = list(piles)
                nf = list(found)
                np[i] = under
                npath = ((i, j), path)
                undo = False
                if j < 0:
                    nf[c & 3] += 1
                    npath = _autoplay(np, nf, npath)
                else:
                    np[j] += p[-1]
                    # the position was closed under safe moves and the foundations did not
                    # change: only the card just uncovered can have become safe
                    if under:
                        u = ord(under[-1])
                        ur = u >> 2
                        if ur <= lim and nf[u & 3] == ur - 1:
                            npath = _autoplay(np, nf, npath)
                        else:
                            undo = ur == r + 1
                yield np, nf, npath, undo

    def _admit(
        self, np: list[str], nf: list[int], npath: Path, seen: set, undo: bool
    ) -> str | None:
        """The key of a new child worth searching, else None (seen, or a proven dead end).
        A child one move from its parent and back needs no test: the parent passed it."""
        key = _key(np)
        if key in seen:
            return None
        seen.add(key)
        home = sum(nf)
        if home > self.best[0]:
            self.best = (home, npath)
        if undo:
            return key
        bound = _dead_end(np, nf, self.kings_only)
        if bound >= 0:
            if bound > self.par_bound:
                self.par_bound = bound
            return None
        return key

    def _best_first(self, piles: list[str], found: list[int], path: Path) -> Iterator[None]:
        """Alternating best-first, yielding every ``TURN`` expansions; returns the winning
        path, or None when exhausted."""
        budget = self.budget
        total = self.total
        seen = {_key(piles)}
        done: set[str] = set()  # expanded
        memo: dict = {}
        item = (tuple(piles), tuple(found), path, _key(piles))
        heaps: list[list] = [[(0, 0, item)] for _ in WEIGHTS]
        count = 0
        turn = -1
        while True:
            turn = (turn + 1) % len(heaps)
            heap = heaps[turn]
            while heap and heap[0][2][3] in done:
                heapq.heappop(heap)
            if not heap:
                if not any(heaps):
                    return None
                continue
            piles, found, path, key = heapq.heappop(heap)[2]
            done.add(key)
            budget.nodes += 1
            if budget.nodes >= budget.next_check:
                budget.check()
            if not budget.nodes % TURN:
                yield
            for np, nf, npath, undo in self._children(piles, found, path):
                left = total - sum(nf)
                if not left:
                    return npath
                nkey = self._admit(np, nf, npath, seen, undo)
                if nkey is None:
                    continue
                hard, soft, nxt = _features(np, nf, memo)
                count += 1
                it = (tuple(np), tuple(nf), npath, nkey)
                for heap, (wl, wh, ws, wn) in zip(heaps, WEIGHTS, strict=True):
                    heapq.heappush(heap, (wl * left + wh * hard + ws * soft + wn * nxt, count, it))

    def _depth_first(self, piles: list[str], found: list[int], path: Path) -> Iterator[None]:
        """Depth-first, children best heuristic first, yielding every ``TURN`` expansions;
        returns the winning path, or None when exhausted."""
        budget = self.budget
        total = self.total
        seen = {_key(piles)}
        memo: dict = {}
        stack = [(tuple(piles), tuple(found), path)]
        while stack:
            piles, found, path = stack.pop()
            budget.nodes += 1
            if budget.nodes >= budget.next_check:
                budget.check()
            if not budget.nodes % TURN:
                yield
            kids = []
            for np, nf, npath, undo in self._children(piles, found, path):
                left = total - sum(nf)
                if not left:
                    return npath
                if self._admit(np, nf, npath, seen, undo) is None:
                    continue
                hard, soft, nxt = _features(np, nf, memo)
                kids.append((left + hard + soft + nxt, len(kids), (tuple(np), tuple(nf), npath)))
            kids.sort(reverse=True)
            stack.extend(k[2] for k in kids)
        return None


def _target(j: int) -> str:
    return "f" if j < 0 else f"t{j}"
