"""The writes. Each public function is one transaction; a move is applied here and nowhere else.

`play_move`, `undo` (a move like any other: `_apply_undo`) and `resign` lock the game row
(`select_for_update`) so two sockets of one owner, or a socket and a REST call, cannot fork a
game; the version check makes a resent move harmless (it fails with `stale_version` instead of
being applied twice). Socket moves and undos on PostgreSQL whose games this process has cached
skip the lock query: their write is itself the check (it updates a game only at the version
the batch started from; `play_moves_async`).
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import random
from collections import Counter
from collections.abc import Callable, Container, Iterable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

import orjson
import psycopg
from django.conf import settings
from django.db import connection, transaction
from django.db.models.base import ModelState
from django.db.models.signals import post_init, pre_init
from django.utils import timezone

from games import engine, state_cache
from games.engine.deal import MAX_SERVED_DEAL
from games.models import VARIANT_IDS, DailyChallenge, Deal, Game, Move
from server.errors import DATABASE_AWAY, AppError, log_failure
from server.stores import STORE_ERRORS

if TYPE_CHECKING:
    from accounts.models import User

log = logging.getLogger(__name__)

UNDO = engine.UNDO
_STATE_FIELD = Game._meta.get_field("state")
# Every column but the state, which comes as text and is decoded only if the cache misses.
_LOCKED_COLUMNS = ", ".join(
    f"g.{f.column}" for f in Game._meta.concrete_fields if f.name != "state"
)
_LOCK_JOINS = (
    f"JOIN {Deal._meta.db_table} d ON d.id = g.deal_id "
    f"LEFT JOIN {DailyChallenge._meta.db_table} dc ON dc.id = g.daily_id"
)
_LOCK_EXTRAS = "d.variant AS deal_variant, d.number AS deal_number, dc.date AS daily_date"
_LOCK_SQL = (
    f"SELECT {_LOCKED_COLUMNS}, CAST(g.state AS TEXT) AS state_json, {_LOCK_EXTRAS} "
    f"FROM {Game._meta.db_table} g {_LOCK_JOINS} WHERE g.id"
)
MAX_DEAL = MAX_SERVED_DEAL  # the engine deals up to 10^20; the API stops at 2^53 - 1
# The largest version a client may send, the largest signed 64-bit integer (what any client's
# JSON carries as a whole number): a larger one is no version at all, refused as malformed on
# both transports, not as stale, since no sync would mend it. A game's own version stays far
# below (GAME_MAX_MOVES), within its column's 32 bits.
MAX_VERSION = 2**63 - 1


@dataclass
class Outcome:
    """What a write did: the game after it, and what to tell the players."""

    game: Game
    state: engine.State | None = None
    move: str | None = None
    finished: bool = False
    events: list[dict[str, Any]] = field(default_factory=list)


def _engine_call(fn, *args):  # noqa: ANN001, ANN202
    """Engine errors as the API's: a string that is not a move at all (the engine's `bad_move`)
    is an `illegal_move` on the wire, as PROTOCOL.md names it, on REST as on WebSocket."""
    try:
        return fn(*args)
    except engine.EngineError as exc:
        code = "illegal_move" if exc.code == "bad_move" else exc.code
        raise AppError(code, exc.message) from exc


def _position(game: Game) -> engine.State:
    """The game's position: the engine's own when the state cache kept it, else decoded from
    the stored state (a game loaded from the database)."""
    return game.engine_state or _engine_call(engine.State.from_dict, game.state)


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


def start_game(
    user,  # noqa: ANN001
    deal: Deal,
    daily: DailyChallenge | None = None,
    ranked: bool = False,
    deal_chosen: bool = False,
) -> Game:
    state = _engine_call(engine.new_game, deal.variant, deal.number)
    return Game.objects.create(
        owner=user,
        deal=deal,
        daily=daily,
        ranked=ranked,
        deal_chosen=deal_chosen,
        state=state.to_dict(),
        foundation_cards=state.foundation_count,
        status=state.status,
        finished_at=None if state.status == "playing" else timezone.now(),
    )


# A random practice deal is one of the first million, an easy number to note and play again;
# where the variant deals a face-down stock, one of the whole range, as a daily's is: the cards
# a player sees would narrow a million numbers down to the one dealt, and so tell its stock.
RANDOM_PRACTICE_DEALS = 1_000_000


def start_practice(user: User, variant: str, number: int | None = None) -> Game:
    """A practice game on a chosen deal, or a random one."""
    check_variant(variant)
    chosen = number is not None
    if number is None:
        hidden = engine.VARIANTS[variant].stock
        number = random.SystemRandom().randint(1, MAX_DEAL if hidden else RANDOM_PRACTICE_DEALS)
    with transaction.atomic():
        return start_game(user, get_deal(variant, number), deal_chosen=chosen)


@contextmanager
def locked_game(game_id: int, user: User) -> Iterator[Game]:
    """The owner's game, row-locked for one transaction; errors carry the current version."""
    with transaction.atomic():
        game = _lock(game_id, user)
        try:
            yield game
        except AppError as exc:
            exc.extra.setdefault("v", game.version)
            raise


def _lock(game_id: int, user: User) -> Game:
    """Read and lock the owner's game row, with its deal and its day, in one statement."""
    game = _lock_many([game_id]).get(game_id)
    _check_owner(game, game_id, user)
    return game


def _lock_many(game_ids: list[int]) -> dict[int, Game]:
    """Lock the rows of `game_ids` (in id order, so concurrent writers cannot deadlock)."""
    cached = state_cache.states.entries_for(game_ids)
    return _prepared(_locked_rows(game_ids, cached), cached)


