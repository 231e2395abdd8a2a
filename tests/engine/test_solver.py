"""The solver: its lines replay to wins in the engine, its verdicts and pars hold.

Budgets are node counts where a verdict is asserted, so results do not depend on machine speed.
"""

from __future__ import annotations

import random

import pytest

from games.engine import VARIANTS, State, new_game, replay
from games.engine.solver import SolveResult, hint, hint_line, solve

RANKS = "A23456789TJQK"


def run(suit: str, lo: int, hi: int) -> list[str]:
    """Cards of one suit, ranks lo..hi ascending: run("S", 1, 3) == ["AS", "2S", "3S"]."""
    return [RANKS[r - 1] + suit for r in range(lo, hi + 1)]


def position(
    variant: str,
    tableau: dict[int, str],
    foundations: dict[int, str],
    *,
    stock: str = "",
    waste: str = "",
    cells: dict[int, str] | None = None,
) -> State:
    """A hand-made position; foundations map slot -> top card ("QH" = AH..QH); ``stock``
    lists the stock with the next card to come off FIRST."""
    v = VARIANTS[variant]
    fnd = []
    for i in range(v.foundations):
        top = foundations.get(i)
        fnd.append(run(top[1], 1, RANKS.index(top[0]) + 1) if top else [])
    return State.from_dict(
        {
            "variant": variant,
            "deal": 0,
            "moves": 0,
            "tableau": [tableau.get(i, "").split() for i in range(v.tableau_piles)],
            "foundations": fnd,
            "cells": [(cells or {}).get(i) for i in range(v.cells)],
            "stock": list(reversed(stock.split())),
            "waste": waste.split(),
        }
    )


# ---------------------------------------------------------------- lines replay to wins
@pytest.mark.parametrize(
    ("variant", "deals", "nodes", "min_won"),
    [
        ("spanish", range(1, 41), 3000, 36),
        ("portuguese", range(1, 31), 3000, 20),
        ("chinese_freecell", range(1, 21), 3000, 18),
    ],
)
def test_claimed_wins_replay_to_wins(variant: str, deals: range, nodes: int, min_won: int) -> None:
    won = 0
    for deal in deals:
        r = solve(new_game(variant, deal), time_limit=None, max_nodes=nodes)
        assert r.outcome in ("won", "lost", "unknown")
        if r.outcome == "won":
            won += 1
            end = replay(variant, deal, r.line)
            assert end.status == "won", (variant, deal)
            assert r.par == VARIANTS[variant].cards and r.par_proven
    assert won >= min_won


@pytest.mark.parametrize("variant", ["countess", "barricade"])
def test_par_is_the_foundation_count_at_the_end_of_the_line(variant: str) -> None:
    for deal in range(1, 13):
        r = solve(new_game(variant, deal), time_limit=None, max_nodes=1500)
        end = replay(variant, deal, r.line)
        assert end.foundation_count == r.par, (variant, deal)
        assert r.outcome in ("lost", "unknown")  # no deal of these is winnable in practice
        assert 0 <= r.par <= VARIANTS[variant].cards


# ---------------------------------------------------------------- verdicts on small positions
CLUBS_HEARTS_DIAMONDS_HOME = {1: "KH", 2: "KD", 3: "KC"}


def test_lost_verdict_is_a_proof_on_an_obviously_lost_portuguese_position() -> None:
    # 2S waits on AS beneath it and can only go onto 3S, which is under it; no pile empties.
    st = position(
        "portuguese",
        {0: "AS 3S 2S", 1: "KS QS JS TS 9S 8S 7S 6S 4S", 2: "5S"},
        CLUBS_HEARTS_DIAMONDS_HOME,
    )
    r = solve(st, time_limit=5)
    assert r.outcome == "lost"
    assert r.par_proven
    assert r.par == 39
    assert replay_from(st, r.line).foundation_count == r.par


