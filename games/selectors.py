"""The reads: what a client may see of games, histories and players.

Everything that leaves the server goes through here, so the rule "no face-down card is ever
sent" is enforced in one place: payloads are built from `State.view()`, never from the cached
full state.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import threading
from collections.abc import Iterable, Iterator
from typing import Any, TypeVar

from django.conf import settings
from django.db.models import (
    BooleanField,
    Count,
    ExpressionWrapper,
    F,
    Model,
    OuterRef,
    Prefetch,
    Q,
    QuerySet,
    Subquery,
)
from django.db.models.functions import Coalesce
from django.utils import timezone

from accounts.models import User
from games import clock, engine
from games.models import DailyChallenge, Game, Move

M = TypeVar("M", bound=Model)


def names_of(relation: str) -> Prefetch:
    """The users a list's rows name (`relation`: "owner", "user"), read by a second query for
    the rows taken only, and only their names: joined before the sort and the LIMIT, every
    candidate's user was read (a full board: all 10,000 players, whole rows, to show 20)."""
    return Prefetch(relation, queryset=User.objects.only("username"))


def the_one_row(rows: QuerySet[M]) -> M | None:
    """The row of a query that has at most one, or None, read unordered: `first()` orders by
    id, and PostgreSQL could then find a player's one attempt of a day by walking all their
    games newest first (game_owner_newest_idx: 2,000 rows for a player of 2,000 games) where
    the unique index answers it."""
    return next(iter(rows[:1]), None)


def deal_visible(game: Game, viewer_id: int | None = None) -> bool:
    """Whether a game's deal number may be shown to the user `viewer_id`: with it, anyone can
    deal the game again, face-down cards and all. A daily's is secret until its day is over
    (PROTOCOL.md); a practice game's, where the variant deals a face-down stock (Countess,
    Barricade A), until the game is over, since the stock's order is hidden from every API
    (RULES.md K2), except from an owner who named the deal: it is the number they sent.

    Over means won or resigned. A stuck practice game is not over for good: an undo takes it
    back into play (services.undo), and a Barricade A game can be stuck with most of its stock
    face down; its number shown while it was stuck told that stock to the game played on."""
    if game.daily_id is not None:
        return clock.today() > game.daily.date
    if game.deal_chosen and viewer_id == game.owner_id:
        return True
    if not engine.VARIANTS[game.deal.variant].stock:
        return True
    return game.status in (Game.Status.WON, Game.Status.RESIGNED)


def state_view(game: Game, state: engine.State | None = None, last_move: str | None = None) -> dict:
    """The PROTOCOL.md state of a game, as any user may see it. `last_move` is the move just
    played; without it (a socket's first state, a sync, a REST read) it is the last one in the
    history (one indexed row: the one that made the game's version, whatever was committed since),
    so a client that reconnects still sees what happened last."""
    if state is None:
        state = engine.State.from_dict(game.state)
    view = state.view(shared=True)  # every caller encodes it as it is
    view["moves"] = game.version
    if game.status == "resigned":  # the string, not the enum member: see Game.finished
        view["status"] = "resigned"
        view["legal_moves"] = []
    elif game.day_over:  # nothing more is taken, so nothing is legal (status: as it stands)
        view["legal_moves"] = []
        view["day_over"] = True
    elif game.at_move_limit:  # no room for a move or an undo: resign
        view["legal_moves"] = []
        view["at_move_limit"] = True
    if last_move is None and game.version:
        if hasattr(game, "last_move_text"):  # a list read with with_last_move()
            last_move = game.last_move_text
        else:
            # The row that made this version, not the newest row: a move committed since the
            # game was read would otherwise name a move its board does not show.
            last_move = game.move_rows.filter(n=game.version).values_list("move", flat=True).first()
    view["last_move"] = last_move
    return view


def with_last_move(games: QuerySet[Game]) -> QuerySet[Game]:
    """Games that bring their last move along, for a list of payloads (one query, not one per
    game)."""
    last = Move.objects.filter(game=OuterRef("pk"), n=OuterRef("version")).values("move")[:1]
    return games.annotate(last_move_text=Subquery(last))


