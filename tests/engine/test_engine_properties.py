"""Properties that must hold in every position of every variant (hypothesis)."""

from __future__ import annotations

import json
import random
from collections import Counter
from functools import cache

from engine_helpers import all_cards, full_deck, view_cards, well_formed_moves
from hypothesis import given, settings
from hypothesis import strategies as st

from games.engine import VARIANTS, EngineError, State, new_game, replay

variants = st.sampled_from(list(VARIANTS))
deals = st.one_of(st.integers(1, 32000), st.integers(32001, 10**12))


@cache
def _well_formed(variant: str) -> frozenset[str]:
    # Sequence counts up to 99 are notation; the engine never generates them.
    return frozenset(well_formed_moves(variant, max_n=99))


def playout(variant: str, deal: int, seed: int, steps: int) -> list[State]:
    """A random game as the list of its states (start first)."""
    rnd = random.Random(seed)
    s = new_game(variant, deal)
    states = [s]
    for _ in range(steps):
        legal = s.legal_moves()
        if not legal:
            break
        s = s.apply(rnd.choice(legal))
        states.append(s)
    return states


def visible(state: State) -> Counter[str]:
    """The cards a player may see: everything but the face-down stock."""
    d = state.to_dict()
    c = all_cards(d)
    hidden = d["stock"][:-1] if state.spec.stock_playable else d["stock"]
    c.subtract(hidden)
    return +c


GAME = dict(variant=variants, deal=deals, seed=st.integers(0, 2**32), steps=st.integers(0, 120))


@settings(max_examples=60, deadline=None)
@given(**GAME)
def test_cards_are_conserved(variant: str, deal: int, seed: int, steps: int) -> None:
    deck = full_deck(variant)
    for s in playout(variant, deal, seed, steps):
        assert all_cards(s.to_dict()) == deck


@settings(max_examples=40, deadline=None)
@given(**GAME)
def test_every_legal_move_applies_and_undoes(
    variant: str, deal: int, seed: int, steps: int
) -> None:
    for s in playout(variant, deal, seed, steps)[::7]:
        legal = s.legal_moves()
        assert len(legal) == len(set(legal))  # distinct
        assert legal == s.legal_moves()  # deterministic
        assert (s.status == "playing") == bool(legal)
        for m in legal:
            t = s.apply(m)
            assert t.moves == s.moves + 1 and t.last_move == m
            assert t.undo() is s
            assert t.foundation_count in (s.foundation_count, s.foundation_count + 1)


@settings(max_examples=40, deadline=None)
@given(**GAME, picks=st.lists(st.integers(0, 10**9), min_size=20, max_size=20))
def test_well_formed_moves_not_legal_are_refused_as_illegal(
    variant: str, deal: int, seed: int, steps: int, picks: list[int]
) -> None:
    candidates = well_formed_moves(variant, max_n=13)
    for s in playout(variant, deal, seed, steps)[::10]:
        legal = set(s.legal_moves())
        for p in picks:
            m = candidates[p % len(candidates)]
            if m in legal:
                continue
            try:
                s.apply(m)
            except EngineError as e:
                assert e.code == "illegal_move", (m, e)
                assert e.message and len(e.message) > 10
            else:
                raise AssertionError(f"{m} accepted though not in legal_moves()")


@settings(max_examples=200, deadline=None)
@given(
    variant=variants,
    text=st.one_of(
        st.text(max_size=12),
        st.from_regex(r"[tfcsdrawkeo0-9:\- ]{1,12}", fullmatch=True),
        st.binary(max_size=6).map(repr),
    ),
)
def test_garbage_is_refused_as_bad_move(variant: str, text: str) -> None:
    s = new_game(variant, 3)
    ok = _well_formed(variant)
    try:
        s.apply(text)
    except EngineError as e:
        expected = "illegal_move" if text in ok else "bad_move"
        assert e.code == expected, (text, e)
    else:
        assert text in ok


@settings(max_examples=40, deadline=None)
@given(variant=variants, deal=deals, seed=st.integers(0, 2**32))
def test_mutated_legal_moves_are_bad_or_illegal(variant: str, deal: int, seed: int) -> None:
    rnd = random.Random(seed)
    states = playout(variant, deal, seed, 40)
    ok = _well_formed(variant)
    for s in states[::5]:
        for m in s.legal_moves():
            i = rnd.randrange(len(m) + 1)
            mutated = m[:i] + rnd.choice("tfc0123456789-:x ") + m[i + 1 :]
            try:
                s.apply(mutated)
            except EngineError as e:
                assert e.code == ("illegal_move" if mutated in ok else "bad_move"), (mutated, e)
            else:
                assert mutated in ok


@settings(max_examples=40, deadline=None)
@given(**GAME, undo_rate=st.floats(0, 0.4))
def test_replay_with_undos_reproduces_the_state(
    variant: str, deal: int, seed: int, steps: int, undo_rate: float
) -> None:
    rnd = random.Random(seed)
    s = new_game(variant, deal)
    history: list[str] = []
    for _ in range(steps):
        legal = s.legal_moves()
        if s.moves and rnd.random() < undo_rate:
            s = s.undo()
            history.append("undo")
        elif legal:
            m = rnd.choice(legal)
            s = s.apply(m)
            history.append(m)
    r = replay(variant, deal, history)
    assert r == s and r.to_dict() == s.to_dict() and r.moves == s.moves
    assert r.last_move == s.last_move


