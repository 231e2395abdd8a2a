"""The public API of docs/engine-contract.md: notation, identity, views, errors."""

from __future__ import annotations

import copy
import doctest
import json
import pickle

import pytest
from engine_helpers import pos, refused

import games.engine
from games.engine import VARIANTS, EngineError, State, Variant, deal_layout, new_game, replay
from games.engine import cards as cards_mod
from games.engine import errors as errors_mod
from games.engine import moves as moves_mod
from games.engine import state as state_mod
from games.engine.moves import PARSED, format_move, parse_move


def test_variants_registry_in_contract_order() -> None:
    assert list(VARIANTS) == ["portuguese", "spanish", "countess", "barricade", "chinese_freecell"]
    for vid, v in VARIANTS.items():
        assert isinstance(v, Variant) and v.id == vid
        assert v.cards == 52 * v.decks * len(v.suits) // 4
        assert v.rules and all(isinstance(r, str) and r for r in v.rules) and v.summary
        with pytest.raises(AttributeError):
            v.name = "x"  # type: ignore[misc]
    assert [v.foundations for v in VARIANTS.values()] == [4, 4, 4, 8, 6]


def test_doctests() -> None:
    for mod in (games.engine, cards_mod, errors_mod, moves_mod, state_mod):
        result = doctest.testmod(mod)
        assert result.failed == 0 and result.attempted > 0, mod.__name__


def test_notation_round_trips() -> None:
    for text, mv in PARSED.items():
        assert format_move(parse_move(text)) == text and parse_move(text) == mv
    for bad in (
        "t2-t7:1",  # one card has no count: only N >= 2 is written (PROTOCOL.md)
        "",
        "t3",
        "t3-",
        "-f0",
        "t3_f0",
        "T3-F0",
        "t3-f0 ",
        " t3-f0",
        "t03-f0",
        "t3-f0:0",
        "t3-f0:01",
        "t3-f0:",
        "draw ",
        "Draw",
        "stock-",
        "t-1-f0",
        "t3-f0:2:3",
        "t100-f0",
        "x" * 1000,
        "undo",
    ):
        with pytest.raises(EngineError) as e:
            parse_move(bad)
        assert e.value.code == "bad_move"
    for not_str in (None, 3, ["t0-f0"], b"t0-f0"):
        with pytest.raises(EngineError) as e:
            new_game("portuguese", 1).apply(not_str)  # type: ignore[arg-type]
        assert e.value.code == "bad_move"


def test_unknown_piles_are_bad_moves() -> None:
    cases = {
        "portuguese": ["t13-t0", "t0-f4", "c0-t1", "t0-c0", "stock-t0", "waste-t0"],
        "countess": ["t4-t0", "t0-c0", "t0-f4"],
        "barricade": ["t12-f0", "t0-f8", "waste-t0", "c0-t0"],
        "chinese_freecell": ["t11-t0", "c4-t0", "t0-f6", "stock-t0", "waste-f0"],
    }
    for variant, moves in cases.items():
        s = new_game(variant, 1)
        for m in moves:
            e = refused(s, m)
            assert e.code == "bad_move", (variant, m)
            assert "unknown pile" in e.message


def test_illegal_messages_name_the_rule() -> None:
    s = pos("portuguese", {0: "QH", 1: "9C", 2: "AS"}, foundations={0: "3D"})
    assert refused(s, "t0-t3").message == "Only a King may move to an empty pile (P4)"
    assert "P2" in refused(s, "t1-t0").message
    assert "C3" in refused(s, "t1-f0").message
    assert "C3" in refused(s, "f0-t1").message
    assert "empty" in refused(s, "t5-t0").message
    assert refused(s, "t0-t0").code == "illegal_move"
    assert refused(s, "draw").code == "illegal_move"


def test_state_equality_ignores_history_and_transpositions_match() -> None:
    s = pos("portuguese", {0: "9C", 1: "8H", 2: "TD", 3: "7S"})
    a = s.apply("t1-t0").apply("t3-t0")  # 8H then 7S onto 9C
    b = s.apply("t1-t0").apply("t3-t0")
    assert a == b and a is not b
    c = pos("portuguese", {0: "9C 8H 7S", 2: "TD"}, moves=9)
    assert a == c and hash(a) == hash(c) and a.moves != c.moves
    assert len({a, b, c, s}) == 2
    assert s != pos("spanish", {0: "9C", 1: "8H", 2: "TD", 3: "7S"})
    assert (s == "x") is False