def game_payload(
    game: Game,
    state: engine.State | None = None,
    last_move: str | None = None,
    *,
    viewer_id: int | None = None,
    with_rank: bool = True,
) -> dict:
    """One game as REST sends it to the user `viewer_id` (only its deal number depends on who
    asks: deal_visible). `with_rank=False` skips the board lookup a finished ranked attempt
    costs (one COUNT), for lists that would pay it once per game."""
    daily = None
    if game.daily_id is not None:
        daily = {
            "date": game.daily.date.isoformat(),
            "variant": game.daily.variant,
            "ranked": game.ranked,
        }
    return {
        "id": game.pk,
        "variant": game.deal.variant,
        "deal": game.deal.number if deal_visible(game, viewer_id) else None,
        "daily": daily,
        "owner": game.owner.username,
        "v": game.version,
        "status": game.status,
        "seconds": game.seconds,
        "rank": rank_of(game) if with_rank else None,
        "state": state_view(game, state, last_move),
        "started_at": game.started_at,
        "finished_at": game.finished_at,
    }


def move_history(game: Game, after: int = 0, limit: int | None = None) -> list[dict[str, Any]]:
    """The moves after the `after`-th, at most `limit` of them, oldest first (one index range);
    their times as text (`clock.IsoText`)."""
    rows = game.move_rows.filter(n__gt=after).order_by("n")
    rows = rows.values_list("n", "move", clock.IsoText("at"))
    if limit is not None:
        rows = rows[:limit]
    return [{"n": n, "move": move, "v": n - 1, "at": at} for n, move, at in rows]


def get_game(game_id: int) -> Game:
    from server.errors import AppError

    try:
        return Game.objects.select_related("deal", "daily", "owner").get(pk=game_id)
    except Game.DoesNotExist:
        raise AppError("not_found", f"No game {game_id}.") from None


def hint(game_id: int, user: User) -> str | None:
    """The solver's next move for the owner's practice game; ranked attempts get no hints."""
    from games import hints
    from server.errors import AppError

    game = get_game(game_id)
    if game.owner_id != user.id:
        raise AppError("forbidden", "Hints are for the owner of the game.")
    if game.ranked:
        raise AppError("forbidden", "No hints in a ranked attempt.")
    if game.finished:
        raise AppError("game_over", f"This game is over ({game.status}).")
    return hints.next_move(game, engine.State.from_dict(game.state), _solver_slot)


@contextlib.contextmanager
def _solver_slot() -> Iterator[None]:
    """One of this process's solver slots for a hint's search, waited for a few seconds."""
    from server.errors import AppError

    if not _hint_slots.acquire(timeout=HINT_WAIT_SECONDS):
        raise AppError(
            "rate_limited",
            "The solver is busy with other players' hints: try again in a few seconds.",
            retry_after=HINT_RETRY_SECONDS,
        )
    try:
        yield
    finally:
        _hint_slots.release()


# Hints this process solves at once, whoever asks (HINT_CONCURRENCY): each is up to a second of
# Python holding the GIL beside the event loop, and the per-user limit alone let twelve
# accounts run 48 at once (a health check's p50 went to 1.4 s). A hint waits this long for a
# slot (a few hints asked together are all answered), then is refused with a Retry-After.
_hint_slots = threading.BoundedSemaphore(settings.HINT_CONCURRENCY)
HINT_WAIT_SECONDS = 5.0
HINT_RETRY_SECONDS = 3


def user_stats(user: User) -> dict[str, Any]:
    """Games played and won per variant, in one query."""
    rows = (
        Game.objects.filter(owner=user)
        .values("deal__variant")
        .annotate(played=Count("id"), won=Count("id", filter=Q(status=Game.Status.WON)))
    )
    per_variant = {r["deal__variant"]: {"played": r["played"], "won": r["won"]} for r in rows}
    return {
        "played": sum(v["played"] for v in per_variant.values()),
        "won": sum(v["won"] for v in per_variant.values()),
        "variants": per_variant,
    }


def rank_of(game: Game) -> int | None:
    """The rank of a ranked attempt on its daily leaderboard, once it is there: finished, or
    left open when its day ended (it counts as it stands); None for practice."""
    return ranks_of([game]).get(game.pk)


def ranks_of(games: Iterable[Game]) -> dict[int, int]:
    """`rank_of` for several games, in one query at most."""
    from games.leaderboards import ranks_of_games

    return ranks_of_games(g for g in games if g.ranked and (g.finished or g.day_over))


def attempt_summary(game: Game | None, rank: int | None) -> dict[str, Any] | None:
    """A ranked attempt as the daily list shows it."""
    if game is None:
        return None
    return {
        "game_id": game.pk,
        "status": game.status,
        "moves": game.version,
        "seconds": game.seconds,
        "foundation_cards": game.foundation_cards,
        "rank": rank,
    }