@settings(max_examples=60, deadline=None)
@given(**GAME)
def test_view_never_shows_a_face_down_card(variant: str, deal: int, seed: int, steps: int) -> None:
    for s in playout(variant, deal, seed, steps)[::3]:
        view = s.view()
        assert set(view) == {
            "variant",
            "tableau",
            "foundations",
            "cells",
            "stock",
            "waste",
            "status",
            "moves",
            "legal_moves",
        }
        # Exactly the visible cards, each as often as it is visible.
        assert view_cards(view) == visible(s)
        stock = s.to_dict()["stock"]
        assert view["stock"]["count"] == len(stock)
        if variant == "barricade":
            assert view["stock"]["top"] == (stock[-1] if stock else None)
        else:
            assert view["stock"]["top"] is None
        if variant == "countess":
            text = json.dumps(view) + s.render()
            assert not any(c in text for c in stock)


@settings(max_examples=60, deadline=None)
@given(**GAME)
def test_to_dict_from_dict_round_trip(variant: str, deal: int, seed: int, steps: int) -> None:
    for s in playout(variant, deal, seed, steps)[::4]:
        d = json.loads(json.dumps(s.to_dict()))
        assert set(d) == {
            "variant",
            "deal",
            "moves",
            "tableau",
            "foundations",
            "cells",
            "stock",
            "waste",
        }
        t = State.from_dict(d)
        assert t == s and hash(t) == hash(s) and t.to_dict() == s.to_dict()
        assert t.moves == s.moves and t.deal == s.deal
        assert t.legal_moves() == s.legal_moves() and t.status == s.status


@settings(max_examples=40, deadline=None)
@given(**GAME)
def test_taking_a_move_back_without_history_gives_the_position_before_it(
    variant: str, deal: int, seed: int, steps: int
) -> None:
    """`before`, the server's undo, from a position rebuilt as the server stores it (no parent):
    the same position and move count as the history's own undo, for every legal move."""
    for s in playout(variant, deal, seed, steps)[::5]:
        for m in s.legal_moves():
            t = State.from_dict(s.apply(m).to_dict())
            back = t.before(m)
            assert back == s and back.to_dict() == s.to_dict()
            assert back.legal_moves() == s.legal_moves() and back.hidden_count == s.hidden_count


@settings(max_examples=30, deadline=None)
@given(**GAME, picks=st.lists(st.integers(0, 10**9), min_size=30, max_size=30))
def test_taking_back_a_move_that_did_not_make_the_position_is_refused(
    variant: str, deal: int, seed: int, steps: int, picks: list[int]
) -> None:
    """Any other move named is refused, or names a position it really comes from: never one
    with a card lost, doubled or out of place."""
    states = playout(variant, deal, seed, steps)
    t = State.from_dict(states[-1].to_dict())
    forms = sorted(_well_formed(variant))
    for pick in picks:
        m = forms[pick % len(forms)]
        try:
            back = t.before(m)
        except EngineError as e:
            assert e.code == "illegal_move"
        else:
            assert back.apply(m) == t and all_cards(back.to_dict()) == full_deck(variant)
    if len(states) == 1:  # the deal: nothing to take back
        for m in forms[:50]:
            try:
                t.before(m)
            except EngineError:
                continue
            raise AssertionError(f"{m} taken back at the deal")


@settings(max_examples=40, deadline=None)
@given(**GAME)
def test_undo_returns_the_previous_state(variant: str, deal: int, seed: int, steps: int) -> None:
    states = playout(variant, deal, seed, steps)
    s = states[-1]
    for prev in reversed(states[:-1]):
        s = s.undo()
        assert s is prev and s.to_dict() == prev.to_dict()
    assert s.moves == 0
    try:
        s.undo()
    except EngineError as e:
        assert e.code == "illegal_move"
    else:
        raise AssertionError("undo at the deal accepted")


@settings(max_examples=40, deadline=None)
@given(**GAME)
def test_shared_views_say_what_fresh_ones_say(
    variant: str, deal: int, seed: int, steps: int
) -> None:
    """`shared=True` reuses the piles' card codes from the position before (the server's
    path): along a game, what it writes is what a position rebuilt from scratch writes."""
    states = playout(variant, deal, seed, steps)
    for s in states:
        fresh = State.from_dict(s.to_dict())  # no parent: its codes are worked out anew
        assert json.dumps(s.to_dict(shared=True)) == json.dumps(fresh.to_dict())
        assert json.dumps(s.view(shared=True)) == json.dumps(fresh.view())
    back = states[-1]  # and after undoing, the position before's codes again
    while back.parent is not None:
        back = back.undo()
        assert back.view(shared=True)["tableau"] == tuple_piles(back.to_dict()["tableau"])


def tuple_piles(piles: list[list[str]]) -> list[tuple[str, ...]]:
    return [tuple(p) for p in piles]
