"""Portuguese Solitaire and Spanish Patience: 13 open piles, single cards, build down any suit.

Representation: a position is a tuple of 13 ``str`` piles (one char per card, see ``_common``)
in the engine's pile order, plus each suit's foundation height.  The foundations are implied by
the cards left in the tableau, and piles are interchangeable, so the transposition key is the
sorted tuple of piles (empty piles included: they are all alike).

Search: greedy best-first with three alternating open lists (see ``WEIGHTS``) and one closed
set of every position ever generated.  Depth-first search drowns in these reversible games (it
explores everything reachable from its first bad move before undoing it); the heuristics reach
most wins in a few hundred expansions.  The search is complete: every reachable position (up to
the safe moves home and pile symmetry, both exact) is generated once and expanded once, so an
exhausted search is a proof that the deal cannot be won, and its best count is the true par.

Moves generated: a top card home (besides the automatic safe ones), onto a pile whose top is one
rank higher, or to the first empty pile (Portuguese: Kings only, P4; Spanish: anything, S4) but
never from a pile it is alone in (that only renames the piles).
"""

from __future__ import annotations

import heapq

from ._common import Budget, Outcome, OutOfBudget


def _autoplay(piles: list[str], found: list[int], path):
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


def _features(piles, found, memo: dict) -> tuple[int, int, int]:
    """(hard, soft, next) for the heuristics; next counts the cards covering the next card
    each foundation needs.  Per-pile values are memoised: a move changes two piles."""
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


#: Weights (cards left, hard, soft, next) of the alternating open lists.  No single weighting
#: finds every win quickly; taking turns between several (one closed set, every position in every
#: list, like Fast Downward's alternation open lists) finds far more of them in the same time.
#: Measured on Portuguese deals 1-200 at 5 s: three lists missed 17 deals that these six find 8 of.
WEIGHTS = ((1, 1, 1, 1), (1, 2, 1, 1), (1, 2, 1, 2), (2, 2, 1, 1), (1, 3, 1, 1), (1, 1, 0, 2))


class BuildDownSolver:
    def __init__(self, piles: list[str], found: list[int], kings_only: bool, budget: Budget):
        self.piles = list(piles)
        self.found = list(found)
        self.kings_only = kings_only
        self.budget = budget
        self.total = sum(len(p) for p in piles) + sum(found)

    def run(self) -> Outcome:
        self.best = (sum(self.found), None)
        try:
            path = self._search()
            exhausted = True
        except OutOfBudget:
            path = None
            exhausted = False
        won = path is not None
        if not won:
            path = self.best[1]  # the line to the most cards home seen
        line = []
        while path:
            (i, j), path = path
            line.append((f"t{i}", "f" if j < 0 else f"t{j}"))
        line.reverse()
        best = self.total if won else self.best[0]
        return Outcome(won, exhausted or won, line, best, self.budget.nodes)

    def _search(self):
        total = self.total
        kings_only = self.kings_only
        budget = self.budget
        piles = list(self.piles)
        found = list(self.found)
        path = _autoplay(piles, found, None)
        if sum(found) == total:
            return path or ()
        best = sum(found)
        self.best = (best, path)
        key = tuple(sorted(piles))
        seen = {key}  # generated
        done = set()  # expanded
        memo: dict = {}
        item = (tuple(piles), tuple(found), path, key)
        heaps = [[(0, 0, item)] for _ in WEIGHTS]
        nq = len(heaps)
        turn = 0
        count = 0
        push = heapq.heappush
        pop = heapq.heappop
        while True:
            heap = heaps[turn]
            turn = (turn + 1) % nq
            while heap and heap[0][2][3] in done:
                pop(heap)
            if not heap:
                if all(not h for h in heaps):
                    return None
                continue
            piles, found, path, key = pop(heap)[2]
            done.add(key)
            budget.nodes += 1
            if budget.nodes >= budget.next_check:
                budget.check()
            tops = [ord(p[-1]) >> 2 if p else 0 for p in piles]
            empty = tops.index(0) if 0 in tops else -1
            where = {}  # card -> pile index, for the heuristic
            for q, p in enumerate(piles):
                for ch in p:
                    where[ch] = q
            at: dict[int, list[int]] = {}
            for q, t in enumerate(tops):
                if t:
                    at.setdefault(t, []).append(q)
            lim = min(found) + 1
            if lim < 2:
                lim = 2
            blocks = []
            hard0 = soft0 = 0
            for q in piles:
                f = memo.get(q)
                if f is None:
                    f = memo[q] = _pile_blocks(q)
                blocks.append(f)
                hard0 += f[0]
                soft0 += f[1]
            for i, p in enumerate(piles):
                if not p:
                    continue
                c = ord(p[-1])
                r = c >> 2
                targets = list(at.get(r + 1, ()))
                if found[c & 3] == r - 1:
                    targets.append(-1)
                if empty >= 0 and len(p) > 1 and (r == 13 or not kings_only):
                    targets.append(empty)
                under = p[:-1]
                ch = p[-1]
                for j in targets:
                    np = list(piles)
                    nf = list(found)
                    np[i] = under
                    npath = ((i, j), path)
                    auto = True
                    if j < 0:
                        nf[c & 3] += 1
                        npath = _autoplay(np, nf, npath)
                    else:
                        np[j] += ch
                        # the position was closed under safe moves and the foundations did
                        # not change: only the card just uncovered can have become safe
                        auto = False
                        if under:
                            u = ord(under[-1])
                            ur = u >> 2
                            if ur <= lim and nf[u & 3] == ur - 1:
                                npath = _autoplay(np, nf, npath)
                                auto = True
                    left = total - sum(nf)
                    if not left:
                        return npath
                    nkey = tuple(sorted(np))
                    if nkey in seen:
                        continue
                    seen.add(nkey)
                    if total - left > best:
                        best = total - left
                        self.best = (best, npath)
                    count += 1
                    if auto:
                        hard = soft = 0
                        for q in np:
                            f = memo.get(q)
                            if f is None:
                                f = memo[q] = _pile_blocks(q)
                            hard += f[0]
                            soft += f[1]
                    else:  # only piles i and j changed
                        fi = memo.get(under)
                        if fi is None:
                            fi = memo[under] = _pile_blocks(under)
                        pj = np[j]
                        fj = memo.get(pj)
                        if fj is None:
                            fj = memo[pj] = _pile_blocks(pj)
                        bi = blocks[i]
                        bj = blocks[j]
                        hard = hard0 - bi[0] - bj[0] + fi[0] + fj[0]
                        soft = soft0 - bi[1] - bj[1] + fi[1] + fj[1]
                    nxt = 0
                    for su in range(4):
                        h = nf[su]
                        if h < 13:
                            need = chr((h + 1) * 4 + su)
                            q = j if need == ch else where[need]
                            pq = np[q]
                            nxt += len(pq) - 1 - pq.find(need)
                    it = (tuple(np), tuple(nf), npath, nkey)
                    for q, (wl, wh, ws, wn) in enumerate(WEIGHTS):
                        push(heaps[q], (wl * left + wh * hard + ws * soft + wn * nxt, count, it))