def _prepared(locked: Iterable[Game], cached: dict[int, state_cache.Entry]) -> dict[int, Game]:
    """Locked games by id, each with its state and its deal.

    The state comes from `cached` (the cache's entries when the lock was asked for) if the
    entry is of the locked version; only then may the lock query have left `state_json` out.
    """
    games = {}
    for game in locked:
        entry = cached.get(game.pk)
        if entry is None or entry[0] != game.version:
            game.state = json.loads(game.state_json)
            game.state_json = None  # decoded: a game kept in the cache need not keep its text
            game.engine_state = None
        else:
            game.engine_state, game.state = entry[1], entry[2]
            row = entry[3]
            if row is not None:
                game.standing, game.standing_whole = row.standing, row.standing_whole
        _DEAL_FIELD.set_cached_value(game, _deal(game.deal_id, game.deal_variant, game.deal_number))
        if isinstance(game.daily_date, str):  # SQLite hands extra columns back as text
            game.daily_date = dt.date.fromisoformat(game.daily_date)
        games[game.pk] = game
    return games


_DEAL_FIELD = Game._meta.get_field("deal")
_deals: dict[tuple[int, str, int], Deal] = {}
# Deals `_deal` keeps, about 350 bytes each (measured): 3.5 MB at most, beside the state
# cache's 5,000 games in play. A practice game gets a deal of its own, so a busy process
# meets a new deal with nearly every game it loads.
DEALS_KEPT = 10_000


def _deal(deal_id: int, variant: str, number: int) -> Deal:
    """The Deal of a locked game, made once per process: building a model instance (and
    assigning it through the descriptor) was a tenth of a move's CPU in a batch. Keyed by the
    whole row, not the id alone, so an id reused after a delete (tests) is a new deal."""
    key = (deal_id, variant, number)
    deal = _deals.get(key)
    if deal is None:
        if len(_deals) >= DEALS_KEPT:
            _deals.clear()
        deal = _deals[key] = Deal.from_db(None, ["id", "variant", "number"], key)
    return deal


_LOCKED_FIELDS = [f.attname for f in Game._meta.concrete_fields if f.name != "state"]
# Both batch statements on PostgreSQL (this one and _WRITE_BATCH_PG) name their games twice:
# in the rows they join (an array, a JSON document) and in `g.id = ANY(ids)`, a condition on
# `games_game` itself that its primary key answers. With the join alone the way to the games
# was left to estimates: the planner takes a set-returning function for 10 or 100 rows, and on
# a table of a few pages one read of all of it looked cheaper than that many index probes. A
# prepared statement's generic plan (the loop writer prepares both) is made once and kept until
# something invalidates it, such as an ANALYZE: made on a new database, it hashed a scan of the
# whole table, and kept doing so as the table grew, since no ANALYZE comes with autovacuum off
# (as on this project's machines). Each batch then read every game: bench/soak.py saw 380
# million rows read in 11 minutes, and the database's CPU per action grow from 275 to 714 µs.
# With the condition, every plan reaches the games through the index, at any size of the table
# (tests/games/test_pg_batch_paths.py, on a table of a few rows).
_LOCK_SQL_PG = (
    f"SELECT {_LOCKED_COLUMNS}, "
    "CASE WHEN g.version = c.v THEN NULL ELSE CAST(g.state AS TEXT) END AS state_json, "
    f"{_LOCK_EXTRAS} FROM unnest(%s::bigint[], %s::int[]) AS c(id, v) "
    f"JOIN {Game._meta.db_table} g ON g.id = c.id {_LOCK_JOINS} "
    "WHERE g.id = ANY(%s::bigint[]) ORDER BY g.id FOR UPDATE OF g"
)


def _lock_params(game_ids: list[int], cached: dict[int, state_cache.Entry]) -> list[list[int]]:
    """The parameters of _LOCK_SQL_PG: each game with the version whose state is cached here
    (-1 if none), then the games again (the index condition). The state of a game at that
    version stays in the database: it is most of a row, and turning it into text, sending it
    and decoding it was wasted on a cache hit."""
    return [game_ids, [cached[i][0] if i in cached else -1 for i in game_ids], game_ids]


def _locked_rows(game_ids: list[int], cached: dict[int, state_cache.Entry]) -> Iterator[Game]:
    """The games, each with its extra columns (state_json, deal_*, daily_date) as attributes.

    On PostgreSQL: psycopg's own cursor, one statement text for any number of games (the
    pipelined paths prepare it), the state left out where `cached` has it (`_lock_params`),
    and the rows straight into Game instances (`_games_from_pg_rows`). psycopg already
    returns Python values; the ORM's raw-query machinery (column mapping, converters, per
    query) was half of a lone move's CPU. Elsewhere the raw query, which applies SQLite's
    converters.
    """
    if connection.vendor != "postgresql":
        sql = f"{_LOCK_SQL} IN ({', '.join(['%s'] * len(game_ids))}) ORDER BY g.id"
        if connection.features.has_select_for_update:
            sql += " FOR UPDATE OF g"
        yield from Game.objects.raw(sql, game_ids)
        return
    with _pg_cursor() as cursor:
        cursor.execute(_LOCK_SQL_PG, _lock_params(game_ids, cached))
        rows = cursor.fetchall()
    yield from _games_from_pg_rows(rows)


_ROW_ATTRIBUTES = [*_LOCKED_FIELDS, "state_json", "deal_variant", "deal_number", "daily_date"]


