"""The writes. Each public function is one transaction; a move is applied here and nowhere else.

`play_move`, `undo` and `resign` lock the game row (`select_for_update`) so two sockets of one
owner, or a socket and a REST call, cannot fork a game; the version check makes a resent move
harmless (it fails with `stale_version` instead of being applied twice).
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from games import clock, engine
from games.models import VARIANT_IDS, DailyChallenge, Deal, Game, Move
from server.errors import AppError

UNDO = "undo"
_STATE_FIELD = Game._meta.get_field("state")
_LOCK_SQL = (
    f"SELECT g.*, d.variant AS deal_variant, d.number AS deal_number, dc.date AS daily_date "
    f"FROM {Game._meta.db_table} g JOIN {Deal._meta.db_table} d ON d.id = g.deal_id "
    f"LEFT JOIN {DailyChallenge._meta.db_table} dc ON dc.id = g.daily_id WHERE g.id = %s"
)
MAX_DEAL = 2**31 - 1


@dataclass
class Outcome:
    """What a write did: the game after it, and what to tell the players."""

    game: Game
    state: engine.State | None = None
    move: str | None = None
    finished: bool = False
    events: list[dict[str, Any]] = field(default_factory=list)


def _engine_call(fn, *args):  # noqa: ANN001, ANN202
    try:
        return fn(*args)
    except engine.EngineError as exc:
        raise AppError(exc.code, exc.message) from exc


def check_variant(variant: str) -> str:
    if variant not in VARIANT_IDS:
        raise AppError(
            "unknown_variant",
            f"Unknown variant '{variant}'. Try one of: " + ", ".join(VARIANT_IDS) + ".",
        )
    return variant


def get_deal(variant: str, number: int) -> Deal:
    check_variant(variant)
    if not 1 <= number <= MAX_DEAL:
        raise AppError("bad_deal", f"A deal number is between 1 and {MAX_DEAL}.")
    deal, _ = Deal.objects.get_or_create(variant=variant, number=number)
    return deal


def start_game(user, deal: Deal, daily: DailyChallenge | None = None, ranked: bool = False) -> Game:  # noqa: ANN001
    state = _engine_call(engine.new_game, deal.variant, deal.number)
    return Game.objects.create(
        owner=user,
        deal=deal,
        daily=daily,
        ranked=ranked,
        state=state.to_dict(),
        foundation_cards=state.foundation_count,
        status=state.status,
        finished_at=None if state.status == "playing" else timezone.now(),
    )


def start_practice(user, variant: str, number: int | None = None) -> Game:  # noqa: ANN001
    """A practice game on a chosen deal, or a random one."""
    check_variant(variant)
    if number is None:
        number = random.SystemRandom().randint(1, 1_000_000)
    with transaction.atomic():
        return start_game(user, get_deal(variant, number))


@contextmanager
def locked_game(game_id: int, user) -> Iterator[Game]:  # noqa: ANN001
    """The owner's game, row-locked for one transaction; errors carry the current version."""
    with transaction.atomic():
        game = _lock(game_id, user)
        try:
            yield game
        except AppError as exc:
            exc.extra.setdefault("v", game.version)
            raise


def _lock(game_id: int, user) -> Game:  # noqa: ANN001
    """Read and lock the game row, with its deal and its day, in one statement.

    This is the hottest query of the server: a raw SELECT (the ORM still applies the column
    converters) costs about a quarter of the equivalent QuerySet with select_related.
    """
    sql = _LOCK_SQL + (" FOR UPDATE OF g" if connection.features.has_select_for_update else "")
    game = next(iter(Game.objects.raw(sql, [game_id])), None)
    if game is None:
        raise AppError("not_found", f"No game {game_id}.")
    if game.owner_id != user.id:
        raise AppError("forbidden", "Only the owner of this game can play it; you may watch.")
    game.deal = Deal(id=game.deal_id, variant=game.deal_variant, number=game.deal_number)
    if isinstance(game.daily_date, str):  # SQLite hands extra columns back as text
        game.daily_date = dt.date.fromisoformat(game.daily_date)
    return game