def daily_entries(
    challenges: list[DailyChallenge], attempts: dict[int, Game]
) -> list[dict[str, Any]]:
    """The daily list (`GET /api/daily`): each challenge with the user's attempt at it
    (`attempts`, by challenge id) and its rank, all ranks read in one query."""
    ranks = ranks_of(attempts.values())
    entries = []
    for challenge in challenges:
        attempt = attempts.get(challenge.pk)
        entries.append(daily_entry(challenge, attempt, ranks.get(attempt.pk) if attempt else None))
    return entries


def daily_entry(
    challenge: DailyChallenge, attempt: Game | None, rank: int | None
) -> dict[str, Any]:
    """A challenge of the daily list, with the user's attempt at it and its rank."""
    summary = attempt_summary(attempt, rank)
    return {
        "date": challenge.date.isoformat(),
        "variant": challenge.variant,
        "name": engine.VARIANTS[challenge.variant].name,
        "winnable": challenge.winnable,
        "par_cards": challenge.par_cards,
        "par_moves": challenge.par_moves,
        # PROTOCOL.md lists "your attempt's status" beside date and variant: here it is, flat,
        # for a client that reads no further than that line.
        "status": summary["status"] if summary else None,
        "attempt": summary,
    }


def can_view(game: Game, user: User) -> bool:
    """Any signed-in user may watch any game (PROTOCOL.md). With WATCH_AFTER_OWN_ATTEMPT,
    another player's game on today's deal, which shows its stock as they draw, is hidden from
    a user until their own ranked attempt of that challenge is over (or the day is)."""
    if not settings.WATCH_AFTER_OWN_ATTEMPT:
        return True
    if game.owner_id == user.id or game.daily_id is None:
        return True
    if clock.today() > game.daily.date:
        return True
    return finished_attempts(user).filter(daily_id=game.daily_id).exists()


def finished_attempts(user: User) -> QuerySet[Game]:
    """The user's ranked attempts that are over: each opens its challenge's other games to
    watching (can_view, live_games)."""
    return Game.objects.filter(owner=user, ranked=True).exclude(status=Game.Status.PLAYING)


def viewable_game(game_id: int, user: User) -> Game:
    from server.errors import AppError

    game = get_game(game_id)
    if not can_view(game, user):
        raise AppError(
            "forbidden", "This game plays today's challenge: finish your own ranked attempt first."
        )
    return game


# A game with no move for this long is left, not live: the live list showed games abandoned
# days before at move 0, first of all on PostgreSQL (its DESC order puts NULLs first), and at
# half an hour a watcher still opened games nobody was playing.
LIVE_WINDOW = dt.timedelta(minutes=10)
# A game not played at all is live only this long after it starts: a player who opened a few
# deals to look at them filled the list with games at move 0, nothing to watch.
UNPLAYED_WINDOW = dt.timedelta(minutes=5)


# The live list looks at the games of the latest moves, read back from the newest (by the move
# table's own key: an index on a move's time would cost every move's insert), at most this
# many moves back; and at the games started in the last UNPLAYED_WINDOW (an index on the start,
# which no move rewrites). Filtering every game still `playing` instead read all the games a
# player ever left open: 60-80 ms a request for 100,000 of them, for every lobby every 10 s.
LIVE_SCAN_MOVES = 20_000
_LIVE_CHUNK = 1_000


def recently_played(since: dt.datetime, most: int = LIVE_SCAN_MOVES) -> set[int]:
    """The games with a move since `since`, from the latest `most` moves."""
    games: set[int] = set()
    # Whether each move is recent, as the database says: reading 2,000 times was 15 ms of a
    # 20 ms request.
    recent = ExpressionWrapper(Q(at__gte=since), output_field=BooleanField())
    rows = (
        Move.objects.order_by("-pk").annotate(recent=recent).values_list("pk", "game_id", "recent")
    )
    before = None
    for _ in range(0, most, _LIVE_CHUNK):
        chunk = list((rows if before is None else rows.filter(pk__lt=before))[:_LIVE_CHUNK])
        for _, game_id, is_recent in chunk:
            if not is_recent:
                return games
            games.add(game_id)
        if len(chunk) < _LIVE_CHUNK:
            break
        before = chunk[-1][0]
    return games


