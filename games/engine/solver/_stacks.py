"""Countess and Barricade A: few receiving piles, a stock, empty piles never refilled (K5/B5).

These deals are almost never winnable, so the search is a branch and bound for the *par*: the
most cards that can reach the foundations.  The search is an exhaustive depth-first search with a
transposition table; a position is cut when an upper bound on what it can still reach is no
better than the best line found so far.  A finished search therefore proves the par.

Representation (all in place, undone on backtrack):
- ``piles``: list of ``str`` tableau piles in engine order (one char per card, see ``_common``);
- ``seq``: the stock in the order it comes off (next first) and ``pos``, how much is gone;
- ``waste`` (Countess): ``str``, top last;
- ``found``: two slots per suit, ``found[2s]`` >= ``found[2s+1]`` (two decks); with one deck the
  second slot is a phantom 99 that never matches a card.
The foundations are implied by the other cards, and the piles are interchangeable, so the
transposition key is ``(sorted piles, waste, pos)``.

The upper bound (``_bounds``), per suit the smaller of two:

1. ``_bound``, a dead-card analysis, run to a fixpoint (every step only uses facts already
   proven, so each card it calls dead is dead):
   - a rank is *placeable* while some card one rank higher could still become a pile top: one in
     a pile and not under a stuck card, or one still to come out whose own rank is placeable.
     Kings never are: nothing goes on a King and empty piles stay empty.  An unplaceable card
     leaves its stack (pile, waste, Barricade's stock) only for the foundation;
   - such a card above a lower card of its suit in the same stack waits for it forever (one
     deck), or, with two decks, when for some lower rank both copies are dead or beneath it;
   - a dead card that can only leave for the foundation is stuck, and everything under it is
     dead and can never be a pile top;
   - Countess: an unplaceable stock card x buries whatever is on the waste when it is drawn, so
     an unplaceable card w of its suit, lower, already out (waste, or earlier in the stock) must
     be home before x is drawn: impossible if a card of that suit no higher than w comes after x;
   - a foundation reaching height h uses one copy of each rank up to h, so the lower foundation
     of a suit stays under its first rank with a dead copy, the higher one under its first rank
     with every copy dead (one deck: under the first dead card).
2. ``_pool_bound`` (Barricade): a relaxed game, solved greedily to a least fixpoint, where every
   exposed card stays available for ever; it catches cycles the first one cannot (a 5 that can
   only leave onto the 6 under it keeps the 8 under both out of reach, and the stock stalls).

Soundness was checked against an exhaustive search of the engine's own move generator on a few
hundred random small positions of each game (tests keep a handful of hand-made ones). Such a
check later found one Barricade endgame of 16 cards in about 60 proved lost at 99 though won
(the pool bound below left out a stock card that went home but could first lie on a pile);
fixed, 236 Barricade and 316 Countess endgames of 10-18 cards, a stock of up to half of them,
all matched (tests/engine/test_solver.py keeps that endgame).
"""

from __future__ import annotations

from ._common import Budget, Outcome, OutOfBudget

WASTE = -2
STOCK = -3
DRAW = -4
FOUND = -1
NOSLOT = 99


