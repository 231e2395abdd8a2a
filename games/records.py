"""Player records: updated once per ranked attempt, so all-time boards and profiles read a
few indexed rows instead of scanning every game.

An attempt is counted when it finishes, or, if it is still open when its day ends, when the
day is closed (`close_days_before`): it counts as it stands, as on the day's board.
"""

from __future__ import annotations

import datetime as dt

from django.db import IntegrityError, transaction
from django.db.models import Q

from games import clock
from games.models import ClosedDay, DailyChallenge, Game, VariantRecord


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


def _bump(record: VariantRecord, day: dt.date, won: bool, ratio: float) -> None:
    record.played += 1
    record.wins += int(won)
    record.best_par_ratio = max(record.best_par_ratio, ratio)
    if record.last_date is not None and day < record.last_date:
        _recount_streaks(record)  # a day closed late, after a later day was counted
    elif record.last_date != day:
        consecutive = record.last_date is not None and record.last_date == day - dt.timedelta(1)
        record.current_streak = record.current_streak + 1 if consecutive else 1
        record.best_streak = max(record.best_streak, record.current_streak)
        record.last_date = day


def _recount_streaks(record: VariantRecord) -> None:
    """Streaks from every day the player has a counted attempt on: the slow way, for the rare
    day counted out of order (its attempts were closed after the player finished a later one)."""
    counted = Game.objects.filter(owner_id=record.user_id, ranked=True).filter(
        ~Q(status=Game.Status.PLAYING) | Q(daily__date__in=ClosedDay.objects.values("date"))
    )
    if record.variant != VariantRecord.ALL:
        counted = counted.filter(daily__variant=record.variant)
    days = sorted(set(counted.values_list("daily__date", flat=True)))
    run = best = 0
    for i, day in enumerate(days):
        run = run + 1 if i and days[i - 1] == day - dt.timedelta(1) else 1
        best = max(best, run)
    record.current_streak, record.best_streak = run, best
    record.last_date = days[-1] if days else None


def record_finished_attempt(game: Game) -> None:
    """Fold a just-finished ranked attempt into its player's records (inside its transaction)."""
    _count(game)


def _count(game: Game) -> None:
    day = game.daily.date
    won = game.status == Game.Status.WON
    ratio = par_ratio(game)
    for variant in (game.daily.variant, VariantRecord.ALL):
        record, _ = VariantRecord.objects.select_for_update().get_or_create(
            user_id=game.owner_id, variant=variant
        )
        _bump(record, day, won, ratio)
        record.save()


def close_day(day: dt.date) -> int:
    """Count the ranked attempts of `day` left open in their players' records, unless the day
    is closed already. Returns how many were counted."""
    if day >= clock.today():
        raise ValueError(f"{day} is not over yet")
    with transaction.atomic():
        try:
            with transaction.atomic():  # a savepoint: losing the race is not an error
                ClosedDay.objects.create(date=day)
        except IntegrityError:
            return 0  # closed by another process
        open_attempts = (
            Game.objects.select_for_update(of=("self",))
            .filter(daily__date=day, ranked=True, status=Game.Status.PLAYING)
            .select_related("daily")
            .order_by("pk")
        )
        counted = 0
        for game in open_attempts:
            _count(game)
            counted += 1
    return counted


def close_days_before(today: dt.date) -> int:
    """Close every day before `today` that has challenges and is not closed yet, oldest first
    (a streak is counted day after day): at midnight, and at a start after a night with no
    server. Returns the attempts counted."""
    days = (
        DailyChallenge.objects.filter(date__lt=today)
        .exclude(date__in=ClosedDay.objects.values("date"))
        .values_list("date", flat=True)
        .distinct()
        .order_by("date")
    )
    return sum(close_day(day) for day in list(days))


def current_streak(record: VariantRecord | None, today: dt.date) -> int:
    """A streak is current only if its last day is today or yesterday."""
    if record is None or record.last_date is None:
        return 0
    return record.current_streak if (today - record.last_date).days <= 1 else 0
