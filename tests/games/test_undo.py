"""Undo on the server: the last standing move taken back from the stored position, as a
replay of the whole history would, at a cost that does not grow with the game."""

from __future__ import annotations

import logging
import random

import pytest

from games import engine, services, state_cache
from games.models import Game
from games.services import MoveRequest
from server.errors import AppError

pytestmark = pytest.mark.django_db


def replayed(game_id: int) -> engine.State:
    game = Game.objects.select_related("deal").get(pk=game_id)
    return services._replayed(game)


def stored(game_id: int) -> dict:
    return Game.objects.get(pk=game_id).state


@pytest.mark.parametrize(
    ("variant", "deal"),
    [("spanish", 5), ("countess", 40001), ("chinese_freecell", 7), ("barricade", 3)],
)
def test_undo_after_any_mix_of_moves_and_undos_is_what_a_replay_gives(user, variant, deal, caplog):  # noqa: ANN001
    game = services.start_practice(user, variant, deal)
    rnd = random.Random(deal)
    undos = 0
    for v in range(120):
        state = engine.State.from_dict(stored(game.pk))
        legal = state.legal_moves()
        if state.moves and (not legal or rnd.random() < 0.35):
            services.undo(game.pk, user, v)
            undos += 1
        elif legal:
            services.play_move(game.pk, user, rnd.choice(legal), v)
        else:
            break
        assert stored(game.pk) == replayed(game.pk).to_dict()
    assert undos > 10
    assert "replaying" not in caplog.text  # every undo was taken back, none replayed


def test_undo_does_not_replay_the_history(user, monkeypatch):  # noqa: ANN001
    game = services.start_practice(user, "chinese_freecell", 7)
    state = engine.new_game("chinese_freecell", 7)
    first = state.legal_moves()[0]
    services.play_move(game.pk, user, first, 0)
    v = 1
    for _ in range(40):  # a long history, mostly moves taken back
        move = engine.State.from_dict(stored(game.pk)).legal_moves()[0]
        services.play_move(game.pk, user, move, v)
        services.undo(game.pk, user, v + 1)
        v += 2

    def no_replay(*args: object) -> None:
        raise AssertionError("undo replayed the history")

    monkeypatch.setattr(engine, "replay", no_replay)
    outcome = services.undo(game.pk, user, v)  # takes back `first`, under 80 rows
    assert outcome.game.version == v + 1
    assert stored(game.pk) == state.to_dict()
    with pytest.raises(AppError, match="no move to undo"):
        services.undo(game.pk, user, v + 1)


def test_a_stored_state_its_moves_do_not_make_is_replayed(user, caplog):  # noqa: ANN001
    game = services.start_practice(user, "spanish", 5)
    state = engine.new_game("spanish", 5)
    moves = []
    for i in range(3):
        moves.append(state.legal_moves()[-1])
        services.play_move(game.pk, user, moves[-1], i)
        state = state.apply(moves[-1])
    wrong = engine.new_game("spanish", 6).apply(engine.new_game("spanish", 6).legal_moves()[0])
    Game.objects.filter(pk=game.pk).update(state=wrong.to_dict())
    state_cache.states.entries.clear()
    with caplog.at_level(logging.ERROR, logger="games.services"):
        services.undo(game.pk, user, 3)
    assert "replaying" in caplog.text
    assert stored(game.pk) == engine.replay("spanish", 5, moves[:2]).to_dict()