def test_same_layout_is_won_in_spanish_where_any_card_fills_a_pile() -> None:
    st = position(
        "spanish",
        {0: "AS 3S 2S", 1: "KS QS JS TS 9S 8S 7S 6S 4S", 2: "5S"},
        CLUBS_HEARTS_DIAMONDS_HOME,
    )
    r = solve(st, time_limit=5)
    assert r.outcome == "won"
    assert replay_from(st, r.line).status == "won"


def test_won_verdict_when_a_king_must_clear_a_pile_in_portuguese() -> None:
    st = position(
        "portuguese",
        {0: "4S KS", 1: "5S 6S 7S 8S 9S TS JS QS"},
        {**CLUBS_HEARTS_DIAMONDS_HOME, 0: "3S"},
    )
    r = solve(st, time_limit=5)
    assert r.outcome == "won"
    assert replay_from(st, r.line).status == "won"
    assert r.line[0] in (f"t0-t{i}" for i in range(2, 13))


def test_won_verdict_on_a_nearly_won_chinese_freecell_position() -> None:
    st = position(
        "chinese_freecell",
        {0: "QS KS", 4: "QH", 5: "KH"},
        {0: "JS", 1: "KS", 2: "JH", 3: "KD", 4: "KD", 5: "KH"},
    )
    r = solve(st, time_limit=5)
    assert r.outcome == "won"
    assert replay_from(st, r.line).status == "won"


def test_chinese_freecell_king_headed_sequence_to_an_empty_pile() -> None:
    # JH is under the sequence KS QH; one free cell allows a 2-card move (F4) to the empty t1.
    st = position(
        "chinese_freecell",
        {0: "JH KS QH"},
        {0: "KH", 1: "KD", 2: "KD", 3: "KS", 4: "9H", 5: "JS"},
        cells={0: "KH", 1: "QS", 2: "TH"},
    )
    r = solve(st, time_limit=5)
    assert r.outcome == "won"
    assert replay_from(st, r.line).status == "won"


def test_chinese_freecell_lines_use_sequence_moves() -> None:
    lines = [solve(new_game("chinese_freecell", d), max_nodes=3000).line for d in (1, 2, 3)]
    assert any(":" in m for line in lines for m in line)


def test_countess_par_is_proven_when_a_king_buries_a_two() -> None:
    # 2S comes out first and KS lands on it: KS can go nowhere but home, which needs 2S home.
    st = position(
        "countess",
        {0: "QS"},
        CLUBS_HEARTS_DIAMONDS_HOME,
        stock="2S KS AS 3S 4S 5S 6S 7S 8S 9S TS JS",
    )
    r = solve(st, time_limit=5)
    assert r.outcome == "lost"
    assert r.par == 40 and r.par_proven
    assert replay_from(st, r.line).foundation_count == 40


def test_countess_won_when_the_stock_comes_in_order() -> None:
    st = position(
        "countess",
        {0: "QS"},
        CLUBS_HEARTS_DIAMONDS_HOME,
        stock="KS AS 2S 3S 4S 5S 6S 7S 8S 9S TS JS",
    )
    r = solve(st, time_limit=5)
    assert r.outcome == "won" and r.par == 52
    assert replay_from(st, r.line).status == "won"


def test_barricade_par_proven_when_a_king_sits_on_its_own_suit() -> None:
    home = {0: "KC", 1: "KC", 2: "KH", 3: "KH", 4: "KD", 5: "KD", 6: "KS"}
    # The second spade run: KS above AS in one pile, nothing can ever go on a King.
    st = position("barricade", {0: "AS KS", 1: "2S 3S"}, home, stock="4S 5S 6S")
    r = solve(st, time_limit=5)
    assert r.outcome == "lost"
    assert r.par == 91 and r.par_proven


def test_already_won_position() -> None:
    st = position("portuguese", {}, {0: "KS", 1: "KH", 2: "KD", 3: "KC"})
    r = solve(st)
    assert r.outcome == "won" and r.line == [] and r.par == 52


# ---------------------------------------------------------------- hints and API
@pytest.mark.parametrize("variant", list(VARIANTS))
def test_hint_is_a_legal_move(variant: str) -> None:
    st = new_game(variant, 3)
    m = hint(st, time_limit=0.3)
    assert m in st.legal_moves()