def _games_from_pg_rows(rows: list[tuple]) -> list[Game]:
    """Games from rows of _LOCK_SQL_PG, their state left to the caller.

    The rows' values are already Python values, so they go straight into each instance, as
    `Model.from_db` would put them: 1 µs a game instead of 8 (Django's constructor walks every
    field, and from_db looks each column up in a list). Only while nothing listens to the
    model's init signals, which the constructor would have sent.
    """
    alias = connection.alias
    if pre_init.has_listeners(Game) or post_init.has_listeners(Game):
        n = len(_LOCKED_FIELDS)
        games = [Game.from_db(alias, _LOCKED_FIELDS, row[:n]) for row in rows]
        for game, row in zip(games, rows, strict=True):
            game.state_json, game.deal_variant, game.deal_number, game.daily_date = row[n:]
        return games
    games = []
    for row in rows:
        game = Game.__new__(Game)
        game.__dict__.update(zip(_ROW_ATTRIBUTES, row, strict=True))
        game._state = state = ModelState()
        state.adding, state.db = False, alias
        games.append(game)
    return games


@contextmanager
def _pg_cursor() -> Iterator[Any]:
    """psycopg's own cursor on Django's connection, inside its transaction: parameters bound on
    the server (Django's cursor quotes each one into the SQL text, in Python), and database
    errors still raised as Django's."""
    with connection.wrap_database_errors, psycopg.Cursor(connection.connection) as cursor:
        yield cursor


def _check_owner(game: Game | None, game_id: int, user: User) -> None:
    if game is None:
        raise AppError("not_found", f"No game {game_id}.")
    if game.owner_id != user.id:
        raise AppError("forbidden", "Only the owner of this game can play it; you may watch.")


def _check_playable(game: Game, v: int | None) -> None:
    if game.finished:
        raise AppError("game_over", f"This game is over ({game.status}).")
    _check_day_and_version(game, v)


def _check_day_and_version(game: Game, v: int | None) -> None:
    if game.day_over:
        raise AppError("game_over", "The day is over: your ranked attempt counts as it stands.")
    if v is not None and v != game.version:
        raise AppError(
            "stale_version",
            f"The game is at version {game.version}, not {v}: sync and try again.",
        )


def _check_room(game: Game) -> None:
    """A move or an undo needs room in the game's history (GAME_MAX_MOVES), which anyone
    may read: without a bound, one user's game could grow without end. A game at the limit can
    still be resigned."""
    if game.at_move_limit:
        raise AppError(
            "illegal_move",
            f"This game has reached {settings.GAME_MAX_MOVES} moves, the most a game may have: "
            "resign it, or start another.",
        )


_INSERT_MOVE = f"INSERT INTO {Move._meta.db_table} (game_id, n, move, at) VALUES (%s, %s, %s, %s)"
_UPDATE_GAME = (
    f"UPDATE {Game._meta.db_table} SET version = %s, state = %s, foundation_cards = %s, "
    "seconds = %s, last_move_at = %s, status = %s, finished_at = %s WHERE id = %s"
)


def _advance(game: Game, state: engine.State, action: str, now: dt.datetime) -> Outcome:
    """Move the in-memory game on by one accepted action (nothing is written yet); `now`: the
    time of its batch, whose moves are stored with the one time they are committed at."""
    if action == UNDO:
        game.standing = game.standing[:-1]
    else:
        if game.version == 0:
            game.standing_whole = True  # a game's first move: its whole history
        game.standing += (action,)
    game.version += 1
    game.state = state.to_dict(shared=True)  # only ever encoded: shares unchanged piles
    game.engine_state = state
    game.foundation_cards = state.foundation_count
    game.last_move_at = now
    played = now - game.started_at
    game.seconds = max(0, played.days * 86400 + played.seconds)  # whole seconds, as int() cut
    finished = state.status != "playing"
    if finished:
        game.status = state.status
        game.finished_at = now
    return Outcome(game, state, action, finished)  # positional: a third cheaper, per move


def _persist(moves: list[tuple[int, int, str, Any]], games: list[Game]) -> None:
    """Append Move rows (game id, n, action, time) and save each game's cached state.

    Two plain statements instead of Model.save(): this runs for every move, and the ORM's
    query building cost more than the database work itself.
    """
    transaction.on_commit(_cache_after_commit(games))
    rows = _game_rows(games)
    if connection.vendor == "postgresql":
        with _pg_cursor() as cursor:
            cursor.execute(_WRITE_BATCH_PG, _postgresql_batch(moves, rows))
    else:
        _write_portable(moves, rows)
    # By owner: each finish locks its player's record rows, and two batches that end two
    # players' attempts in opposite orders would each hold a row the other waits for.
    for game in sorted((g for g in games if g.finished), key=lambda g: (g.owner_id, g.pk)):
        _on_finish(game)