def test_a_stored_state_replayed_in_a_batch_follows_the_batchs_own_undos(user, caplog):  # noqa: ANN001
    """The replay of a stored position its moves do not make takes in what the batch has
    played on the game so far: of two undos in one batch, the second finds the position wrong
    and lands where two undos of the true history land, not one. Here the stored position is
    the deal after the last move alone, so the first undo takes that move back cleanly."""
    m1, m2, m3 = "t0-t2", "t1-t2", "t3-t10"  # Portuguese deal 1; t3-t10 is legal at the deal
    game = services.start_practice(user, "portuguese", 1)
    for v, move in enumerate((m1, m2, m3)):
        services.play_move(game.pk, user, move, v)
    wrong = engine.new_game("portuguese", 1).apply(m3).to_dict() | {"moves": 3}
    Game.objects.filter(pk=game.pk).update(state=wrong)
    state_cache.states.entries.clear()
    undos = [MoveRequest(game.pk, user, services.UNDO_REQUEST, v) for v in (3, 4)]
    with caplog.at_level(logging.ERROR, logger="games.services"):
        results = services.play_moves(undos)
    assert "replaying" in caplog.text
    after_m1 = engine.replay("portuguese", 1, [m1]).to_dict()
    assert results[1].state.to_dict() == stored(game.pk) == after_m1


# Portuguese deal 1 is stuck after these five moves (found by random play).
STUCK_LINE = ["t0-t7", "t11-t6", "t2-t10", "t7-t3", "t1-t3"]


def stuck_practice(user) -> Game:  # noqa: ANN001
    game = services.start_practice(user, "portuguese", 1)
    for v, move in enumerate(STUCK_LINE):
        services.play_move(game.pk, user, move, v)
    game.refresh_from_db()
    assert game.status == "stuck" and game.finished_at is not None
    return game


def test_undo_takes_a_stuck_practice_game_back_into_play(user):  # noqa: ANN001
    """Practice is for trying another line: the move that left no move is taken back, and
    the game plays on, as a replay of its history says."""
    game = stuck_practice(user)
    outcome = services.undo(game.pk, user, 5)
    game.refresh_from_db()
    assert (game.status, game.finished_at, game.version) == ("playing", None, 6)
    assert outcome.state.legal_moves() and not outcome.finished
    assert stored(game.pk) == replayed(game.pk).to_dict()
    other = next(m for m in outcome.state.legal_moves() if m != STUCK_LINE[-1])
    services.play_move(game.pk, user, other, 6)  # and it plays on
    assert Game.objects.get(pk=game.pk).version == 7


def test_a_stale_undo_of_a_stuck_game_changes_nothing(user):  # noqa: ANN001
    game = stuck_practice(user)
    with pytest.raises(AppError) as info:
        services.undo(game.pk, user, 4)
    assert info.value.code == "stale_version"
    game.refresh_from_db()
    assert (game.status, game.version) == ("stuck", 5)


def test_a_resigned_or_won_game_stays_over(user):  # noqa: ANN001
    game = services.start_practice(user, "portuguese", 1)
    services.play_move(game.pk, user, STUCK_LINE[0], 0)
    services.resign(game.pk, user)
    with pytest.raises(AppError) as info:
        services.undo(game.pk, user, 1)
    assert info.value.code == "game_over"


# Each write commits, so its game is cached as it would be on a server (services.
# _cache_after_commit): an undo reads what the cached game knows.
_COMMITTED = pytest.mark.django_db(transaction=True)


def _count_history_reads(monkeypatch) -> list[int]:  # noqa: ANN001
    """Count the undos that read the game's history (services._standing_moves)."""
    reads: list[int] = []
    read = services._standing_moves

    def counted(game: Game, kept: int) -> tuple[tuple[str, ...], bool]:
        reads.append(game.version)
        return read(game, kept)

    monkeypatch.setattr(services, "_standing_moves", counted)
    return reads


def _play_first_legal(user, game: Game, moves: int) -> list[engine.State]:  # noqa: ANN001
    """Play `moves` moves, each the first legal one that leads to a position not reached
    before (so an undo that took back the wrong move could not land on the right position);
    the states from the deal on."""
    states = [engine.State.from_dict(stored(game.pk))]
    seen = {states[0]}
    for v in range(moves):
        move = next(m for m in states[-1].legal_moves() if states[-1].apply(m) not in seen)
        services.play_move(game.pk, user, move, v)
        states.append(engine.State.from_dict(stored(game.pk)))
        seen.add(states[-1])
    return states