# How many of a stock's cards, from its top, are face up (RULES.md K1, B1): read from the rules,
# not from the engine's own `hidden_count`, which a test of what is hidden must not trust.
_FACE_UP_STOCK_CARDS = {"countess": 0, "barricade": 1}


def _orders_of_the_face_down_cards(seen: State, count: int) -> list[State]:
    """`seen` with its face-down cards in `count` other orders: the same position to a player."""
    full = seen.to_dict()
    hidden = max(0, len(full["stock"]) - _FACE_UP_STOCK_CARDS[full["variant"]])
    others = []
    for seed in range(count):
        unseen = full["stock"][:hidden]
        random.Random(seed).shuffle(unseen)
        others.append(State.from_dict({**full, "stock": unseen + full["stock"][hidden:]}))
        assert others[-1].view() == seen.view()
    return others


@pytest.mark.parametrize(
    ("variant", "deal", "moves"),
    [("countess", 2, ["t0-t2", "draw", "draw"]), ("countess", 22, ["draw"]), ("barricade", 5, [])],
)
def test_K2_a_hint_tells_nothing_of_the_face_down_cards_order(variant, deal, moves) -> None:  # noqa: ANN001
    """RULES K2: the stock's order is hidden from every API, the hint's too. Positions that
    differ only in the order of their face-down cards get the same hint."""
    seen = replay(variant, deal, moves)
    budget = {"time_limit": None, "max_nodes": 3_000, "samples": 3, "seed": "7:0"}
    hints = {hint(other, **budget) for other in _orders_of_the_face_down_cards(seen, 4)}
    assert len(hints) == 1 and hints <= set(seen.legal_moves())


def test_K2_a_search_that_sees_the_stock_would_tell_its_order() -> None:
    """Why the hint does not search the true position: here, the best line's first move
    depends on the order of the face-down cards (Countess deal 2 after three moves)."""
    seen = replay("countess", 2, ["t0-t2", "draw", "draw"])
    firsts = {
        solve(other, time_limit=None, max_nodes=3_000).line[0]
        for other in _orders_of_the_face_down_cards(seen, 6)
    }
    assert firsts == {"waste-t3", "draw"}


# Deterministic searches for the hint tests: a node budget, not a time limit.
NODES = {"time_limit": None, "max_nodes": 20_000}


def _follow_hints(state: State, moves: int, *, avoid_the_path: bool) -> tuple[State, list[State]]:
    """Play up to `moves` hints from `state`; the final position and the positions before it."""
    path: list[State] = []
    while state.status != "won" and len(path) < moves:
        move = hint(state, **NODES, avoid=set(path) if avoid_the_path else frozenset())
        if move is None:
            break
        path.append(state)
        state = state.apply(move)
    return state, path


def test_hints_searched_afresh_can_go_round_in_a_circle() -> None:
    """Why a hint is told where the game has been: two positions can each win by a line
    through the other, and a search from each then starts with the move to the other.
    Portuguese deal 1 after t0-t2: hints from the position alone move one card back and forth."""
    state, path = _follow_hints(new_game("portuguese", 1).apply("t0-t2"), 60, avoid_the_path=False)
    assert state.status == "playing" and len(set(path)) < len(path) - 20


def test_hints_told_the_path_never_lead_back_and_win() -> None:
    start = new_game("portuguese", 1).apply("t0-t2")
    state, path = _follow_hints(start, 200, avoid_the_path=True)
    assert state.status == "won"
    assert len(set(path)) == len(path)  # no position twice


def test_a_hint_never_leads_back_to_a_position_avoided() -> None:
    state = new_game("portuguese", 1).apply("t0-t2")
    for move in state.legal_moves():  # every move but one leads somewhere avoided
        avoided = {state.apply(m) for m in state.legal_moves() if m != move}
        assert hint(state, **NODES, avoid=avoided) == move


