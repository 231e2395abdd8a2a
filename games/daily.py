"""Daily challenges: which deal each (UTC day, variant) plays, certified by the solver (W1).

The deal number comes from an HMAC of the date and variant under DAILY_SECRET, so nobody can
compute tomorrow's deal. Candidates are tried in a fixed order; the solver runs on a node budget
with a time limit behind it (certification.BUDGETS), so two processes, one of them slowed down,
may pick different deals. The unique constraint on (date, variant) makes that, and any
concurrent creation, safe: the loser of the race reads the winner's row. Within one process a
lock per key keeps concurrent requests from certifying twice.

A certification that fails makes its one challenge unavailable (503) for a while: the day's
other challenges are listed and played as usual, and requests meanwhile are answered at once
instead of each running the failing certification again behind the lock.
"""

from __future__ import annotations

import datetime as dt
import logging
import multiprocessing as mp
import re
import threading
import time
from collections.abc import Iterable
from concurrent.futures import CancelledError, Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import TYPE_CHECKING

from django.conf import settings
from django.db import IntegrityError, transaction

from games import certification, clock
from games.certification import BUDGETS, Budget, Certificate
from games.engine import VARIANTS
from games.models import VARIANT_IDS, DailyChallenge, Game
from games.selectors import the_one_row
from games.services import check_variant, get_deal, start_game
from server.errors import AppError

if TYPE_CHECKING:
    from django.db.models import QuerySet

    from accounts.models import User

_pool: ProcessPoolExecutor | None = None
_pool_guard = threading.RLock()  # start_certifying holds it around _submit
# Certifications begun ahead of their `run_certify` (start_certifying), with the pool each runs on.
_started: dict[tuple[dt.date, str], tuple[ProcessPoolExecutor, Future]] = {}
# Challenges this process has seen stored: a late `start_certifying` (a request that read the
# day before another stored one) must not begin them again.
_stored: set[tuple[dt.date, str]] = set()
# Certifications that failed: when (time.monotonic) a request may try each again.
_failed_until: dict[tuple[dt.date, str], float] = {}

log = logging.getLogger(__name__)


def candidate_deal(date: dt.date, variant: str, index: int) -> int:
    return certification.candidate_deal(settings.DAILY_SECRET, date, variant, index)


def certify(date: dt.date, variant: str, budget: Budget | None = None) -> Certificate:
    return certification.certify(settings.DAILY_SECRET, date, variant, budget or BUDGETS[variant])


def run_certify(date: dt.date, variant: str) -> Certificate:
    """Certify in a worker process when DAILY_CERTIFY_IN_PROCESS_POOL is on (the default).

    The solver is pure CPU; run in a request thread it would hold the GIL for seconds and slow
    every other request of the server, so it runs in its own process on another core. A
    certification once begun (here, or ahead by `start_certifying`) is every caller's until its
    challenge is stored: a second caller waits for it instead of beginning another. A worker
    that died (killed, out of memory) breaks its pool for good: the pool is replaced and the
    job tried once more, or no day after that would get its challenges until a restart.
    """
    if not getattr(settings, "DAILY_CERTIFY_IN_PROCESS_POOL", False):
        return certify(date, variant)
    pool, job = _begin(date, variant)
    try:
        return job.result()
    except (BrokenProcessPool, CancelledError):  # cancelled: its pool was being replaced
        _done_with(date, variant)
        return _certify_pool(replacing=pool).submit(*_job_args(date, variant)).result()
    except Exception:
        _done_with(date, variant)
        raise


def _begin(date: dt.date, variant: str) -> tuple[ProcessPoolExecutor, Future]:
    """This challenge's certification: the one begun already, unless it failed, else a new
    one."""
    key = (date, variant)
    with _pool_guard:
        entry = _started.get(key)
        if entry is None or _failed(entry[1]):
            entry = _started[key] = _submit(date, variant)
        return entry


def _failed(job: Future) -> bool:
    return job.done() and (job.cancelled() or job.exception() is not None)


def start_certifying(date: dt.date, variants: list[str]) -> None:
    """Begin these certifications now, side by side on the pool's DAILY_CERTIFY_WORKERS
    processes; each `run_certify` then waits for its own. One after another, a day's five took
    the sum of their times (Countess and Barricade A most of it) on a first request."""
    if not getattr(settings, "DAILY_CERTIFY_IN_PROCESS_POOL", False):
        return
    with _pool_guard:
        for key, (_, job) in list(_started.items()):  # an earlier day's, done, never stored
            if key[0] < date and job.done():
                del _started[key]
        _stored.difference_update([key for key in _stored if key[0] < date])
        for variant in variants:
            # Stored since the caller read the day (begin_missing): a second request that read
            # it just before another stored the challenge began its certification again.
            if (date, variant) not in _stored and _retry_in(date, variant) is None:
                _begin(date, variant)