def _undo_back_to_the_deal(user, game: Game, states: list[engine.State]) -> None:  # noqa: ANN001
    """Undo every move of `states`' line, one undo at a time: each lands on the position before
    the move it takes back, the stored state is what a replay gives, and one more is refused."""
    n = len(states) - 1
    for v in range(n, 2 * n):
        outcome = services.undo(game.pk, user, v)
        assert outcome.state.to_dict() == states[2 * n - 1 - v].to_dict()
        assert outcome.move == engine.UNDO
    with pytest.raises(AppError, match="no move to undo"):
        services.undo(game.pk, user, 2 * n)
    assert stored(game.pk) == replayed(game.pk).to_dict()


@_COMMITTED
def test_an_undo_of_a_game_played_here_from_its_deal_reads_no_history(user, monkeypatch):  # noqa: ANN001
    """The moves that stand travel with the cached game, so each undo knows what to take back
    as a move knows where it goes: no query of the history, on any path that writes it."""
    game = services.start_practice(user, "spanish", 5)
    states = _play_first_legal(user, game, 5)
    reads = _count_history_reads(monkeypatch)
    _undo_back_to_the_deal(user, game, states)
    assert reads == []


@_COMMITTED
def test_undos_past_the_moves_kept_in_memory_read_the_history_once_more(user, monkeypatch):  # noqa: ANN001
    """A cached game keeps its last STANDING_KEPT standing moves, then the newest 16: 40 moves
    leave 23 of them known (cut to 16 at the 33rd), and the 24th undo in a row reads the other
    17 (all there are, so the 41st undo is refused without reading again)."""
    assert services.STANDING_KEPT == 32
    game = services.start_practice(user, "chinese_freecell", 7)
    states = _play_first_legal(user, game, 40)
    reads = _count_history_reads(monkeypatch)
    _undo_back_to_the_deal(user, game, states)
    assert reads == [63]  # the 24th undo, on version 63


@_COMMITTED
def test_a_batch_with_more_undos_of_a_game_than_it_knows_reads_the_history_first(user):  # noqa: ANN001
    """Two sockets of one owner may each send an undo, on the versions one after the other, and
    both land in one batch. The history is read before the batch plays any of them, while it
    is still the game's: read after the first undo it would lack that undo, and the second
    would take back a move already taken back."""
    game = services.start_practice(user, "chinese_freecell", 7)
    states = _play_first_legal(user, game, 40)  # 23 standing moves known, 40 standing
    undos = [MoveRequest(game.pk, user, services.UNDO_REQUEST, v) for v in range(40, 65)]
    results = services.play_moves(undos)
    assert [r.game.version for r in results] == list(range(41, 66))
    assert [r.state.to_dict() for r in results] == [s.to_dict() for s in states[39:14:-1]]
    assert stored(game.pk) == replayed(game.pk).to_dict() == states[15].to_dict()


@_COMMITTED
def test_an_undo_of_a_game_loaded_mid_play_reads_its_history_then_knows_it(user, monkeypatch):  # noqa: ANN001
    """A game this process did not play from its deal (another process did, or it was evicted
    from the cache) knows no standing moves: its first undo reads them, the next ones do not."""
    game = services.start_practice(user, "spanish", 5)
    states = _play_first_legal(user, game, 6)
    state_cache.states.entries.clear()
    reads = _count_history_reads(monkeypatch)
    for v in range(6, 9):
        outcome = services.undo(game.pk, user, v)
        assert outcome.state.to_dict() == states[11 - v].to_dict()
    assert reads == [6]
    assert stored(game.pk) == replayed(game.pk).to_dict()


def test_the_word_undo_sent_as_a_move_is_not_an_undo(user):  # noqa: ANN001
    """PROTOCOL.md: undo is an action of its own, not a move string; a move frame (or POST
    .../moves) that says "undo" is refused, and nothing changes."""
    game = services.start_practice(user, "spanish", 5)
    _play_first_legal(user, game, 1)
    with pytest.raises(AppError) as info:
        services.play_move(game.pk, user, engine.UNDO, 1)
    assert info.value.code == "illegal_move"
    assert Game.objects.get(pk=game.pk).version == 1