def test_no_hint_when_every_move_leads_back() -> None:
    state = new_game("portuguese", 1).apply("t0-t2")
    everywhere = {state.apply(m) for m in state.legal_moves()}
    assert hint_line(state, **NODES, avoid=everywhere) == []


def test_a_hint_line_on_the_position_itself_is_whole_and_wins() -> None:
    state = new_game("spanish", 1)
    line = hint_line(state, **NODES)
    assert len(line) > 1 and replay_from(state, line).status == "won"


def test_a_hint_line_on_guessed_face_down_cards_is_its_first_move_alone() -> None:
    """RULES K2: the rest of a line searched on a guessed stock order would be played on the
    guess, not the game; only the first move, which the guesses vote for, is a hint."""
    state = new_game("countess", 2)
    assert state.hidden_count > 1
    budget = {"time_limit": None, "max_nodes": 3_000, "samples": 3, "seed": "1:0"}
    assert hint_line(state, **budget) == [hint(state, **budget)]


def test_hint_is_none_without_legal_moves() -> None:
    st = position("portuguese", {0: "AS 3S 2S", 1: "4S"}, CLUBS_HEARTS_DIAMONDS_HOME)
    # 4S cannot move (no 5), 2S cannot move (3S is under it): stuck.
    assert st.legal_moves() == []
    assert hint(st) is None


def test_solve_result_shape() -> None:
    r = solve(new_game("spanish", 2), time_limit=5)
    assert isinstance(r, SolveResult)
    assert r.nodes > 0 and r.seconds >= 0
    assert r.line and all(isinstance(m, str) for m in r.line)


def replay_from(state: State, line: list[str]) -> State:
    for m in line:
        state = state.apply(m)
    return state


def test_a_line_the_engine_rejects_is_never_certified(monkeypatch: pytest.MonkeyPatch) -> None:
    import games.engine.solver as solver_pkg
    from games.engine.solver._common import Outcome

    # A search bug: claims a win with a line that does not win.
    bogus = Outcome(won=True, exhausted=True, line=[("t0", "t2")], best=52, nodes=1)
    monkeypatch.setattr(solver_pkg, "_search", lambda pos, budget: bogus)
    r = solve(new_game("portuguese", 1), time_limit=1)
    assert r.outcome == "unknown" and r.line == [] and not r.par_proven


# ---------------------------------------------------------------- soundness against brute force
def _random_endgame(variant: str, rng: random.Random, left: int) -> State:
    """A random position of ``variant`` with ``left`` cards still out, the rest home."""
    v = VARIANTS[variant]
    slots = [s for _ in range(v.decks) for s in v.suits]
    heights = [13] * len(slots)
    while sum(13 - h for h in heights) < left:
        i = rng.randrange(len(slots))
        heights[i] = max(0, heights[i] - 1)
    out = [RANKS[r] + s for s, h in zip(slots, heights, strict=True) for r in range(h, 13)]
    rng.shuffle(out)
    cut = rng.randint(1, len(out))
    tab: list[list[str]] = [[] for _ in range(v.tableau_piles)]
    used = rng.randint(1, v.tableau_piles)
    for c in out[:cut]:
        tab[rng.randrange(used)].append(c)
    fnd = [run(s, 1, h) for s, h in zip(slots, heights, strict=True)]
    return State.from_dict(
        {
            "variant": variant,
            "deal": 0,
            "moves": 0,
            "tableau": tab,
            "foundations": fnd + [[] for _ in range(v.foundations - len(fnd))],
            "cells": [],
            "stock": out[cut:],
            "waste": [],
        }
    )


def _most_home(state: State, cap: int = 20000, key=lambda s: s) -> int | None:  # noqa: ANN001
    """The most cards home over every reachable position (engine moves only), or None if more
    than `cap` positions; positions with the same `key` count once."""
    seen = {key(state)}
    todo = [state]
    best = state.foundation_count
    while todo:
        s = todo.pop()
        best = max(best, s.foundation_count)
        for _, t in s.successors():
            k = key(t)
            if k not in seen:
                seen.add(k)
                todo.append(t)
        if len(seen) > cap:
            return None
    return best


