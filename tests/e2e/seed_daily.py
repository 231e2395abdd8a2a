"""Migrate the end-to-end server's database and make today's five daily challenges quickly.

Run as a script against the server's database (`SQLITE_PATH=... python tests/e2e/seed_daily.py`);
one process does both, which saves a Django start-up.
All five are certified by the server's own code; Countess and Barricade A with a smaller
candidate budget than production, as in the rest of the test suite.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def main() -> None:
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "server.settings")
    import django

    django.setup()

    from django.core.management import call_command

    call_command("migrate", interactive=False, verbosity=0)

    from games import clock, daily

    # Countess and Barricade A choose the best par among candidates: a smaller real search
    # here (the same one the test suite uses), so the browser tests start in seconds.
    from games.certification import Budget
    from games.models import VARIANT_IDS

    small = Budget(candidates=2, max_nodes=5_000, time_limit=5.0)
    daily.BUDGETS.update(countess=small, barricade=small)
    today = clock.today()
    for variant in VARIANT_IDS:
        daily.ensure_daily(today, variant)
    print(f"daily challenges ready for {today}")


if __name__ == "__main__":
    main()