class StackSolver:
    def __init__(
        self,
        piles: list[str],
        found: list[int],
        seq: str,
        waste: str,
        countess: bool,
        decks: int,
        budget: Budget,
    ) -> None:
        self.piles = list(piles)
        self.found = list(found)  # 8 slots
        self.seq = seq
        self.pos = 0
        self.waste = waste
        self.countess = countess
        self.decks = decks
        self.budget = budget
        self.total = 52 * decks
        self.fc = sum(f for f in found if f != NOSLOT)
        self.path: list[tuple[int, int, str]] = []
        self.best = -1
        self.best_line: list[tuple[int, int, str]] = []
        self.seen: set = set()
        self.root_bound = self.total

    # ------------------------------------------------------------------ driver
    def run(self) -> Outcome:
        self.root_bound = self._bounds()
        try:
            self._search()
            exhausted = True
        except OutOfBudget:
            exhausted = False
        if self.best >= self.root_bound:
            exhausted = True
        won = self.best == self.total
        line = []
        for src, dst, _ in self.best_line:
            if src == DRAW:
                line.append(("draw", None))
                continue
            s = "waste" if src == WASTE else "stock" if src == STOCK else f"t{src}"
            line.append((s, "f" if dst == FOUND else f"t{dst}"))
        out = Outcome(won, exhausted, line, self.best, self.budget.nodes)
        out.lost_proven = not won and (exhausted or self.root_bound < self.total)
        return out

    # ------------------------------------------------------------------ moves
    def _do(self, src: int, dst: int) -> None:
        if src == DRAW:
            ch = self.seq[self.pos]
            self.pos += 1
            self.waste += ch
            self.path.append((DRAW, DRAW, ch))
            return
        if src >= 0:
            p = self.piles[src]
            ch = p[-1]
            self.piles[src] = p[:-1]
        elif src == WASTE:
            ch = self.waste[-1]
            self.waste = self.waste[:-1]
        else:
            ch = self.seq[self.pos]
            self.pos += 1
        if dst == FOUND:
            c = ord(ch)
            r = c >> 2
            s2 = (c & 3) << 1
            if self.found[s2] == r - 1:
                self.found[s2] = r
            else:
                self.found[s2 + 1] = r
            self.fc += 1
        else:
            self.piles[dst] += ch
        self.path.append((src, dst, ch))

    def _undo(self) -> None:
        src, dst, ch = self.path.pop()
        if src == DRAW:
            self.pos -= 1
            self.waste = self.waste[:-1]
            return
        if dst == FOUND:
            c = ord(ch)
            r = c >> 2
            s2 = (c & 3) << 1
            if self.found[s2 + 1] == r:
                self.found[s2 + 1] = r - 1
            else:
                self.found[s2] = r - 1
            self.fc -= 1
        else:
            p = self.piles[dst]
            self.piles[dst] = p[:-1]
        if src >= 0:
            self.piles[src] += ch
        elif src == WASTE:
            self.waste += ch
        else:
            self.pos -= 1

    def _sources(self) -> list[tuple[int, str]]:
        out = [(i, p[-1]) for i, p in enumerate(self.piles) if p]
        if self.countess:
            if self.waste:
                out.append((WASTE, self.waste[-1]))
        elif self.pos < len(self.seq):
            out.append((STOCK, self.seq[self.pos]))
        return out

    def _autoplay(self) -> None:
        """Plays home every card that provably loses nothing by going home now.

        Such a card is no longer needed as a base: every card one rank lower is home (any
        suit builds on it), or it is a 2 (it only carries Aces, which can always go home).
        With two decks it must also not take the only foundation slot the other copy could
        use, since which copy goes first can matter.
        """
        found = self.found
        while True:
            m = min(found) + 1
            for src, ch in self._sources():
                c = ord(ch)
                r = c >> 2
                if r > 2 and r > m:
                    continue
                s2 = (c & 3) << 1
                hi = found[s2]
                lo = found[s2 + 1]
                if hi == r - 1:
                    if lo < r - 1:
                        continue  # the other copy would want this slot
                elif lo != r - 1:
                    continue
                self._do(src, FOUND)
                break
            else:
                return

    def _moves(self) -> list[tuple[int, int]]:
        found = self.found
        piles = self.piles
        tops = {}
        for j, p in enumerate(piles):
            if p:
                tops.setdefault(ord(p[-1]) >> 2, []).append(j)
        scored = []
        for src, ch in self._sources():
            c = ord(ch)
            r = c >> 2
            s2 = (c & 3) << 1
            if src >= 0:
                p = piles[src]
                if len(p) > 1:
                    u = ord(p[-2])
                    us2 = (u & 3) << 1
                    ur = u >> 2
                    bonus = 20 if (found[us2] == ur - 1 or found[us2 + 1] == ur - 1) else 0
                else:
                    bonus = -10  # empties a pile for good
            else:
                bonus = 10
            if found[s2] == r - 1 or found[s2 + 1] == r - 1:
                scored.append((100 + bonus, src, FOUND))
            for j in tops.get(r + 1, ()):
                if j != src:
                    scored.append((bonus, src, j))
        if self.countess and self.pos < len(self.seq):
            scored.append((5, DRAW, DRAW))
        scored.sort(reverse=True)
        return [(s, d) for _, s, d in scored]

    # ------------------------------------------------------------------ search
    def _search(self) -> None:
        stack: list[list] = []
        if self._enter(stack):
            return
        undo = self._undo
        path = self.path
        while stack:
            fr = stack[-1]
            moves = fr[0]
            k = fr[1]
            if k < len(moves):
                fr[1] = k + 1
                src, dst = moves[k]
                self._do(src, dst)
                if self._enter(stack):
                    return
            else:
                stack.pop()
                n0 = fr[2]
                while len(path) > n0:
                    undo()
                if stack:
                    undo()

    def _enter(self, stack: list) -> bool:
        """Enters the position just reached; True when the search can stop (a win).

        The transposition table holds positions both before and after the automatic moves:
        those are deterministic, so a position seen either way has been (or is being) searched.
        """
        b = self.budget
        b.nodes += 1
        if b.nodes >= b.next_check:
            b.check()
        seen = self.seen
        key = (tuple(sorted(self.piles)), self.waste, self.pos)
        if key in seen:
            if stack:
                self._undo()
            return False
        seen.add(key)
        path = self.path
        n0 = len(path)
        self._autoplay()
        fresh = True
        if len(path) > n0:
            key = (tuple(sorted(self.piles)), self.waste, self.pos)
            if key in seen:
                fresh = False
            else:
                seen.add(key)
        if self.fc > self.best:
            self.best = self.fc
            self.best_line = list(path)
            if self.fc == self.total or self.fc >= self.root_bound:
                return True
        if fresh and self._bounds() > self.best:
            moves = self._moves()
            if moves:
                stack.append([moves, 0, n0])
                return False
        while len(path) > n0:
            self._undo()
        if stack:
            self._undo()
        return False

    def _bounds(self) -> int:
        """The par bound: the dead-card analysis, and for Barricade also the pool relaxation,
        taking per suit the smaller of the two (each bounds every suit separately)."""
        if self.countess:
            return sum(self._bound())
        pool = self._pool_bound()
        if sum(pool) <= self.best:
            return sum(pool)
        return sum(min(a, b) for a, b in zip(pool, self._bound(), strict=True))

    def _pool_bound(self) -> list[int]:
        """Barricade: an upper bound from a relaxed game where every exposed card stays
        available for ever (a pool), cards go home as soon as they fit, and a card leaves its
        pile or the stock when it goes home or when some card one rank higher has ever been
        exposed.  Every real line maps onto a line of the relaxed game with at least as many
        cards home, so its (greedy, least-fixpoint) result bounds the par.  It sees what the
        dead-card analysis cannot: cycles such as a 5 that can only leave onto the 6 under it.
        """
        piles = self.piles
        seq = self.seq
        n = len(seq)
        found = self.found[:]
        cnt = [0] * 56  # exposed cards not yet home
        ever = [0] * 15  # exposed cards per rank, home or not
        front = []
        for p in piles:
            k = len(p) - 1
            front.append(k)
            if k >= 0:
                c = ord(p[k])
                cnt[c] += 1
                ever[c >> 2] += 1
        sp = self.pos
        if sp < n:
            cnt[ord(seq[sp])] += 1  # a stock card is a target only once it is on a pile
        home = [0] * 56  # copies of each card sent home by the relaxation
        changed = True
        while changed:
            changed = False
            for s in range(4):
                s2 = s << 1
                while True:
                    c = (found[s2] + 1) * 4 + s
                    if found[s2] < 13 and cnt[c]:
                        cnt[c] -= 1
                        home[c] += 1
                        found[s2] += 1
                        continue
                    c = (found[s2 + 1] + 1) * 4 + s
                    if found[s2 + 1] < 13 and cnt[c]:
                        cnt[c] -= 1
                        home[c] += 1
                        found[s2 + 1] += 1
                        if found[s2 + 1] > found[s2]:
                            found[s2], found[s2 + 1] = found[s2 + 1], found[s2]
                        continue
                    break
            for i, p in enumerate(piles):
                k = front[i]
                while k > 0:
                    c = ord(p[k])
                    r = c >> 2
                    if home[c] or (r < 13 and ever[r + 1]):
                        k -= 1
                        c = ord(p[k])
                        cnt[c] += 1
                        ever[c >> 2] += 1
                        changed = True
                    else:
                        break
                front[i] = k
            while sp < n:
                c = ord(seq[sp])
                r = c >> 2
                placeable = r < 13 and ever[r + 1]
                if home[c] or placeable:
                    if placeable:
                        # It may go on a pile, where it is a target for good, even if the
                        # relaxation sends it home: counted only when not home, a JS that the
                        # real game lays on a QS before TD goes on it left every lower diamond
                        # out of reach, and proved a won Barricade endgame lost at 99.
                        ever[r] += 1
                    sp += 1
                    if sp < n:
                        cnt[ord(seq[sp])] += 1
                    changed = True
                else:
                    break
        return [found[2 * s] + found[2 * s + 1] for s in range(4)]

    # ------------------------------------------------------------------ bound
    def _bound(self) -> list[int]:
        """Per suit, an upper bound on the cards that can still be home (see module doc)."""
        piles = self.piles
        two = self.decks == 2
        full = 2 if two else 1
        rest = self.seq[self.pos :]
        waste = self.waste
        in_tab = [0] * 15
        for p in piles:
            for ch in p:
                in_tab[ord(ch) >> 2] += 1
        outside = [0] * 15
        for ch in rest:
            outside[ord(ch) >> 2] += 1
        for ch in waste:
            outside[ord(ch) >> 2] += 1
        placeable = [False] * 15
        stacks = [p for p in piles if p]
        npiles = len(stacks)
        if self.countess:
            if waste:
                stacks.append(waste)
        elif rest:
            stacks.append(rest[::-1])
        dead = [0] * 56  # copies of each card known dead, by position
        dead_pos: set = set()
        # caps[2s], caps[2s+1]: the highest each foundation of suit s can still reach
        caps = [13, 13 if two else NOSLOT] * 4

        def n_dead(c: int) -> int:
            r = c >> 2
            s2 = (c & 3) << 1
            d = (r > caps[s2]) + (two and r > caps[s2 + 1])
            return d if d > dead[c] else dead[c]

        # cards that can never be a pile top (under a stuck card) or leave their stack
        hidden: set = set()

        def hide(sid: int, k: int, c: int) -> None:
            if (sid, k) not in hidden:
                hidden.add((sid, k))
                if sid < npiles:
                    in_tab[c >> 2] -= 1
                else:
                    outside[c >> 2] -= 1

        changed = True
        while changed:
            changed = False
            # a rank is placeable while a card one rank higher may still become a pile top
            for r in range(12, 0, -1):
                placeable[r] = in_tab[r + 1] > 0 or (placeable[r + 1] and outside[r + 1] > 0)
            for sid, st in enumerate(stacks):
                n = len(st)
                # pass 1, bottom to top: which unplaceable cards wait on cards under them
                blocked = None
                if two:
                    under = [[0] * 15 for _ in range(4)]
                    under_dead = [[0] * 15 for _ in range(4)]
                    for k in range(n):
                        c = ord(st[k])
                        r = c >> 2
                        s = c & 3
                        if not placeable[r] and (sid, k) not in dead_pos:
                            u = under[s]
                            ud = under_dead[s]
                            for rr in range(1, r):
                                lower = rr * 4 + s
                                if u[rr] + dead[lower] - ud[rr] >= 2 or n_dead(lower) >= 2:
                                    if blocked is None:
                                        blocked = set()
                                    blocked.add(k)
                                    break
                        under[s][r] += 1
                        if (sid, k) in dead_pos:
                            under_dead[s][r] += 1
                else:
                    low = [99, 99, 99, 99]
                    for k in range(n):
                        c = ord(st[k])
                        r = c >> 2
                        s = c & 3
                        if low[s] < r:
                            if not placeable[r]:
                                if blocked is None:
                                    blocked = set()
                                blocked.add(k)
                        else:
                            low[s] = r
                # pass 2, top to bottom: a card that can only leave for home and never gets
                # there is stuck, and so is everything under it
                stuck = False
                for k in range(n - 1, -1, -1):
                    c = ord(st[k])
                    if stuck:
                        if (sid, k) not in dead_pos:
                            dead_pos.add((sid, k))
                            dead[c] += 1
                            changed = True
                        if (sid, k) not in hidden:
                            hide(sid, k, c)
                            changed = True
                        continue
                    if placeable[c >> 2]:
                        continue
                    if (sid, k) in dead_pos or n_dead(c) >= full:
                        stuck = True
                    elif blocked is not None and k in blocked:
                        dead_pos.add((sid, k))
                        dead[c] += 1
                        changed = True
                        stuck = True
                    if stuck and sid >= npiles and (sid, k) not in hidden:
                        hide(sid, k, c)
                        changed = True
            if (
                self.countess
                and rest
                and self._stock_rule(rest, waste, placeable, n_dead, dead, dead_pos)
            ):
                changed = True
            if self._recap(caps, dead, two):
                changed = True
        if two:
            return [caps[2 * s] + caps[2 * s + 1] for s in range(4)]
        return caps[0::2]

    @staticmethod
    def _stock_rule(rest, waste, placeable, n_dead, dead, dead_pos) -> bool:
        """Countess (one deck): see the module doc.  ``rest`` is the stock, next card first."""
        changed = False
        n = len(rest)
        for s in range(4):
            idx = {}
            for i in range(n):
                c = ord(rest[i])
                if (c & 3) == s:
                    idx[c >> 2] = i
            if not idx:
                continue
            blockers = [(i, r) for r, i in idx.items() if not placeable[r]]
            if not blockers:
                continue
            latest = [-1] * 15  # latest stock index among this suit's cards of rank <= r
            m = -1
            for r in range(1, 14):
                i = idx.get(r, -1)
                if i > m:
                    m = i
                latest[r] = m
            cands = [(-1, ord(ch) >> 2) for ch in waste if (ord(ch) & 3) == s]
            cands += [(i, r) for r, i in idx.items()]
            for j, rw in cands:
                if placeable[rw]:
                    continue
                c = rw * 4 + s
                if n_dead(c):
                    continue
                lim = latest[rw]
                for i, rx in blockers:
                    if rx > rw and j < i < lim:
                        dead[c] = 1
                        dead_pos.add(("stock", c))
                        changed = True
                        break
        return changed

    @staticmethod
    def _recap(caps: list[int], dead: list[int], two: bool) -> bool:
        """Lowers the foundation caps: a foundation reaching height h uses one copy of every
        rank up to h, so the lower foundation stays under the first rank with a dead copy and
        the higher one under the first rank with every copy dead (one deck: one copy)."""
        changed = False
        for s in range(4):
            lo = hi = 13
            for r in range(1, 14):
                d = dead[r * 4 + s]
                if d:
                    if lo == 13:
                        lo = r - 1
                    if d >= 2 or not two:
                        hi = r - 1
                        break
            if two:
                if hi < caps[2 * s] or lo < caps[2 * s + 1]:
                    caps[2 * s] = min(caps[2 * s], hi)
                    caps[2 * s + 1] = min(caps[2 * s + 1], lo)
                    changed = True
            elif hi < caps[2 * s]:
                caps[2 * s] = hi
                changed = True
        return changed