def test_state_is_immutable() -> None:
    s = new_game("barricade", 2)
    for attr in ("variant", "deal", "moves", "last_move", "status", "foundation_count"):
        with pytest.raises(AttributeError):
            setattr(s, attr, 1)
    with pytest.raises(AttributeError):
        s.extra = 1  # type: ignore[attr-defined]
    with pytest.raises(TypeError):
        State()
    d = s.to_dict()
    d["tableau"][0].append("AS")
    assert s.to_dict() != d
    legal = s.legal_moves()
    legal.clear()
    assert s.legal_moves()
    assert copy.deepcopy(s) is s


def test_pickle_keeps_history() -> None:
    s = new_game("chinese_freecell", 9)
    for _ in range(30):
        s = s.apply(s.legal_moves()[-1])
    t = pickle.loads(pickle.dumps(s))
    assert t == s and t.moves == 30 and t.deal == 9 and t.last_move == s.last_move
    assert t.undo() == s.undo()


def test_detached_keeps_the_position_and_drops_the_history() -> None:
    s = new_game("spanish", 7)
    for _ in range(5):
        s = s.apply(s.legal_moves()[0])
    d = s.detached()
    assert d == s and d.view() == s.view() and d.to_dict() == s.to_dict()
    assert d.legal_moves() == s.legal_moves() and d.last_move == s.last_move
    assert d.parent is None and s.parent is not None
    with pytest.raises(EngineError):
        d.undo()
    assert d.detached() is d  # nothing left to drop
    after = d.apply(d.legal_moves()[0])
    assert after.parent is d


def test_view_shape_matches_protocol() -> None:
    v = new_game("countess", 1).view()
    assert list(v) == [
        "variant",
        "tableau",
        "foundations",
        "cells",
        "stock",
        "waste",
        "status",
        "moves",
        "legal_moves",
    ]
    assert "deal" not in v  # a daily deal number would reveal the hidden cards
    json.dumps(v)
    c = new_game("chinese_freecell", 1).view()
    assert c["cells"] == [None] * 4 and c["stock"] == {"count": 0, "top": None}


def test_replay_and_deal_layout() -> None:
    s = new_game("spanish", 5)
    moves = []
    for _ in range(10):
        m = s.legal_moves()[0]
        moves.append(m)
        s = s.apply(m)
    assert replay("spanish", 5, moves) == s
    assert replay("spanish", 5, [*moves, "undo", "undo"]) == s.undo().undo()
    assert replay("spanish", 5, []) == new_game("spanish", 5)
    assert deal_layout("spanish", 5) == new_game("spanish", 5).to_dict()
    with pytest.raises(EngineError) as e:
        replay("spanish", 5, ["undo"])
    assert e.value.code == "illegal_move"
    with pytest.raises(EngineError) as e:
        replay("spanish", 5, [moves[0], "t0-q9"])
    assert e.value.code == "bad_move"


def test_from_dict_rejects_impossible_positions() -> None:
    good = deal_layout("portuguese", 1)
    for mutate in (
        lambda d: d.update(variant="nope"),
        lambda d: d["tableau"].pop(),
        lambda d: d["tableau"][0].append("ZZ"),
        lambda d: d["tableau"][0].append("JD"),  # a second JD in one deck
        lambda d: d.update(foundations=[["2C"], [], [], []]),
        lambda d: d.update(foundations=[["AC", "3C"], [], [], []]),
        lambda d: d.update(cells=[None]),
        lambda d: d.update(stock=["AS"]),
    ):
        d = json.loads(json.dumps(good))
        mutate(d)
        with pytest.raises((ValueError, EngineError)):
            State.from_dict(d)


def test_successors_and_render() -> None:
    s = new_game("barricade", 3)
    succ = s.successors()
    assert [m for m, _ in succ] == s.legal_moves()
    assert all(t == s.apply(m) for m, t in succ)
    text = s.render()
    assert "Barricade A" in text and "t11" in text
    stock = s.to_dict()["stock"]
    assert stock[-1] in text and s.render(reveal=True).count(" ") > text.count(" ")


def test_revealed_marks_the_moves_that_turned_a_card_up() -> None:
    """A ranked game refuses to undo these (services.undo): a draw, and a play from Barricade
    A's stock when a card shows beneath; not a play of its last card, nor a tableau move."""
    countess = new_game("countess", 1)
    drawn = countess.apply("draw")
    assert drawn.revealed and drawn.hidden_count == countess.hidden_count - 1
    assert not countess.revealed  # the deal: no last move
    stock = pos("barricade", {0: "3H"}, foundations={0: "2H"}, stock="5C 3H")
    assert stock.hidden_count == 1  # the top, 3H, is face up
    assert stock.apply("stock-f0").revealed
    assert not stock.apply("t0-f0").revealed
    assert not pos("barricade", foundations={0: "2H"}, stock="3H").apply("stock-f0").revealed
