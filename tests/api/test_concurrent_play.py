"""Two `play` requests at once of one challenge, on real threads and real transactions."""

from __future__ import annotations

import contextlib
import threading

import pytest
from django.db import connections

from games import clock, daily
from games.models import Game

pytestmark = pytest.mark.django_db(transaction=True)


def test_two_plays_at_once_of_a_past_day_make_one_practice_game(user, move_clock, monkeypatch):  # noqa: ANN001
    """A double click or a retry of `play` for a past day: one practice game, which both
    requests answer with (the second resumes it), not two. Each request waits a moment after
    its look for the other to look too; before the lock both saw none and both started one."""
    challenge = daily.ensure_daily(clock.today(), "portuguese")
    move_clock(1)  # the challenge's day is over: `play` gives (or resumes) a practice game
    real = daily.open_practice
    both_looked = threading.Barrier(2, timeout=0.5)

    def looking(u, c):  # noqa: ANN001, ANN202
        found = real(u, c)
        with contextlib.suppress(threading.BrokenBarrierError):
            both_looked.wait()  # the other's look, if it can come before this write
        return found

    monkeypatch.setattr(daily, "open_practice", looking)
    results: list[tuple[Game, bool]] = []

    def request() -> None:
        try:
            results.append(daily.play_daily(user, challenge))
        finally:
            connections.close_all()

    threads = [threading.Thread(target=request) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    games = Game.objects.filter(owner=user, daily=challenge, ranked=False)
    assert games.count() == 1, list(games.values_list("pk", flat=True))
    assert sorted(created for _, created in results) == [False, True]
    assert {game.pk for game, _ in results} == {games.get().pk}
