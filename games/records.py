"""Player records: updated once, when a ranked attempt finishes, so all-time boards and
profiles read a few indexed rows instead of scanning every game."""

from __future__ import annotations

import datetime as dt

from games.models import Game, VariantRecord


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
    if record.last_date != day:
        consecutive = record.last_date is not None and record.last_date == day - dt.timedelta(1)
        record.current_streak = record.current_streak + 1 if consecutive else 1
        record.best_streak = max(record.best_streak, record.current_streak)
        record.last_date = day


def record_finished_attempt(game: Game) -> None:
    """Fold a just-finished ranked attempt into its player's records (inside its transaction)."""
    day = game.daily.date
    won = game.status == Game.Status.WON
    ratio = par_ratio(game)
    for variant in (game.daily.variant, VariantRecord.ALL):
        record, _ = VariantRecord.objects.select_for_update().get_or_create(
            user_id=game.owner_id, variant=variant
        )
        _bump(record, day, won, ratio)
        record.save()


def current_streak(record: VariantRecord | None, today: dt.date) -> int:
    """A streak is current only if its last day is today or yesterday."""
    if record is None or record.last_date is None:
        return 0
    return record.current_streak if (today - record.last_date).days <= 1 else 0