def _done_with(date: dt.date, variant: str, stored: bool = False) -> None:
    """Forget a certification begun for this challenge: it is in the database (`stored`), or
    its job failed. Kept until then, so a second caller meanwhile waits for the same job
    instead of beginning another; and once stored, never begun again."""
    with _pool_guard:
        _started.pop((date, variant), None)
        if stored:
            _stored.add((date, variant))


def _job_args(date: dt.date, variant: str) -> tuple:
    return (certification.certify, settings.DAILY_SECRET, date, variant, BUDGETS[variant])


def _submit(date: dt.date, variant: str) -> tuple[ProcessPoolExecutor, Future]:
    pool = _certify_pool()
    try:
        return pool, pool.submit(*_job_args(date, variant))
    except BrokenProcessPool:  # its worker died since its last job
        pool = _certify_pool(replacing=pool)
        return pool, pool.submit(*_job_args(date, variant))


def _certify_pool(replacing: ProcessPoolExecutor | None = None) -> ProcessPoolExecutor:
    """The process pool, made on first use; a new one if `replacing` is still the current one
    (two threads that saw it break replace it once)."""
    global _pool
    with _pool_guard:
        if _pool is not None and _pool is replacing:
            _pool.shutdown(wait=False, cancel_futures=True)
            _pool = None
        if _pool is None:
            workers = max(1, settings.DAILY_CERTIFY_WORKERS)
            _pool = ProcessPoolExecutor(max_workers=workers, mp_context=mp.get_context("spawn"))
        return _pool


_locks: dict[tuple[dt.date, str], threading.Lock] = {}
_locks_guard = threading.Lock()


def _lock_for(date: dt.date, variant: str) -> threading.Lock:
    with _locks_guard:
        return _locks.setdefault((date, variant), threading.Lock())


def _retry_in(date: dt.date, variant: str) -> int | None:
    """Seconds until a failed certification of this challenge may be tried again; None if it
    has not failed lately."""
    with _pool_guard:
        until = _failed_until.get((date, variant))
    if until is None:
        return None
    left = until - time.monotonic()
    return max(1, round(left)) if left > 0 else None


def _unavailable(date: dt.date, variant: str, retry_after: int) -> AppError:
    return AppError(
        "unavailable",
        f"The {VARIANTS[variant].name} challenge of {date} could not be certified; "
        f"try again in {retry_after} s.",
        retry_after=retry_after,
    )


def _certify_or_refuse(date: dt.date, variant: str) -> Certificate:
    """`run_certify`, remembered when it fails: AppError `unavailable` until the retry time."""
    retry_after = _retry_in(date, variant)
    if retry_after is not None:
        raise _unavailable(date, variant, retry_after)
    try:
        return run_certify(date, variant)
    except Exception:
        log.exception("Certifying the %s challenge of %s failed", variant, date)
        retry_after = max(1, settings.DAILY_CERTIFY_RETRY_SECONDS)
        with _pool_guard:
            for key in [key for key in _failed_until if key[0] < date]:
                del _failed_until[key]
            _failed_until[(date, variant)] = time.monotonic() + retry_after
        raise _unavailable(date, variant, retry_after) from None


def ensure_daily(date: dt.date, variant: str) -> DailyChallenge:
    """The challenge of a day, certified now if no job made it yet; AppError `unavailable`
    (503) while its certification has lately failed."""
    existing = DailyChallenge.objects.select_related("deal").filter(date=date, variant=variant)
    found = existing.first()
    if found is not None:
        _done_with(date, variant, stored=True)
        return found
    retry_after = _retry_in(date, variant)
    if retry_after is not None:  # not behind the lock: no wait for an answer already known
        raise _unavailable(date, variant, retry_after)
    with _lock_for(date, variant):
        found = existing.first()
        if found is not None:
            _done_with(date, variant, stored=True)
            return found
        cert = _certify_or_refuse(date, variant)
        deal = get_deal(variant, cert.deal)
        # get_or_create survives two processes storing it at once: it gets the other's row.
        challenge, _ = DailyChallenge.objects.get_or_create(
            defaults={
                "deal": deal,
                "winnable": cert.winnable,
                "par_cards": cert.par_cards,
                "par_moves": len(cert.line),
                "line": cert.line,
                "par_proven": cert.par_proven,
                "candidates_tried": cert.candidates_tried,
                "solver_seconds": round(cert.seconds, 3),
            },
            date=date,
            variant=variant,
        )
        _done_with(date, variant, stored=True)
        return challenge


def begin_missing(date: dt.date, variants: Iterable[str]) -> dict[str, DailyChallenge]:
    """The day's challenges already made, by variant (one query); the missing ones of
    `variants` are begun side by side (start_certifying), for `ensure_daily` to store."""
    found = {c.variant: c for c in DailyChallenge.objects.select_related("deal").filter(date=date)}
    missing = [v for v in variants if v not in found]
    if missing:
        start_certifying(date, missing)
    return found


