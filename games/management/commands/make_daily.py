"""Make the daily challenges ahead of time: `manage.py make_daily [--date D] [--days N]`."""

from __future__ import annotations

import datetime as dt
import sys
import time

from django.core.management.base import BaseCommand, CommandError

from games import clock, daily
from games.models import VARIANT_IDS
from server.errors import AppError


def progress(done: int, total: int, label: str, width: int = 30) -> str:
    filled = int(width * done / total) if total else width
    return f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} {label:<40}"


class Command(BaseCommand):
    help = "Certify and store the daily challenge of every variant for one or more days."

    def add_arguments(self, parser) -> None:  # noqa: ANN001
        parser.add_argument("--date", help="first day, YYYY-MM-DD (default: today, UTC)")
        parser.add_argument("--days", type=int, default=1, help="how many days (default 1)")
        parser.add_argument(
            "--variant",
            choices=VARIANT_IDS,
            action="append",
            help="only these variants (repeatable)",
        )

    def handle(self, *args, date=None, days=1, variant=None, **options) -> None:  # noqa: ANN001
        try:
            start = dt.date.fromisoformat(date) if date else clock.today()
        except ValueError as exc:
            raise CommandError(f"--date must look like 2026-11-22, not {date!r}") from exc
        if days < 1:
            raise CommandError("--days must be at least 1")
        variants = variant or VARIANT_IDS
        jobs = [(start + dt.timedelta(d), v) for d in range(days) for v in variants]
        tty = sys.stdout.isatty()
        started = time.perf_counter()
        made: dict[dt.date, dict] = {}  # per day, the challenges made before this run
        failed: list[str] = []
        for i, (day, v) in enumerate(jobs):
            if day not in made:  # the day's missing challenges, certified side by side
                made[day] = daily.begin_missing(day, variants)
            if tty:
                self.stdout.write(progress(i, len(jobs), f"{day} {v}"), ending="")
                self.stdout.flush()
            existed = v in made[day]
            t0 = time.perf_counter()
            try:
                challenge = daily.ensure_daily(day, v)
            except AppError as exc:  # the others are still made; the command fails at the end
                failed.append(f"{day} {v}")
                self.stderr.write(f"{day} {v:<17} {exc.detail}")
                continue
            note = "exists" if existed else f"certified, waited {time.perf_counter() - t0:.1f}s"
            line = (
                f"{day} {v:<17} par {challenge.par_cards} cards / {challenge.par_moves} "
                f"moves, {'winnable' if challenge.winnable else 'best par'} ({note})"
            )
            if tty:
                self.stdout.write("\r" + " " * 80 + "\r", ending="")
            self.stdout.write(line)
        if tty:
            self.stdout.write(progress(len(jobs), len(jobs), "done"))
        if failed:
            raise CommandError(f"{len(failed)} of {len(jobs)} not certified: {', '.join(failed)}")
        self.stdout.write(
            self.style.SUCCESS(
                f"{len(jobs)} challenges ready in {time.perf_counter() - started:.1f}s"
            )
        )