def _check_playable(game: Game, v: int | None) -> None:
    if game.finished:
        raise AppError("game_over", f"This game is over ({game.status}).")
    if game.ranked and game.daily_date < clock.today():
        raise AppError("game_over", "The day is over: your ranked attempt counts as it stands.")
    if v is not None and v != game.version:
        raise AppError(
            "stale_version",
            f"The game is at version {game.version}, not {v}: sync and try again.",
        )


_INSERT_MOVE = f"INSERT INTO {Move._meta.db_table} (game_id, n, move, at) VALUES (%s, %s, %s, %s)"
_UPDATE_GAME = (
    f"UPDATE {Game._meta.db_table} SET version = %s, state = %s, foundation_cards = %s, "
    "seconds = %s, last_move_at = %s, status = %s, finished_at = %s WHERE id = %s"
)


def _record(game: Game, state: engine.State, action: str) -> Outcome:
    """Append the Move row and save the new cached state: the second half of every write.

    Two plain statements instead of Model.save(): this runs once per move, and the ORM's
    query building cost more than the database work itself.
    """
    now = timezone.now()
    game.version += 1
    game.state = state.to_dict()
    game.foundation_cards = state.foundation_count
    game.last_move_at = now
    game.seconds = max(0, int((now - game.started_at).total_seconds()))
    finished = state.status != "playing"
    if finished:
        game.status = state.status
        game.finished_at = now
    ops = connection.ops
    at = ops.adapt_datetimefield_value(now)
    with connection.cursor() as cursor:
        cursor.execute(_INSERT_MOVE, [game.pk, game.version, action, at])
        cursor.execute(
            _UPDATE_GAME,
            [
                game.version,
                _STATE_FIELD.get_db_prep_save(game.state, connection),
                game.foundation_cards,
                game.seconds,
                at,
                game.status,
                ops.adapt_datetimefield_value(game.finished_at),
                game.pk,
            ],
        )
    if finished:
        _on_finish(game)
    return Outcome(game=game, state=state, move=action, finished=finished)


def _on_finish(game: Game) -> None:
    """A ranked attempt that ends updates its player's records and, once committed, its board."""
    if not game.ranked:
        return
    from games.leaderboards import publish_board
    from games.records import record_finished_attempt

    record_finished_attempt(game)
    daily = game.daily
    transaction.on_commit(lambda: publish_board(daily))


def play_move(game_id: int, user, move: str, v: int | None) -> Outcome:  # noqa: ANN001
    """Apply one move through the rules engine, or raise AppError and change nothing."""
    if not isinstance(move, str) or not move or len(move) > 16:
        raise AppError("bad_move", "A move is a short string such as 't3-f0' or 'draw'.")
    with locked_game(game_id, user) as game:
        _check_playable(game, v)
        state = _engine_call(engine.State.from_dict, game.state)
        new_state = _engine_call(state.apply, move)
        return _record(game, new_state, new_state.last_move or move)


def undo(game_id: int, user, v: int | None) -> Outcome:  # noqa: ANN001
    """Step back one move. The state is rebuilt by replaying the history, the source of truth.

    In a ranked attempt undoing a `draw` is refused: it would let the player peek at the stock.
    """
    with locked_game(game_id, user) as game:
        _check_playable(game, v)
        history = list(game.move_rows.order_by("n").values_list("move", flat=True))
        current = _engine_call(engine.replay, game.deal.variant, game.deal.number, history)
        if current.last_move is None:
            raise AppError("illegal_move", "There is no move to undo.")
        if game.ranked and current.last_move == "draw":
            raise AppError("illegal_move", "In a ranked game a draw cannot be undone.")
        return _record(game, _engine_call(current.undo), UNDO)


def resign(game_id: int, user) -> Outcome:  # noqa: ANN001
    with locked_game(game_id, user) as game:
        _check_playable(game, None)
        game.status = Game.Status.RESIGNED
        game.finished_at = timezone.now()
        game.save(update_fields=["status", "finished_at"])
        _on_finish(game)
        return Outcome(game=game, finished=True)


def create_unique(model, defaults: dict, **lookup) -> tuple[Any, bool]:  # noqa: ANN001
    """get_or_create that survives the race where two requests insert at once."""
    try:
        with transaction.atomic():
            return model.objects.get_or_create(defaults=defaults, **lookup)
    except IntegrityError:
        return model.objects.get(**lookup), False
