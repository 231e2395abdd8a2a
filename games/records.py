"""Player records: updated once per ranked attempt, so all-time boards and profiles read a
few indexed rows instead of scanning every game.

An attempt is counted when it finishes, or, if it is still open when its day ends, when the
day is closed (`close_day`): it counts as it stands, as on the day's board. Either way its
`CountedAttempt` row is inserted in the transaction that counts it, so it is counted once,
whichever comes first and however many processes try (a process whose clock runs a little
ahead may close a day while another still takes that day's last move).
"""

from __future__ import annotations

import datetime as dt
import logging

from django.db import connection, transaction
from django.db.models import Q, QuerySet

from games import clock
from games.models import ClosedDay, CountedAttempt, DailyChallenge, Game, VariantRecord

log = logging.getLogger(__name__)


def par_ratio(game: Game) -> float:
    """How close the attempt came to the certified par (1.0 = matched it).

    Winnable deals: par moves / moves for a win (a player may beat the solver's line), 0 if lost.
    Countess and Barricade A: cards on the foundations / the par's cards.
    """
    daily = game.daily
    if daily.winnable:
        if game.status != Game.Status.WON:
            return 0.0
        return round(daily.par_moves / max(game.version, 1), 4)
    return round(game.foundation_cards / max(daily.par_cards, 1), 4)


def counted_attempts(user_id: int) -> QuerySet[Game]:
    """A player's ranked attempts that are in their records: claimed (`CountedAttempt`), or
    finished (each finish is counted in its own transaction; this also holds for an attempt
    that a server older than the claims finished)."""
    return Game.objects.filter(owner_id=user_id, ranked=True).filter(
        Q(counted__isnull=False) | ~Q(status=Game.Status.PLAYING)
    )


def _extend(streak: int, last: dt.date | None, day: dt.date) -> int:
    """The streak that ends on `day`, given the one that ends on `last`, the day before it
    that counts."""
    return streak + 1 if last is not None and last == day - dt.timedelta(1) else 1


def _bump(record: VariantRecord, day: dt.date, won: bool, ratio: float) -> None:
    record.played += 1
    record.wins += int(won)
    record.best_par_ratio = max(record.best_par_ratio, ratio)
    if record.last_date is not None and day < record.last_date:
        _recount_streaks(record)  # a day closed late, after a later day was counted
    elif record.last_date != day:
        record.current_streak = _extend(record.current_streak, record.last_date, day)
        record.best_streak = max(record.best_streak, record.current_streak)
        record.last_date = day


def _recount_streaks(record: VariantRecord) -> None:
    """Streaks from every day the player has a counted attempt on: the slow way, for the rare
    day counted out of order (its attempts were closed after the player finished a later one)."""
    counted = counted_attempts(record.user_id)
    if record.variant != VariantRecord.ALL:
        counted = counted.filter(daily__variant=record.variant)
    streak, last, best = 0, None, 0
    for day in sorted(set(counted.values_list("daily__date", flat=True))):
        streak, last = _extend(streak, last, day), day
        best = max(best, streak)
    record.current_streak, record.best_streak, record.last_date = streak, best, last


def _claim(game: Game) -> bool:
    """Whether this transaction is the one that counts `game`: its CountedAttempt row is new.
    One statement that skips a row already there, so losing the race is no error (nor a
    line in PostgreSQL's log); on PostgreSQL a second insert waits for the first
    transaction to end."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {CountedAttempt._meta.db_table} (game_id) VALUES (%s) "
            "ON CONFLICT DO NOTHING RETURNING game_id",
            [game.pk],
        )
        return cursor.fetchone() is not None


def _count(game: Game) -> None:
    """Fold one attempt into its player's records. The two rows are locked in one order in
    every transaction ("all" sorts before every variant id), so a finish and a day's close
    never wait for each other in a circle."""
    day = game.daily.date
    won = game.status == Game.Status.WON
    ratio = par_ratio(game)
    for variant in sorted((game.daily.variant, VariantRecord.ALL)):
        record, _ = VariantRecord.objects.select_for_update().get_or_create(
            user_id=game.owner_id, variant=variant
        )
        _bump(record, day, won, ratio)
        record.save()


def record_finished_attempt(game: Game) -> None:
    """Fold a just-finished ranked attempt into its player's records (inside its transaction),
    unless its day was closed first and counted it as it stood."""
    if _claim(game):
        _count(game)


_COUNTED_FIELDS = (
    *("owner_id", "ranked", "status", "version", "foundation_cards", "daily_id"),
    *("daily__date", "daily__variant", "daily__winnable", "daily__par_moves", "daily__par_cards"),
)


# A day is marked closed (and later skipped) only once it is this old: an attempt may still
# be created just after its day ends (a request that checked the date before midnight, or a
# process whose clock runs behind), so yesterday is looked at again at each close.
SETTLED_DAYS = 2


def close_day(day: dt.date) -> int:
    """Count the ranked attempts of `day` left open in their players' records; returns how many
    this call counted. Each attempt in a transaction of its own, so the day's close holds no
    lock for long (a player's records are locked by their own finishes too); an attempt that
    fails is logged and left for the next close, which takes the day up where it stopped."""
    today = clock.today()
    if day >= today:
        raise ValueError(f"{day} is not over yet")
    if ClosedDay.objects.filter(date=day).exists():
        return 0
    open_attempts = Game.objects.filter(
        daily__date=day, ranked=True, status=Game.Status.PLAYING, counted__isnull=True
    ).order_by("pk")
    counted = failed = 0
    for pk in open_attempts.values_list("pk", flat=True):
        try:
            counted += _close_attempt(pk)
        except Exception:  # noqa: BLE001 - one attempt must not keep the others uncounted
            log.exception("Counting attempt %s of %s failed.", pk, day)
            failed += 1
    if failed:
        raise CloseIncomplete(f"{failed} attempt(s) of {day} not counted yet")
    if day <= today - dt.timedelta(days=SETTLED_DAYS):
        # Nothing of the day is left to count (another process may have marked it too).
        ClosedDay.objects.get_or_create(date=day)
    return counted


class CloseIncomplete(Exception):
    """Some attempts of a day could not be counted (each was logged); a later close retries."""


def _close_attempt(pk: int) -> int:
    with transaction.atomic():
        game = (
            Game.objects.select_for_update(of=("self",))
            .select_related("daily")
            .only(*_COUNTED_FIELDS)
            .filter(pk=pk, status=Game.Status.PLAYING)  # a finish since: it counted itself
            .first()
        )
        if game is None or not _claim(game):
            return 0
        _count(game)
        return 1


def close_days_before(today: dt.date) -> int:
    """Close every day before `today` that has challenges and is not closed yet, oldest first
    (streaks count day after day): after each midnight, and as a server starts, for the days
    that ended while none ran. A day that could not be closed in full does not stop the days
    after it; the call then fails (after them), so that it is tried again. Returns the
    attempts counted."""
    days = (
        DailyChallenge.objects.filter(date__lt=today)
        .exclude(date__in=ClosedDay.objects.values("date"))
        .values_list("date", flat=True)
        .distinct()
        .order_by("date")
    )
    counted, incomplete = 0, []
    for day in list(days):
        try:
            counted += close_day(day)
        except CloseIncomplete as exc:
            incomplete.append(str(exc))
    if incomplete:
        raise CloseIncomplete("; ".join(incomplete))
    return counted


def current_streak(record: VariantRecord | None, today: dt.date) -> int:
    """A streak is current only if its last day is today or yesterday."""
    if record is None or record.last_date is None:
        return 0
    return record.current_streak if (today - record.last_date).days <= 1 else 0