@pytest.mark.parametrize("variant", ["countess", "barricade"])
def test_proven_pars_match_a_brute_force_search(variant: str) -> None:
    rng = random.Random(20240)
    checked = 0
    for _ in range(40):
        st = _random_endgame(variant, rng, 12)
        r = solve(st, time_limit=None, max_nodes=200_000)  # a node budget: same on any machine
        if not r.par_proven:
            continue
        truth = _most_home(st)
        if truth is None:
            continue
        checked += 1
        assert r.par == truth, st.to_dict()
    assert checked >= 10


def test_barricade_par_counts_a_stock_card_laid_on_a_pile_before_it_goes_home() -> None:
    """The relaxed game's bound (`_pool_bound`) sent the stock's JS home at once and so never
    counted it as a pile top: TD, which only a jack takes, and every diamond under it looked
    out of reach, and the search proved this won endgame lost at 99. The real line lays JS on
    QS, TD on it, and so on."""
    from tests.engine.engine_helpers import pos

    st = pos(
        "barricade",
        {1: "KS", 5: "KD KH", 8: "8D", 10: "7D", 11: "QS"},
        foundations={0: "JH", 1: "KS", 2: "KH", 3: "KC", 4: "KC", 5: "TS", 6: "KD", 7: "6D"},
        stock="JD 9D QD TD QH JS",
    )
    won = "t10-f7 t8-f7 stock-t11 stock-t1 stock-t11 stock-t5 stock-f7 t11-f7 stock-f7 t5-f7"
    end = st
    for move in (won + " t1-f0 t5-f0 t5-f7 t11-f5 t11-f5 t1-f5").split():
        end = end.apply(move)
    assert end.status == "won"
    r = solve(st, time_limit=None, max_nodes=1_000_000)
    assert (r.outcome, r.par, r.par_proven) == ("won", 104, True)


# ---------------------------------------------------------------- the Portuguese dead-end rule
def run_str(suit: str, lo: int, hi: int) -> str:
    """``run`` as a pile string, highest card first (at the bottom): "KS QS ... 4S"."""
    return " ".join(reversed(run(suit, lo, hi)))


def _piles_of(state: State) -> tuple[list[str], list[int]]:
    """A state's tableau and foundation heights as the build-down search keeps them."""
    from games.engine.solver import position_of
    from games.engine.solver._common import encode

    pos = position_of(state)
    found = [0, 0, 0, 0]
    for f in pos.foundations:
        if f:
            found[ord(encode(f[-1])) & 3] = len(f)
    return ["".join(encode(c) for c in p) for p in pos.tableau], found


def test_dead_end_proves_a_card_frozen_over_its_own_suit() -> None:
    from games.engine.solver._builddown import _dead_end

    # 2S covers AS and its only possible bases, 3S (beneath it) and three 3s already home.
    st = position("portuguese", {0: "AS 3S 2S", 1: run_str("S", 4, 13)}, CLUBS_HEARTS_DIAMONDS_HOME)
    piles, found = _piles_of(st)
    assert _dead_end(piles, found, True) == 39  # no spade can ever go home
    # One 3 of another suit that can come free is enough for the rule to let 2S move.
    st = position(
        "portuguese",
        {0: "AS 3S 2S", 1: run_str("S", 4, 13), 2: run_str("H", 4, 13) + " 3H"},
        {1: "2H", 2: "KD", 3: "KC"},
    )
    piles, found = _piles_of(st)
    assert _dead_end(piles, found, True) == -1