def _cache_after_commit(games: list[Game]) -> Callable[[], None]:
    """What to run once the write commits: cache each unfinished game's new position, with its
    row. The row is the game as written, not a copy: nothing changes a game once its batch has
    committed (the Outcomes that hold it are only read; the cache only swaps its engine state
    for the same position without its history), and a batch that plays on a cached row plays
    on a copy of it (`_cached_game`)."""
    for game in games:
        if len(game.standing) > STANDING_KEPT:
            game.standing, game.standing_whole = game.standing[-(STANDING_KEPT // 2) :], False
    entries = [(g.id, g.version, g.engine_state, g.state, g) for g in games if not g.finished]
    return lambda: [state_cache.states.put(*entry) for entry in entries]


def remember(game: Game, state: engine.State) -> None:
    """Cache a game its owner has just opened a socket on (read committed, with its deal and
    day, as `selectors.get_game` reads it), so that the socket's first move is played like
    every later one: on the cached row, without the lock query and the state's decode. Without
    it a game's first move after each connect took the lock path, about twice a cached move's
    work; a hundred sockets starting at once held every first answer for a whole slow batch.
    A finished game takes no moves, and a later version already cached here is kept."""
    if not game.finished:
        state_cache.states.offer(game.id, game.version, state, game.state, game)


def _cached_game(entry: state_cache.Entry) -> Game:
    """A game to play on, from a cache entry: a copy, so the entry stays as it was."""
    game = _game_copy(entry[3])
    game.engine_state, game.state = entry[1], entry[2]
    return game


def _game_copy(game: Game) -> Game:
    """A shallow copy of a game row (its attributes are values; its deal is shared, and never
    changes): what `copy.copy` makes, without its pickling round (0.6 µs instead of 4)."""
    twin = Game.__new__(Game)
    twin.__dict__.update(game.__dict__)
    twin._state = state = ModelState()
    state.adding, state.db = False, game._state.db
    state.fields_cache = dict(game._state.fields_cache)
    return twin


def _game_rows(games: list[Game]) -> list[tuple]:
    return [
        (
            game.version,
            game.state,
            game.foundation_cards,
            game.seconds,
            game.last_move_at,
            game.status,
            game.finished_at,
            game.id,
        )
        for game in games
    ]


def _write_portable(moves: list[tuple], rows: list[tuple]) -> None:
    ops = connection.ops
    at = ops.adapt_datetimefield_value
    with connection.cursor() as cursor:
        cursor.executemany(_INSERT_MOVE, [(g, n, a, at(t)) for g, n, a, t in moves])
        cursor.executemany(
            _UPDATE_GAME,
            [
                (
                    v,
                    _STATE_FIELD.get_db_prep_save(st, connection),
                    fc,
                    sec,
                    at(lm),
                    sta,
                    at(fin),
                    pk,
                )
                for v, st, fc, sec, lm, sta, fin, pk in rows
            ],
        )


# Each game is updated only if it still stands where the batch found it (its version before
# the batch, still playing), and only the moves of the games updated are inserted; the ids of
# those games come back. Under the row lock that always holds; without it (a batch played from
# this process's cache, play_moves_async) it is the version check that the lock would have
# made, taken by PostgreSQL under the row lock of the update itself. The games are named again
# as an array of ids, so that every plan reaches them through the index (see _LOCK_SQL_PG).
#
# `l` locks the games first, in id order, as _LOCK_SQL_PG does, and the update takes the array
# of ids it returns, which is made (and so every lock taken) before the update reads a row. An
# update alone locks rows in the order its plan meets them, which was the order of the batch's
# moves: a batch written without the lock query, with moves on games Y then X, held Y while it
# waited for X, which another writer, locking in id order, held while it waited for Y; and
# PostgreSQL failed one of the two ("deadlock detected": a REST move answered 500). Under the
# lock query the rows are this transaction's already, and `l` waits for nothing.
_WRITE_BATCH_PG = (
    f"WITH l AS MATERIALIZED (SELECT id FROM {Game._meta.db_table} WHERE id = ANY(%s::bigint[]) "
    "ORDER BY id FOR NO KEY UPDATE), "
    "r AS (SELECT (e->>0)::int AS version, e->1 AS state, (e->>2)::int AS fc, "
    "(e->>3)::int AS seconds, (e->>4)::timestamptz AS last_move_at, e->>5 AS status, "
    "(e->>6)::timestamptz AS finished_at, (e->>7)::bigint AS id, (e->>8)::int AS prev "
    "FROM jsonb_array_elements(%s::jsonb) AS e), "
    f"g AS (UPDATE {Game._meta.db_table} AS g SET version = r.version, state = r.state, "
    "foundation_cards = r.fc, seconds = r.seconds, last_move_at = r.last_move_at, "
    "status = r.status, finished_at = r.finished_at FROM r "
    "WHERE g.id = ANY(ARRAY(SELECT id FROM l)) AND g.id = r.id AND g.version = r.prev "
    "AND g.status = 'playing' RETURNING g.id), "
    f"m AS (INSERT INTO {Move._meta.db_table} (game_id, n, move, at) "
    "SELECT (e->>0)::bigint, (e->>1)::int, e->>2, (e->>3)::timestamptz "
    "FROM jsonb_array_elements(%s::jsonb) AS e WHERE (e->>0)::bigint IN (SELECT id FROM g)) "
    "SELECT id FROM g"
)


def _postgresql_batch(moves: list[tuple], rows: list[tuple]) -> list[Any]:
    """The parameters of _WRITE_BATCH_PG: the whole batch, whatever its size, in one statement:
    the ids of its games (to lock, and the index condition), then its rows as two JSON
    documents, each row an array in the order of the statement's columns.

    One JSON encoding per batch is far cheaper than adapting each value in Python (Django's
    cursor quotes every parameter into the SQL text; psycopg's array dumpers escape every
    element), and one statement is one round trip. Rows as arrays, not objects: no dict to
    build per row, no key to write or match. orjson writes tuples as arrays and datetimes as
    RFC 3339, which PostgreSQL reads back exactly.
    """
    first = {}  # each game's first move in the batch: the version before it is n - 1
    for game_id, n, _, _ in reversed(moves):
        first[game_id] = n
    game_rows = [(*row, first[row[-1]] - 1) for row in rows]
    game_ids = [row[-1] for row in rows]
    return [game_ids, orjson.dumps(game_rows).decode(), orjson.dumps(moves).decode()]


def _on_finish(game: Game) -> None:
    """A ranked attempt that ends updates its player's records and, once committed, its board."""
    if not game.ranked:
        return
    from games.leaderboards import publish_board
    from games.records import record_finished_attempt

    record_finished_attempt(game)
    daily = game.daily

    def push() -> None:
        # A board push that fails (the channel layer away) is logged in a line a minute, not
        # raised out of the committed write, which would answer its moves as refused and play
        # them again. Its sockets get the board at the next push, or when the layer is back.
        try:
            publish_board(daily)
        except Exception as exc:  # noqa: BLE001 - the finish stands
            away = "Leaderboard pushes after a finish"
            stores = (*DATABASE_AWAY, *STORE_ERRORS)  # its board's read, and the layer's send
            log_failure(log, exc, away, "%s failed", away, stores=stores)

    transaction.on_commit(push)


def _check_move_text(move: Any) -> None:
    if not isinstance(move, str) or not move or len(move) > 16:
        raise AppError("illegal_move", "A move is a short string such as 't3-f0' or 'draw'.")


def _apply(game: Game, move: str, v: int | None, now: dt.datetime) -> Outcome:
    """Check the move against the locked game and advance it in memory (no write yet)."""
    _check_playable(game, v)
    _check_room(game)
    state = _position(game)
    new_state = _engine_call(state.apply, move)
    return _advance(game, new_state, new_state.last_move or move, now)


def play_move(
    game_id: int,
    user,  # noqa: ANN001
    move: str,
    v: int | None,
    landed: set[tuple[int, int]] | None = None,
) -> Outcome:
    """Apply one move through the rules engine, or raise AppError and change nothing;
    `landed` as for play_moves."""
    result = play_moves([MoveRequest(game_id, user, move, v)], landed)[0]
    if isinstance(result, AppError):
        raise result
    return result


class MoveRequest(NamedTuple):
    """One `play_move` call, waiting to be played in a batch (a tuple: one is made for every
    socket move, and a frozen dataclass took four times as long to build). An undo is one
    too, its `move` UNDO_REQUEST."""

    game_id: int
    user: Any
    move: Any
    v: int | None


class _UndoRequest:
    """The `move` of a MoveRequest that takes the last standing move back. Not the string
    "undo": a move frame that says "undo" is not a move (PROTOCOL.md) and stays refused."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "UNDO_REQUEST"


UNDO_REQUEST: Any = _UndoRequest()


def play_moves(
    requests: list[MoveRequest], landed: set[tuple[int, int]] | None = None
) -> list[Outcome | AppError]:
    """Play many moves, on many games, in one transaction: a group commit.

    Under load, most of a move's cost is the transaction around it (round trips, the commit's
    flush to disk), not the move. Here the rows of every game in the batch are locked with one
    statement, each move is checked and applied in order (two moves on one game see each other,
    just as two transactions would), and the new Move rows and game states go out in one
    statement. A refused move is that request's AppError, raised before anything of it is
    written, so it never spoils the others. Each Outcome holds its own copy of the game, as it
    stood right after that move.

    `landed`: these moves were sent in a batch that failed without saying whether it had
    committed (its connection died after the COMMIT went out). A move its game already has, as
    the move made on its `v`, is then that batch's, and is answered as played (with the game
    as it stands), not as stale; the set holds the (game, version made) pairs this retry has
    answered so far, so that a copy of the move sent twice still gets `stale_version`, as it
    would have.
    """
    if landed is None and _can_pipeline():
        results = _play_moves_pipelined(requests)
        if results is not None:
            return results
    with transaction.atomic():
        games = _lock_many(_ids(requests))
        answered = set(landed) if landed is not None else None
        results, rows, touched = _apply_batch(games, requests, answered, orm=True)
        if rows:
            _persist(rows, touched)
    if landed is not None:
        landed |= answered  # committed: these versions are answered now
    return results


def _ids(requests: list[MoveRequest]) -> list[int]:
    return sorted({r.game_id for r in requests})


def _apply_batch(
    games: dict[int, Game],
    requests: list[MoveRequest],
    landed: set[tuple[int, int]] | None = None,
    orm: bool = False,
) -> tuple[list[Outcome | AppError], list[tuple[int, int, str, Any]], list[Game]]:
    """Check and apply each request against the locked games, in memory, in order.

    Returns each request's Outcome or AppError, the Move rows to append, and the games that
    changed (to be written in their final state). `landed`: as for play_moves; the versions
    answered here are added to it. `orm`: inside Django's transaction, where an undo may read
    the history and reopen a game; elsewhere (the pipelined paths) a batch with an undo that
    needs either raises ToOrm, and is played again through the ORM.
    """
    undos = [r.game_id for r in requests if r.move is UNDO_REQUEST]
    if undos:
        _know_standing(games, Counter(undos), orm)
    results: list[Outcome | AppError] = []
    rows: list[tuple[int, int, str, Any]] = []
    later = Counter(r.game_id for r in requests)  # moves still to come, per game
    now = timezone.now()
    for request in requests:
        later[request.game_id] -= 1
        game = games.get(request.game_id)
        try:
            _check_owner(game, request.game_id, request.user)
        except AppError as exc:
            results.append(exc)
            continue
        outcome = _landed(game, request, landed) if landed is not None else None
        if outcome is None:  # not a move the game already has: play it
            try:
                if request.move is UNDO_REQUEST:
                    outcome = _apply_undo(game, request.v, now, orm, rows)
                else:
                    _check_move_text(request.move)
                    outcome = _apply(game, request.move, request.v, now)
            except AppError as exc:
                exc.extra.setdefault("v", game.version)  # as locked_game does
                results.append(exc)
                continue
            if landed is not None:
                landed.add((game.id, game.version))  # the version this move made
            rows.append((game.id, game.version, outcome.move, game.last_move_at))
        if later[request.game_id]:  # another move on it follows: keep this one's view
            outcome.game = _game_copy(game)
        results.append(outcome)
    touched = [games[pk] for pk in dict.fromkeys(r[0] for r in rows)]
    return results, rows, touched


def _landed(game: Game, request: MoveRequest, landed: set[tuple[int, int]]) -> Outcome | None:
    """The answer to `request` if its game has it as the move made on the `v` it was sent
    on (a later move of the same batch may have followed it), and no other request of this
    retry has been answered with that move: the game as it stands, its last move named."""
    v = request.v
    if not isinstance(v, int) or game.version <= v or (game.id, v + 1) in landed:
        return None
    rows = dict(
        Move.objects.filter(game_id=game.id, n__in=(v + 1, game.version)).values_list("n", "move")
    )
    if rows.get(v + 1) != (UNDO if request.move is UNDO_REQUEST else request.move):
        return None
    landed.add((game.id, v + 1))
    state = _position(game)
    return Outcome(game, state, rows.get(game.version), game.finished)


_PIPELINE_SUPPORTED = psycopg.Pipeline.is_supported()  # the libpq linked in: fixed per process


def _can_pipeline() -> bool:
    """Whether a batch may take the pipelined path: PostgreSQL, no transaction already open
    (a caller's atomic block owns its own), and no error on this connection since Django last
    checked it (after one, the ORM path's health check replaces a broken connection)."""
    if connection.vendor != "postgresql" or connection.in_atomic_block:
        return False
    return not connection.errors_occurred and _PIPELINE_SUPPORTED


@dataclass
class _PipelinedBatch:
    """A batch between its lock and its write, on either pipelined path: what to answer, and
    the write's parameters (None if nothing changed); `to_orm` if it must go through Django's
    transaction instead (it finishes a ranked attempt, whose records the ORM updates, or one
    of its undos reads the history or reopens a game: ToOrm)."""

    results: list[Outcome | AppError]
    touched: list[Game]
    params: list[Any] | None
    to_orm: bool

    @classmethod
    def plan(cls, games: dict[int, Game], requests: list[MoveRequest]) -> _PipelinedBatch:
        try:
            results, rows, touched = _apply_batch(games, requests)
        except ToOrm:
            return cls([], [], None, True)
        to_orm = any(game.finished and game.ranked for game in touched)
        params = _postgresql_batch(rows, _game_rows(touched)) if rows and not to_orm else None
        return cls(results, touched, params, to_orm)

    @classmethod
    def locked(
        cls, rows: list[tuple], cached: dict[int, state_cache.Entry], requests: list[MoveRequest]
    ) -> _PipelinedBatch:
        """The plan for games locked by _LOCK_SQL_PG (`rows`), asked with `cached`."""
        return cls.plan(_prepared(_games_from_pg_rows(rows), cached), requests)

    def committed(self, written: Container[int] | None = None) -> list[Outcome | AppError]:
        """The answers, once the write has committed; `written`: the games it updated, if it
        was made without the lock (the rest were not, and their answers do not stand)."""
        touched = self.touched if written is None else [g for g in self.touched if g.id in written]
        _cache_after_commit(touched)()
        return self.results


# How a pipelined batch that wrote nothing (it goes to the ORM) ends its transaction, which
# holds only its row locks: COMMIT, not ROLLBACK. psycopg takes a ROLLBACK's result as the end
# of every statement it prepared on the connection and queues a DEALLOCATE ALL, which it then
# sends after the next statement it prepares there: that statement is gone from the server
# while psycopg still uses it, and every later batch on the connection failed with
# `prepared statement "_pg3_N" does not exist` (the loop writer's connections prepare; a soak
# saw it for about 3 s). The COMMIT costs a commit record (the row locks took a transaction
# id), once per ranked attempt.
_END_UNWRITTEN = b"COMMIT"


def _play_moves_pipelined(requests: list[MoveRequest]) -> list[Outcome | AppError] | None:
    """play_moves on PostgreSQL in two round trips: BEGIN and the lock, then the write and
    COMMIT, each pair sent together in psycopg's pipeline mode.

    Through Django's atomic block the same batch took five (a health check, BEGIN, the lock,
    the write, COMMIT), and under load each answer also waits for this thread to get the GIL
    back from the event loop. So the transaction is driven here, on Django's connection, which
    is in autocommit mode outside an atomic block. Returns None, having written nothing, for a
    batch that finishes a ranked attempt: its records are updated through the ORM, so the
    caller plays it again inside Django's transaction (a rare batch: one per attempt).
    """
    connection.ensure_connection()
    pg = connection.connection
    try:
        with connection.wrap_database_errors, pg.pipeline(), psycopg.Cursor(pg) as cursor:
            ids = _ids(requests)
            cached = state_cache.states.entries_for(ids)
            cursor.execute(b"BEGIN", prepare=False)
            cursor.execute(_LOCK_SQL_PG, _lock_params(ids, cached), prepare=True)
            batch = _PipelinedBatch.locked(cursor.fetchall(), cached, requests)
            if batch.to_orm:
                cursor.execute(_END_UNWRITTEN, prepare=False)
                return None
            if batch.params:
                cursor.execute(_WRITE_BATCH_PG, batch.params, prepare=True)
            cursor.execute(b"COMMIT", prepare=False)
    except BaseException:
        if _in_transaction(pg):  # an error, or a bug, between BEGIN and COMMIT
            with suppress(psycopg.Error):
                pg.rollback()
        raise
    return batch.committed()


# A move play_moves_async could not answer because its write failed, maybe after its COMMIT
# went out: to be played again on a thread, as resent (move_batcher.write_batch).
UNCERTAIN: Any = type("Uncertain", (), {"__repr__": lambda self: "UNCERTAIN"})()


def not_committed(exc: BaseException) -> bool:
    """Whether a write that raised `exc` surely did not commit: PostgreSQL refused one of its
    statements with an ERROR, which aborts the transaction (its COMMIT, if one came, rolled
    back) and leaves the session open. A lost connection, or a FATAL error that ends the
    session, may have come after the COMMIT went through: uncertain.

    A write known not to have committed is played again as new, so a copy of its move that
    another socket landed meanwhile gets `stale_version`; played as resent, it was answered as
    played too (an audit saw two `ack`s for one move after a deadlock)."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, psycopg.Error) and seen.diag.severity_nonlocalized == "ERROR":
            return True
        seen = seen.__cause__
    return False


def after_failure(exc: BaseException) -> Any:
    """What a move of a failed write is handed to a thread as: None, to be played as new,
    if the write surely did not commit; else UNCERTAIN, to be played as resent."""
    return None if not_committed(exc) else UNCERTAIN


async def play_moves_async(
    conn: Any, requests: list[MoveRequest]
) -> list[Outcome | AppError | None]:
    """play_moves on an async psycopg connection of the caller's, in autocommit mode
    (games.loop_writer, which runs batches on the event loop); None for each move that must
    be played through the ORM instead, on a thread (it finishes a ranked attempt). Nothing
    here touches Django's connection, so it may run on the event loop.

    If this process holds every game of the batch in its cache (the usual case: a game's
    moves come through its owner's socket, on one process), the batch is played on copies of
    the cached games and written in one statement, its own transaction, without the lock
    query: one round trip instead of two. The write updates a game only if it still is at the
    version the batch started from and still playing (_WRITE_BATCH_PG), which is what the
    lock was for. The moves of a game it did not update (another process, or a REST call, got
    there first) were answered from a stale copy: they are played again, with the lock.
    """
    ids = _ids(requests)
    cached = state_cache.states.entries_for(ids)
    if not all(i in cached and cached[i][3] is not None for i in ids):
        return await _play_locked_async(conn, requests)
    batch = _PipelinedBatch.plan({i: _cached_game(cached[i]) for i in ids}, requests)
    if batch.to_orm:
        return [None] * len(requests)
    written: set[int] = set()
    if batch.params:
        cursor = conn.cursor()
        await cursor.execute(_WRITE_BATCH_PG, batch.params, prepare=True)
        written = {game_id for (game_id,) in await cursor.fetchall()}
    results: list[Outcome | AppError | None] = list(batch.committed(written))
    stale = [i for i, r in enumerate(requests) if r.game_id not in written]
    if stale:
        try:
            again = await _play_locked_async(conn, [requests[i] for i in stale])
        except Exception as exc:  # noqa: BLE001 - the others are committed: these go to a thread
            log.warning(
                "Moves replayed with the lock failed; retrying them on a thread.", exc_info=True
            )
            again = [after_failure(exc)] * len(stale)
        for i, result in zip(stale, again, strict=True):
            results[i] = result
    return results


async def _play_locked_async(
    conn: Any, requests: list[MoveRequest]
) -> list[Outcome | AppError | None]:
    """`_play_moves_pipelined` on the async connection: the same transaction, step for step
    (BEGIN and the lock, then the write and COMMIT); None for every move if the batch must go
    through the ORM."""
    ids = _ids(requests)
    cached = state_cache.states.entries_for(ids)
    try:
        async with conn.pipeline():
            cursor = conn.cursor()
            await cursor.execute(b"BEGIN", prepare=False)
            await cursor.execute(_LOCK_SQL_PG, _lock_params(ids, cached), prepare=True)
            batch = _PipelinedBatch.locked(await cursor.fetchall(), cached, requests)
            if batch.to_orm:
                await cursor.execute(_END_UNWRITTEN, prepare=False)
                return [None] * len(requests)
            if batch.params:
                await cursor.execute(_WRITE_BATCH_PG, batch.params, prepare=True)
            await cursor.execute(b"COMMIT", prepare=False)
    except BaseException:
        if _in_transaction(conn):
            with suppress(psycopg.Error):
                await conn.rollback()
        raise
    return batch.committed()


def _in_transaction(conn: Any) -> bool:
    """Whether a pipelined batch left its transaction open (an error, or a bug, between BEGIN
    and COMMIT): it must be rolled back for the connection to serve the next batch. A broken
    connection is not; it is left to be replaced."""
    status = psycopg.pq.TransactionStatus
    return conn.pgconn.transaction_status in (status.INTRANS, status.INERROR)


def undo(game_id: int, user: User, v: int | None) -> Outcome:
    """Take the last standing move back (`_apply_undo`): a move like any other, played in a
    batch of one, as REST plays a move."""
    return play_move(game_id, user, UNDO_REQUEST, v)


class ToOrm(Exception):  # noqa: N818 - a signal, not an error
    """An undo in a pipelined batch needs Django's transaction: it must read its game's
    history, or reopen a stuck game. The batch is played again there (`_PipelinedBatch`)."""


def _apply_undo(
    game: Game, v: int | None, now: dt.datetime, orm: bool, rows: list[tuple]
) -> Outcome:
    """Step back one move, in memory, as `_apply` plays one: the last move that still stands
    is taken back from the position (engine `State.before`), whose cost does not grow with the
    game. Replaying the whole history instead took 1.5 s, under the row lock, for a game of
    100,000 moves.

    Which move that is comes from the game's `standing` moves, which its cached row keeps
    (`_know_standing`), so a socket's undo is played in its batch on the event loop, as a move
    is. An undo on a thread through the ORM with a history read cost about five moves.

    In a ranked attempt some moves stand (`_check_ranked_undo`).

    A stored position its moves do not make is replayed from the deal: its history, then what
    the batch has played on it so far (`rows`, the batch's Move rows), then the undo.

    A practice game that is stuck is not over for good: undo takes back the move that left no
    move, and the game plays on (practice is for trying another line). A ranked attempt's
    ending stands, as does any game won or resigned.
    """
    reopening = game.status == Game.Status.STUCK and not game.ranked
    if reopening:
        _check_day_and_version(game, v)
    else:
        _check_playable(game, v)
    _check_room(game)
    last = _standing_last(game)
    if last is None:
        raise AppError("illegal_move", "There is no move to undo.")
    current = _position(game)
    try:
        previous = current.before(last)
    except engine.EngineError:  # the stored position is not what its moves make: replay
        if not orm:
            raise ToOrm from None
        log.error("game %s: stored state does not end with %s; replaying", game.pk, last)
        current = _replayed(game, [action for g, _, action, _ in rows if g == game.id])
        previous = _engine_call(current.undo)
    if game.ranked:
        _check_ranked_undo(last, current, previous)
    if reopening:
        if not orm:
            raise ToOrm
        _reopen(game)
    return _advance(game, previous, UNDO, now)


def _check_ranked_undo(last: str, current: engine.State, previous: engine.State) -> None:
    """A ranked attempt keeps to the rules an undo would break. A move that turned a face-down
    card up (a `draw`, or a play from Barricade A's stock, whose next card then shows) stands:
    undoing it would let the player look at the stock and take the look back. So does a move
    to a foundation: a card on a foundation never leaves it (RULES.md C3), and a ranked
    attempt is ranked by its foundation cards. A practice game's undo takes back any move."""
    if current.hidden_count < previous.hidden_count:
        raise AppError(
            "illegal_move",
            f"In a ranked game the last move ({last}) cannot be undone: it turned a card up.",
        )
    if current.foundation_count > previous.foundation_count:
        raise AppError(
            "illegal_move",
            f"In a ranked game the last move ({last}) cannot be undone: a card on a foundation "
            "stays there.",
        )


def _reopen(game: Game) -> None:
    """Make a stuck practice game playing again, in this transaction, before its undo is
    written (the write updates only a game still playing: _WRITE_BATCH_PG)."""
    game.status, game.finished_at = "playing", None
    Game.objects.filter(pk=game.pk).update(status=game.status, finished_at=None)


# The standing moves a game keeps with its cached row, the last of them the one an undo takes
# back: past this many, only the newest half is kept (cut once per 16 moves, where a batch
# caches the game: services._cache_after_commit). So 16 to 32 undos in a row, more than a
# player makes, before an undo reads the history again.
STANDING_KEPT = 32


def _know_standing(games: dict[int, Game], undos: Counter, orm: bool) -> None:
    """Make sure each game knows enough of its standing moves for the batch's undos of it
    (`undos`: how many, by game), before any request of the batch is applied: read from its
    history (or ToOrm unless `orm`) while the game is still as committed. A read later, after
    some of the batch's moves and undos, would find a history that lacks them."""
    for game_id, count in undos.items():
        game = games.get(game_id)
        if game is None or game.standing_whole or game.version == 0:
            continue
        if len(game.standing) < count:
            if not orm:
                raise ToOrm
            game.standing, game.standing_whole = _standing_moves(game, STANDING_KEPT + count)


def _standing_last(game: Game) -> str | None:
    """The move an undo takes back: the last of the game's `standing` moves, or None if it
    has none (`_know_standing` has made sure it knows enough of them)."""
    standing = game.standing
    if standing:
        return standing[-1]
    if game.standing_whole or game.version == 0:
        return None
    raise ToOrm  # not reached: no batch undoes more of a game than it knows


def _standing_moves(game: Game, kept: int) -> tuple[tuple[str, ...], bool]:
    """The last `kept` moves of the committed history that no later undo took back, read from
    its end (each undo takes back the nearest move before it that is still standing), and
    whether that is all of them."""
    rows = game.move_rows.order_by("-n").values_list("move", flat=True)
    found: list[str] = []
    pending, start, size = 0, 0, 2 * kept
    while True:
        window = list(rows[start : start + size])
        for move in window:
            if move == UNDO:
                pending += 1
            elif pending:
                pending -= 1
            else:
                found.append(move)
                if len(found) == kept:
                    return tuple(reversed(found)), False
        if len(window) < size:
            return tuple(reversed(found)), True
        start, size = start + size, size * 4


def _replayed(game: Game, then: Iterable[str] = ()) -> engine.State:
    """The game's position replayed from its deal and its whole history (the truth), and then
    `then`: the actions its batch has played on it so far, not written yet."""
    history = list(game.move_rows.order_by("n").values_list("move", flat=True))
    history.extend(then)
    return _engine_call(engine.replay, game.deal.variant, game.deal.number, history)


def resign(game_id: int, user: User) -> Outcome:
    with locked_game(game_id, user) as game:
        _check_playable(game, None)
        game.status = Game.Status.RESIGNED
        game.finished_at = timezone.now()
        game.save(update_fields=["status", "finished_at"])
        _on_finish(game)
        return Outcome(game=game, finished=True)
