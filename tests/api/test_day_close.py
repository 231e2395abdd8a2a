"""A ranked attempt left open when its day ends counts as it stands: on the day's board, and
in its player's records (played, best par ratio, streaks) once the day is closed."""

from __future__ import annotations

import pytest

from games import clock, records
from games.models import ClosedDay, CountedAttempt, DailyChallenge

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
    ClosedDay.objects.all().delete()  # even a close that does not know the day is done
    assert records.close_day(day) == 0
    assert api.get("/api/users/alice").json()["daily"]["countess"]["played"] == 1


def test_a_finished_attempt_is_not_counted_again_when_its_day_closes(api, move_clock):  # noqa: ANN001
    game = play(api, "portuguese")
    assert api.post(f"/api/games/{game['id']}/resign").status_code == 200
    move_clock(1)
    assert records.close_days_before(clock.today()) == 0  # nothing was left open
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


def test_a_finish_after_its_day_was_closed_is_not_counted_twice(api, move_clock):  # noqa: ANN001
    """A process whose clock runs a little behind may still take the last move of a day that
    another process has closed: the attempt stays counted once, as it stood at the close."""
    game = first_legal_move(api, play(api, "countess"))
    move_clock(1)
    assert records.close_days_before(clock.today()) == 1
    move_clock(0)  # this process's clock: still the day before
    assert api.post(f"/api/games/{game['id']}/resign").status_code == 200
    countess = api.get("/api/users/alice").json()["daily"]["countess"]
    assert countess["played"] == 1


def test_a_close_that_stops_half_way_is_taken_up_where_it_stopped(
    api, other_api, move_clock, monkeypatch
):  # noqa: ANN001
    first_legal_move(api, play(api, "countess"))
    first_legal_move(other_api, play(other_api, "countess"))
    move_clock(1)
    real_count, calls = records._count, []

    def fail_on_the_second(game) -> None:  # noqa: ANN001
        calls.append(game.pk)
        if len(calls) == 2:
            raise RuntimeError("the connection dropped")
        real_count(game)

    monkeypatch.setattr(records, "_count", fail_on_the_second)
    with pytest.raises(records.CloseIncomplete):
        records.close_days_before(clock.today())
    assert CountedAttempt.objects.count() == 1  # the one that failed is left for the next close
    monkeypatch.setattr(records, "_count", real_count)
    assert records.close_days_before(clock.today()) == 1  # the one left, not the first again
    for client in (api, other_api):
        me = client.get("/api/me").json()["username"]
        assert client.get(f"/api/users/{me}").json()["daily"]["countess"]["played"] == 1


def test_two_attempts_left_open_on_a_day_closed_after_a_later_one(api, move_clock):  # noqa: ANN001
    first_legal_move(api, play(api, "countess"))
    first_legal_move(api, play(api, "barricade"))
    move_clock(1)
    game = play(api, "countess")
    assert api.post(f"/api/games/{game['id']}/resign").status_code == 200
    assert records.close_days_before(clock.today()) == 2
    profile = api.get("/api/users/alice").json()
    assert profile["current_streak"] == 2 and profile["best_streak"] == 2
    assert profile["daily"]["countess"]["played"] == 2
    assert profile["daily"]["barricade"]["current_streak"] == 1
    assert len(profile["recent"]) == 3


def test_a_day_closed_between_two_counted_days_joins_them(api, move_clock):  # noqa: ANN001
    game = play(api, "countess")
    assert api.post(f"/api/games/{game['id']}/resign").status_code == 200  # day 0: finished
    move_clock(1)
    assert records.close_days_before(clock.today()) == 0
    first_legal_move(api, play(api, "countess"))  # day 1: left open
    move_clock(2)
    game = play(api, "countess")
    assert api.post(f"/api/games/{game['id']}/resign").status_code == 200  # day 2: finished
    assert api.get("/api/users/alice").json()["current_streak"] == 1
    assert records.close_days_before(clock.today()) == 1  # day 1, late
    profile = api.get("/api/users/alice").json()
    assert profile["current_streak"] == 3 and profile["best_streak"] == 3


def test_a_players_records_are_locked_in_one_order(api, move_clock):  # noqa: ANN001
    """ "all" first, then the variant, in every transaction that counts an attempt: a batch that
    ends two of a player's attempts and a close that counts a third would otherwise each hold
    a row the other waits for (on PostgreSQL, one aborted as a deadlock)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from games.models import Game, VariantRecord

    game_id = first_legal_move(api, play(api, "spanish"))["id"]
    move_clock(1)
    game = Game.objects.select_related("daily").get(pk=game_id)
    with CaptureQueriesContext(connection) as queries:
        records._count(game)
    looked_up = [
        variant
        for q in queries.captured_queries
        if 'FROM "games_variantrecord"' in q["sql"] and q["sql"].lstrip().startswith("SELECT")
        for variant in ("all", "spanish")
        if f"'{variant}'" in q["sql"]
    ]
    assert looked_up[0] == "all" and "spanish" in looked_up, looked_up
    assert VariantRecord.objects.filter(variant__in=["all", "spanish"]).count() == 2


def test_an_attempt_started_as_its_day_was_closed_is_counted_at_the_next_close(api, move_clock):  # noqa: ANN001
    """A process whose clock runs behind (or a request that checked the date just before
    midnight) may start an attempt after another process closed its day: a day is marked
    closed only once it is two days old, so the next close still finds it."""
    day = clock.today()
    assert api.get("/api/daily").status_code == 200  # the day has its challenges
    move_clock(1)
    assert records.close_days_before(clock.today()) == 0  # a fast clock closes the day
    move_clock(0)
    first_legal_move(api, play(api, "countess"))  # a slow one takes an attempt on it
    move_clock(1)
    assert records.close_days_before(clock.today()) == 1
    assert not ClosedDay.objects.filter(date=day).exists()
    move_clock(2)
    assert records.close_days_before(clock.today()) == 0
    assert ClosedDay.objects.filter(date=day).exists()  # settled: later closes skip it
    assert api.get("/api/users/alice").json()["daily"]["countess"]["played"] == 1


def test_a_batch_counts_its_finishes_player_by_player(api, other_api, monkeypatch):  # noqa: ANN001
    """Each finish locks its player's records: a batch that ends two players' attempts takes
    them in one order (the players'), whatever order the moves came in, so two such batches
    never each hold a row the other waits for."""
    from games import services
    from games.models import Game
    from games.services import MoveRequest

    wins = []
    for client in (api, other_api):
        game = play(client, "portuguese")
        line = DailyChallenge.objects.get(date=clock.today(), variant="portuguese").line
        v = 0
        for move in line[:-1]:
            res = client.post(
                f"/api/games/{game['id']}/moves", {"move": move, "v": v}, format="json"
            )
            v = res.json()["v"]
        wins.append((Game.objects.select_related("owner").get(pk=game["id"]), line[-1], v))
    finished = []
    real = services._on_finish
    monkeypatch.setattr(services, "_on_finish", lambda g: finished.append(g.owner_id) or real(g))
    requests = [MoveRequest(g.pk, g.owner, move, v) for g, move, v in reversed(wins)]
    results = services.play_moves(requests)
    assert all(r.finished for r in results), results
    assert finished == sorted(finished) and len(finished) == 2