def test_dead_end_knows_any_card_fills_an_empty_pile_in_spanish() -> None:
    from games.engine.solver._builddown import _dead_end

    # JS tops t1 and its only base, QS, is at the bottom of t1: no spade but AS (once KS has
    # gone to an empty pile) can ever go home.
    layout = {0: "AS KS", 1: "QS 2S 3S 4S 5S 6S 7S 8S 9S TS JS"}
    st = position("portuguese", layout, CLUBS_HEARTS_DIAMONDS_HOME)
    piles, found = _piles_of(st)
    assert _dead_end(piles, found, True) == 40
    r = solve(st, time_limit=5)
    # Proven at the start: the par is not searched for (only won deals get certified).
    assert r.outcome == "lost" and r.par <= 40
    assert replay_from(st, r.line).foundation_count == r.par
    # In Spanish any card may go to an empty pile: JS..2S spread out, and the deal is won.
    st = position("spanish", layout, CLUBS_HEARTS_DIAMONDS_HOME)
    piles, found = _piles_of(st)
    assert _dead_end(piles, found, False) == -1
    r = solve(st, time_limit=5)
    assert r.outcome == "won" and replay_from(st, r.line).status == "won"


@pytest.mark.parametrize(
    ("variant", "deals"), [("portuguese", range(1, 26)), ("spanish", range(1, 11))]
)
def test_dead_end_never_fires_on_a_winning_line(variant: str, deals: range) -> None:
    """Every position of a winning line can be won, so the rule must let every one pass."""
    from games.engine.solver._builddown import _dead_end

    checked = 0
    for deal in deals:
        r = solve(new_game(variant, deal), time_limit=None, max_nodes=3000)
        if r.outcome != "won":
            continue
        st = new_game(variant, deal)
        for m in r.line:
            piles, found = _piles_of(st)
            assert _dead_end(piles, found, variant == "portuguese") == -1, (variant, deal, m)
            st = st.apply(m)
            checked += 1
    assert checked >= 50 * len(deals)


def _random_build_down_endgame(variant: str, rng: random.Random, left: int) -> State:
    """A random Portuguese/Spanish position with ``left`` cards out, all in a few piles."""
    heights = [13] * 4
    while sum(13 - h for h in heights) < left:
        i = rng.randrange(4)
        heights[i] = max(0, heights[i] - 1)
    suits = VARIANTS[variant].suits
    out = [RANKS[r] + s for s, h in zip(suits, heights, strict=True) for r in range(h, 13)]
    rng.shuffle(out)
    tab: list[list[str]] = [[] for _ in range(13)]
    used = rng.randint(2, 5)
    for c in out:
        tab[rng.randrange(used)].append(c)
    return State.from_dict(
        {
            "variant": variant,
            "deal": 0,
            "moves": 0,
            "tableau": tab,
            "foundations": [run(s, 1, h) for s, h in zip(suits, heights, strict=True)],
            "cells": [],
            "stock": [],
            "waste": [],
        }
    )


def _most_home_any_pile_order(state: State, cap: int = 50000) -> int | None:
    """``_most_home`` for the single-deck build-down games, whose piles are interchangeable:
    positions that differ only in pile order count once (engine moves only still). The key
    reads the piles' card codes as the engine holds them: through `to_dict` this search took
    four times as long, the suite's slowest test."""

    def key(s: State) -> tuple:
        return tuple(sorted(s._tab)), s.foundation_count

    return _most_home(state, cap, key)


@pytest.mark.parametrize(
    ("variant", "positions", "left", "min_lost"), [("portuguese", 60, 8, 3), ("spanish", 12, 7, 0)]
)
def test_build_down_verdicts_match_a_brute_force_search(
    variant: str, positions: int, left: int, min_lost: int
) -> None:
    """Won and lost verdicts (proofs by the dead-end rule included) against every line."""
    rng = random.Random(7)
    verdicts = {"won": 0, "lost": 0}
    for _ in range(positions):
        st = _random_build_down_endgame(variant, rng, left)
        truth = _most_home_any_pile_order(st)
        assert truth is not None
        r = solve(st, time_limit=None, max_nodes=200_000)  # a node budget: same on any machine
        assert r.outcome == ("won" if truth == 52 else "lost"), st.to_dict()
        if r.par_proven:
            assert r.par == truth, st.to_dict()
        verdicts[r.outcome] += 1
    assert verdicts["won"] >= 5 and verdicts["lost"] >= min_lost, verdicts
