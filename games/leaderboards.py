"""Daily leaderboards: who ranks where, computed by the database.

Order: won first, then more cards on the foundations (within one variant a win is exactly
"all cards up", so one column covers both), then fewer moves, then less time, then who
finished first. Ties share nothing: ranks are 1..N.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Iterable
from typing import TYPE_CHECKING

from django.db.models import Count, F, Q, QuerySet

from games import clock
from games.models import DailyChallenge, Game
from games.selectors import names_of, the_one_row

if TYPE_CHECKING:
    from django.contrib.auth.models import AnonymousUser

    from accounts.models import User

RANK_ORDER = [
    "-foundation_cards",
    "version",
    "seconds",
    F("finished_at").asc(nulls_last=True),
    "id",
]


def board_games(daily: DailyChallenge) -> QuerySet[Game]:
    """Ranked attempts on the board: finished ones, and once the day is over every attempt."""
    return Game.objects.filter(_on_board(daily), ranked=True)


def _on_board(daily: DailyChallenge) -> Q:
    """Of the ranked attempts, those on `daily`'s board."""
    on_board = Q(daily_id=daily.pk)
    if daily.date >= clock.today():
        on_board &= ~Q(status=Game.Status.PLAYING)
    return on_board


# The columns a board entry shows (entry()), and those that rank it. A board reads only
# these: a game's row also holds its stored position (about 0.5 KB of JSON), which no board
# shows. Reading it, and joining every player before the sort (below), made page 250 of a
# 10,000-entry board twice as slow on PostgreSQL (bench/leaderboard.py).
ENTRY_FIELDS = ("owner_id", "status", "version", "seconds", "foundation_cards", "finished_at")


def ranked_board(daily: DailyChallenge) -> QuerySet[Game]:
    """The board in rank order, its owners' names read for the rows taken only."""
    return (
        board_games(daily)
        .only(*ENTRY_FIELDS)
        .prefetch_related(names_of("owner"))
        .order_by(*RANK_ORDER)
    )


def rank_of_game(game: Game) -> int:
    """The rank of a game on its board (one query)."""
    return ranks_of_games([game])[game.pk]


def ranks_of_games(games: Iterable[Game]) -> dict[int, int]:
    """The rank of each daily game on its board (1 + the entries strictly ahead of it), in one
    query however many games and days: a filtered COUNT per game over their days' ranked
    attempts. The daily list shows up to five ranks; asked one by one they took two queries
    each. Every game must be on its board (finished, or its day over): the callers know it
    already, and a check here made every rank's scan slower by a comparison per entry."""
    games = [g for g in games if g.daily_id is not None]
    if not games:
        return {}
    ahead = {f"g{g.pk}": Count("id", filter=_on_board(g.daily) & _ahead_of(g)) for g in games}
    days = {g.daily_id for g in games}
    counts = Game.objects.filter(ranked=True, daily_id__in=days).aggregate(**ahead)
    return {g.pk: counts[f"g{g.pk}"] + 1 for g in games}


def _ahead_of(game: Game) -> Q:
    """The entries RANK_ORDER puts before `game`'s."""
    ahead = (
        Q(foundation_cards__gt=game.foundation_cards)
        | Q(foundation_cards=game.foundation_cards, version__lt=game.version)
        | Q(foundation_cards=game.foundation_cards, version=game.version, seconds__lt=game.seconds)
    )
    same_score = Q(
        foundation_cards=game.foundation_cards, version=game.version, seconds=game.seconds
    )
    if game.finished_at is not None:
        tie_break = Q(finished_at__lt=game.finished_at) | Q(
            finished_at=game.finished_at, id__lt=game.id
        )
    else:
        tie_break = Q(finished_at__isnull=False) | Q(finished_at__isnull=True, id__lt=game.id)
    return ahead | (same_score & tie_break)


PAGE_SIZE = 20
MAX_PAGE_SIZE = 100


def entry(game: Game, rank: int) -> dict:
    return {
        "rank": rank,
        "username": game.owner.username,
        "status": game.status,
        "moves": game.version,
        "seconds": game.seconds,
        "foundation_cards": game.foundation_cards,
        "game_id": game.pk,
        # A string, not a datetime: the frame crosses the channel layer (msgpack on Redis).
        "finished_at": clock.iso(game.finished_at),
    }