def live_games(user: User, limit: int = 50) -> list[dict]:
    """Games in progress that this user may watch, most recently played first."""
    today = clock.today()
    now = timezone.now()
    candidates = recently_played(now - LIVE_WINDOW) | set(
        Game.objects.filter(started_at__gte=now - UNPLAYED_WINDOW, version=0).values_list(
            "pk", flat=True
        )
    )
    if settings.WATCH_AFTER_OWN_ATTEMPT:
        open_dailies = finished_attempts(user).filter(daily__date=today).values("daily_id")
    else:
        open_dailies = DailyChallenge.objects.filter(date=today).values("pk")
    past_dailies = DailyChallenge.objects.filter(date__lt=today).values("pk")
    qs = (
        Game.objects.filter(pk__in=candidates, status=Game.Status.PLAYING)
        .exclude(owner=user)
        .filter(
            Q(daily__isnull=True)
            # A past day's deal is public, but its ranked attempts closed with the day.
            | Q(daily_id__in=past_dailies, ranked=False)
            | Q(daily_id__in=open_dailies)
        )
        .annotate(active_at=Coalesce("last_move_at", "started_at"))
        .filter(
            Q(version__gt=0, active_at__gte=now - LIVE_WINDOW)
            | Q(version=0, started_at__gte=now - UNPLAYED_WINDOW)
        )
        # The deal, the daily and the owner are read for the listed games only (three more
        # queries), not joined to every candidate before the sort (the dailies are matched by
        # id above): with 1,333 candidates the joins were 15 of the query's 17.8 ms.
        .prefetch_related("deal", "daily", names_of("owner"))
        .defer("state")  # a list of games needs none of their positions
        .order_by("-active_at", "-pk")[:limit]
    )
    return [
        {
            "id": g.pk,
            "owner": g.owner.username,
            "variant": g.deal.variant,
            "deal": g.deal.number if deal_visible(g) else None,
            "v": g.version,
            "daily": g.daily.date.isoformat() if g.daily_id else None,
            "ranked": g.ranked,
        }
        for g in qs
    ]


# Your games list: a page is this many games by default, and at most MAX_GAMES_PAGE.
LATEST_GAMES = 50
MAX_GAMES_PAGE = 100


def latest_games(user: User, before: int | None = None, limit: int = LATEST_GAMES) -> list[dict]:
    """`GET /api/games`: the user's games, newest first, a page at a time. The page after one
    starts before its last game's id (`before`): ids only grow, so a game started meanwhile
    cannot push one from page to page, as an offset would."""
    games = user.games.order_by("-pk")
    if before is not None:
        games = games.filter(pk__lt=before)
    games = with_last_move(games.select_related("deal", "daily", "owner"))
    return [game_payload(g, viewer_id=user.pk, with_rank=False) for g in games[:limit]]


def player_named(username: str) -> User:
    """The player of a profile's URL, in any case; `not_found` for none. No query for a name
    no one can have: PostgreSQL refuses a NUL in text (it was a 500)."""
    from server.errors import AppError

    user = None
    if "\x00" not in username and len(username) <= 150:
        user = the_one_row(User.objects.named(username))
    if user is None:
        raise AppError("not_found", f"No player '{username[:40]}'.")
    return user


def player_profile(user: User) -> dict[str, Any]:
    """Played and won per variant, daily streaks, recent ranked results: a fixed few queries."""
    from games.models import VariantRecord
    from games.records import counted_attempts, current_streak

    today = clock.today()
    records = {r.variant: r for r in VariantRecord.objects.filter(user=user)}
    overall = records.get(VariantRecord.ALL)
    recent = (
        counted_attempts(user.id)  # finished, or left open when its day ended and closed
        .select_related("daily")
        .defer("state")
        .order_by("-daily__date", F("finished_at").desc(nulls_last=True), "-pk")[:10]
    )
    return {
        **user_stats(user),
        "daily": {
            v: {
                "played": r.played,
                "wins": r.wins,
                "best_par_ratio": r.best_par_ratio,
                "current_streak": current_streak(r, today),
                "best_streak": r.best_streak,
            }
            for v, r in records.items()
            if v != VariantRecord.ALL
        },
        "current_streak": current_streak(overall, today),
        "best_streak": overall.best_streak if overall else 0,
        "recent": [
            {
                "date": g.daily.date.isoformat(),
                "variant": g.daily.variant,
                "status": g.status,
                "moves": g.version,
                "seconds": g.seconds,
                "foundation_cards": g.foundation_cards,
                "game_id": g.pk,
                **({"day_over": True} if not g.finished else {}),
            }
            for g in recent
        ],
    }
