"""On PostgreSQL, where transactions really run side by side: a day's close counts each open
attempt once however many processes close it, and a close never deadlocks with a finish."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable

import pytest
from django.db import connection

from games import clock, records, services
from games.models import CountedAttempt, VariantRecord
from tests.conftest import client_for

pytestmark = [
    pytest.mark.skipif(not os.environ.get("DATABASE_URL"), reason="DATABASE_URL not set"),
    pytest.mark.postgres,
    pytest.mark.django_db(transaction=True),
]


def _open_attempt(client, variant: str) -> int:  # noqa: ANN001
    """A ranked attempt of today with one move played, left open."""
    game = client.post(f"/api/daily/{clock.today().isoformat()}/{variant}/play").json()
    move = game["state"]["legal_moves"][0]
    res = client.post(f"/api/games/{game['id']}/moves", {"move": move, "v": 0}, format="json")
    assert res.status_code == 200, res.json()
    return game["id"]


def _side_by_side(*jobs: Callable[[], object]) -> list[object]:
    """Run the jobs at once, each on a thread with its own connection; their results, or the
    exceptions they raised."""
    start = threading.Barrier(len(jobs))
    results: list[object] = [None] * len(jobs)

    def run(i: int, job: Callable[[], object]) -> None:
        try:
            start.wait()
            results[i] = job()
        except Exception as exc:  # noqa: BLE001
            results[i] = exc
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(i, job)) for i, job in enumerate(jobs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    return results


def test_two_closes_at_once_count_each_attempt_once(make_user, move_clock):  # noqa: ANN001
    users = [make_user() for _ in range(4)]
    for user in users:
        _open_attempt(client_for(user), "countess")
    day = clock.today()
    move_clock(1)
    results = _side_by_side(lambda: records.close_day(day), lambda: records.close_day(day))
    assert all(isinstance(r, int) for r in results) and sum(results) == 4, results
    assert CountedAttempt.objects.count() == 4
    for user in users:
        played = VariantRecord.objects.filter(user=user).values_list("variant", "played")
        assert dict(played) == {"countess": 1, "all": 1}


def test_a_close_and_the_players_finish_at_once_both_go_through(user, move_clock):  # noqa: ANN001
    """The close counts yesterday's two open attempts of a player while the player ends today's
    attempt, each locking the player's records: both go through, and count right."""
    api = client_for(user)
    _open_attempt(api, "countess")
    _open_attempt(api, "spanish")
    day = clock.today()
    move_clock(1)
    today = api.post(f"/api/daily/{clock.today().isoformat()}/spanish/play").json()["id"]
    results = _side_by_side(
        lambda: records.close_day(day), lambda: services.resign(today, user).finished
    )
    assert results == [2, True], results
    played = dict(VariantRecord.objects.filter(user=user).values_list("variant", "played"))
    assert played == {"countess": 1, "spanish": 2, "all": 3}