def board_page(daily: DailyChallenge, page: int = 1, page_size: int = PAGE_SIZE) -> dict:
    """One page of the board: a COUNT and one indexed, LIMITed query."""
    offset = (page - 1) * page_size
    games = ranked_board(daily)[offset : offset + page_size]
    return {
        "date": daily.date.isoformat(),
        "variant": daily.variant,
        "total": board_games(daily).count(),
        "page": page,
        "page_size": page_size,
        "entries": [entry(g, offset + i + 1) for i, g in enumerate(games)],
    }


def my_entry(daily: DailyChallenge, user: User | AnonymousUser) -> dict | None:
    if not user.is_authenticated:
        return None
    game = the_one_row(board_games(daily).only(*ENTRY_FIELDS).filter(owner=user))
    if game is None:
        return None
    game.owner, game.daily = user, daily  # known already: no query for either
    return entry(game, rank_of_game(game))


def board_group(date: str, variant: str) -> str:
    return f"board.{date}.{variant}"


def board_frame(daily: DailyChallenge) -> dict:
    page = board_page(daily)
    return {
        "t": "leaderboard",
        "d": {
            "date": page["date"],
            "variant": page["variant"],
            "total": page["total"],
            "entries": page["entries"],
        },
    }


def publish_board(daily: DailyChallenge, shrunk: bool = False) -> None:
    """Push the changed board to every socket watching it, on any server process. A board
    only gains entries as it is played; `shrunk` says this one lost some (an attempt deleted
    in the admin, with its player or alone), so sockets show it though it has fewer."""
    from asgiref.sync import async_to_sync
    from channels.layers import get_channel_layer

    from games.broadcast import send_to_group

    layer = get_channel_layer()
    if layer is None:
        return
    message = {"type": "board.frame", "frame": board_frame(daily)}
    if shrunk:
        message["shrunk"] = True
    # Bounded (games.broadcast.SEND_SECONDS): a push runs once its game's write has committed,
    # on that write's thread, and a Redis that hung held a ranked finish 15 s.
    group = board_group(daily.date.isoformat(), daily.variant)
    async_to_sync(send_to_group)(layer, group, message)


# What the all-time board ranks by, best first. Players equal in all three share a rank
# (1, 1, 3): nothing a player sees tells them apart, so an order between them would be made up.
ALLTIME_KEY = ("wins", "best_par_ratio", "best_streak")


def alltime_board(variant: str, page: int = 1, page_size: int = PAGE_SIZE) -> dict:
    from games.models import VariantRecord

    offset = (page - 1) * page_size
    qs = VariantRecord.objects.filter(variant=variant, played__gt=0)
    # In the index's order (record_alltime_order_idx): no sort of the variant's every record.
    ordered = qs.prefetch_related(names_of("user")).order_by(
        *(f"-{f}" for f in ALLTIME_KEY), "user_id"
    )
    rows = list(ordered[offset : offset + page_size])
    entries: list[dict] = []
    rank, key = 0, None
    for i, r in enumerate(rows):
        row_key = tuple(getattr(r, f) for f in ALLTIME_KEY)
        if row_key != key:  # the first of a page may share its rank with the page before
            rank = offset + i + 1 if i else 1 + qs.filter(_better_than(row_key)).count()
            key = row_key
        entries.append(
            {
                "rank": rank,
                "username": r.user.username,
                "played": r.played,
                "wins": r.wins,
                "best_par_ratio": r.best_par_ratio,
                "longest_streak": r.best_streak,
            }
        )
    return {
        "variant": variant,
        "total": qs.count(),
        "page": page,
        "page_size": page_size,
        "entries": entries,
    }


def _better_than(key: tuple) -> Q:
    """The records ahead of `key` on the all-time board: better in the first field that differs."""
    ahead: list[Q] = []
    same = Q()
    for field, value in zip(ALLTIME_KEY, key, strict=True):
        ahead.append(same & Q(**{f"{field}__gt": value}))
        same &= Q(**{field: value})
    return functools.reduce(operator.or_, ahead)