def ensure_day(date: dt.date) -> list[DailyChallenge]:
    """The challenges of a day, in VARIANT_IDS order: one query when they all exist; those
    missing are certified side by side, then stored one by one. A challenge whose certification
    failed is left out (ensure_daily says why); if all of them are, AppError `unavailable`."""
    found = begin_missing(date, VARIANT_IDS)
    refused: AppError | None = None
    for variant in VARIANT_IDS:
        if variant not in found:
            try:
                found[variant] = ensure_daily(date, variant)
            except AppError as exc:
                refused = exc
    if not found and refused is not None:
        raise refused
    return [found[v] for v in VARIANT_IDS if v in found]


# A day as the API writes it, YYYY-MM-DD, and nothing else: `date.fromisoformat` also reads ISO
# week dates (`2026-W48-7`, `2026W487`), and Python 3.11's took `2026W487xx` for a day, ignoring
# the two characters after it.
_DAY = re.compile(r"\d{4}-\d{2}-\d{2}", re.ASCII)


def parse_day(raw: str) -> dt.date:
    """A challenge date from a URL: malformed is 400, a day not yet begun is 404."""
    try:
        if not _DAY.fullmatch(raw):
            raise ValueError(raw)
        date = dt.date.fromisoformat(raw)
    except ValueError:
        raise AppError("bad_date", f"'{raw[:20]}' is not a date like 2026-11-22.") from None
    if date > clock.today():
        raise AppError("not_found", f"The challenge of {date} is not out yet.")
    return date


def challenge_for(raw_date: str, variant: str) -> DailyChallenge:
    """The challenge a URL names. Today's is made on demand; a past day must already exist."""
    check_variant(variant)
    date = parse_day(raw_date)
    if date == clock.today():
        return ensure_daily(date, variant)
    found = DailyChallenge.objects.select_related("deal").filter(date=date, variant=variant).first()
    if found is None:
        raise AppError("not_found", f"There was no {variant} challenge on {date}.")
    return found


def ranked_attempt(user: User, challenge: DailyChallenge) -> Game | None:
    """At most one row (game_one_ranked_attempt_per_daily)."""
    return the_one_row(_ranked(user).filter(daily=challenge))


def ranked_attempts(user: User, challenges: list[DailyChallenge]) -> dict[int, Game]:
    """The user's ranked attempt at each of `challenges` that they began, by challenge id: one
    query for `GET /api/daily`'s five, where asking challenge by challenge took five."""
    return {game.daily_id: game for game in _ranked(user).filter(daily__in=challenges)}


def _ranked(user: User) -> QuerySet[Game]:
    return Game.objects.select_related("deal", "daily", "owner").filter(owner=user, ranked=True)


def open_practice(user: User, challenge: DailyChallenge) -> Game | None:
    """The user's latest unfinished practice game on this challenge's deal, if any."""
    return (
        Game.objects.select_related("deal", "daily", "owner")
        .filter(owner=user, daily=challenge, ranked=False, status=Game.Status.PLAYING)
        .order_by("-started_at", "-pk")
        .first()
    )


def play_daily(user: User, challenge: DailyChallenge) -> tuple[Game, bool]:
    """Start or resume the user's one ranked attempt; a past day gives a practice game, and
    resumes the one still open (a client that calls `play` to come back to its game must not
    pile up new ones; the practice endpoint is there to start afresh).

    Returns (game, created). Two requests at once still make one attempt: the partial unique
    constraint on (owner, daily) where ranked decides, and the loser resumes the winner's game.
    Practice games have no such constraint (a player may start several on purpose), so two
    `play` requests of a past day (a double click, a retry) take turns on the player's row.
    """
    if challenge.date < clock.today():
        with transaction.atomic():  # on SQLite an IMMEDIATE one: the write lock, at once
            type(user).objects.select_for_update().filter(pk=user.pk).exists()
            resumed = open_practice(user, challenge)
            if resumed is not None:
                return resumed, False
            return start_daily_practice(user, challenge), True
    existing = ranked_attempt(user, challenge)
    if existing is not None:
        return existing, False
    try:
        with transaction.atomic():
            return start_game(user, challenge.deal, daily=challenge, ranked=True), True
    except IntegrityError:
        return ranked_attempt(user, challenge), False


def start_daily_practice(user: User, challenge: DailyChallenge) -> Game:
    """Replay a daily deal for practice: past days, or today once the ranked attempt is over."""
    if challenge.date == clock.today():
        attempt = ranked_attempt(user, challenge)
        if attempt is None or not attempt.finished:
            raise AppError(
                "forbidden",
                "Finish your ranked attempt of today's challenge before practising its deal.",
            )
    with transaction.atomic():
        return start_game(user, challenge.deal, daily=challenge, ranked=False)
