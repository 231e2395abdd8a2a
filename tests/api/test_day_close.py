"""A ranked attempt left open when its day ends counts as it stands: on the day's board, and
in its player's records (played, best par ratio, streaks) once the day is closed."""

from __future__ import annotations

import datetime as dt

import pytest

from games import clock, records
from games.models import ClosedDay, DailyChallenge

pytestmark = pytest.mark.django_db


def play(api, variant: str, date: str | None = None) -> dict:  # noqa: ANN001
    res = api.post(f"/api/daily/{date or clock.today().isoformat()}/{variant}/play")
    assert res.status_code in (200, 201), res.json()
    return res.json()


def first_legal_move(api, game: dict) -> dict:  # noqa: ANN001
    move = game["state"]["legal_moves"][0]
    res = api.post(f"/api/games/{game['id']}/moves", {"move": move, "v": game["v"]}, format="json")
    assert res.status_code == 200, res.json()
    return res.json()


def test_an_attempt_left_open_counts_in_the_records_once_its_day_is_closed(api, move_clock):  # noqa: ANN001
    game = first_legal_move(api, play(api, "countess"))
    day = clock.today()
    assert api.get("/api/users/alice").json()["daily"] == {}  # open: not counted yet
    move_clock(1)
    assert records.close_days_before(clock.today()) == 1
    profile = api.get("/api/users/alice").json()
    countess = profile["daily"]["countess"]
    challenge = DailyChallenge.objects.get(date=day, variant="countess")
    assert countess["played"] == 1 and countess["wins"] == 0
    cards = sum(map(len, game["state"]["foundations"]))
    assert countess["best_par_ratio"] == round(cards / max(challenge.par_cards, 1), 4)
    assert countess["current_streak"] == 1 and profile["current_streak"] == 1
    (recent,) = profile["recent"]
    assert recent["game_id"] == game["id"] and recent["status"] == "playing"
    assert recent["day_over"] is True and recent["date"] == day.isoformat()
    alltime = api.get("/api/leaderboards/countess").json()["entries"]
    assert [(e["username"], e["wins"]) for e in alltime] == [("alice", 0)]
    # Exactly once: the day is closed now, whoever tries again.
    assert records.close_days_before(clock.today()) == 0
    assert records.close_day(day) == 0
    assert api.get("/api/users/alice").json()["daily"]["countess"]["played"] == 1


def test_a_finished_attempt_is_not_counted_again_when_its_day_closes(api, move_clock):  # noqa: ANN001
    game = play(api, "portuguese")
    assert api.post(f"/api/games/{game['id']}/resign").status_code == 200
    move_clock(1)
    assert records.close_days_before(clock.today()) == 0  # nothing was left open
    assert ClosedDay.objects.filter(date=clock.today() - dt.timedelta(days=1)).exists()
    profile = api.get("/api/users/alice").json()
    assert profile["daily"]["portuguese"]["played"] == 1
    assert "day_over" not in profile["recent"][0]


def test_a_day_is_not_closed_before_it_ends() -> None:
    with pytest.raises(ValueError):
        records.close_day(clock.today())


def test_a_day_closed_late_recounts_the_streak(api, move_clock):  # noqa: ANN001
    """The server was down at midnight: the player finished the next day's attempt before the
    day with their open attempt was closed. Counted out of order, the days still make one
    streak of two."""
    first_day = clock.today()
    first_legal_move(api, play(api, "countess"))  # left open
    move_clock(1)
    game = play(api, "portuguese")
    assert api.post(f"/api/games/{game['id']}/resign").status_code == 200
    profile = api.get("/api/users/alice").json()
    assert profile["current_streak"] == 1 and profile["best_streak"] == 1  # the first day not yet
    assert records.close_days_before(clock.today()) == 1
    profile = api.get("/api/users/alice").json()
    assert profile["current_streak"] == 2 and profile["best_streak"] == 2
    assert profile["daily"]["countess"]["current_streak"] == 1
    assert profile["daily"]["portuguese"]["current_streak"] == 1
    assert [r["date"] for r in profile["recent"]] == [
        clock.today().isoformat(),
        first_day.isoformat(),
    ]


def test_a_later_day_played_in_order_extends_the_streak(api, move_clock):  # noqa: ANN001
    first_legal_move(api, play(api, "countess"))  # left open, closed at midnight
    move_clock(1)
    assert records.close_days_before(clock.today()) == 1
    game = play(api, "countess")
    assert api.post(f"/api/games/{game['id']}/resign").status_code == 200
    profile = api.get("/api/users/alice").json()
    assert profile["current_streak"] == 2 and profile["daily"]["countess"]["played"] == 2
