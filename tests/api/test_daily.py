"""Daily challenges over REST: the ranked attempt, its rules, and the bad requests."""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Callable
from unittest.mock import ANY

import pytest
from django.db import IntegrityError
from django.utils import timezone

from games import clock, daily, engine, services
from games.certification import WINNABLE
from games.models import VARIANT_IDS, DailyChallenge, Game, Move
from tests.conftest import client_for, play_line

pytestmark = pytest.mark.django_db


def today() -> str:
    return clock.today().isoformat()


def play(api, variant="portuguese", date=None):  # noqa: ANN001, ANN201
    return api.post(f"/api/daily/{date or today()}/{variant}/play")


def finished_attempt(owner, challenge, status, cards, moves, seconds, finished_at) -> Game:  # noqa: ANN001
    """A finished ranked attempt written straight to the database, to shape a leaderboard."""
    return Game.objects.create(
        owner=owner,
        deal=challenge.deal,
        daily=challenge,
        ranked=True,
        state={},
        status=status,
        foundation_cards=cards,
        version=moves,
        seconds=seconds,
        finished_at=finished_at,
    )


def test_ranked_attempt_starts_then_resumes(api):  # noqa: ANN001
    first = play(api)
    assert first.status_code == 201
    game = first.json()
    assert game["daily"] == {"date": today(), "variant": "portuguese", "ranked": True}
    assert game["deal"] is None  # secret until the day is over
    again = play(api)
    assert again.status_code == 200 and again.json()["id"] == game["id"]
    assert Game.objects.filter(ranked=True).count() == 1


def test_daily_deal_number_and_line_never_leak_today(api):  # noqa: ANN001
    game = play(api).json()
    challenge = DailyChallenge.objects.get(date=clock.today(), variant="portuguese")
    listing = api.get("/api/daily").json()
    for payload in (game, listing, api.get(f"/api/games/{game['id']}").json()):
        text = str(payload)
        assert f"'deal': {challenge.deal.number}" not in text
        assert "line" not in text


def test_daily_lists_five_challenges_with_my_attempt(api):  # noqa: ANN001
    play(api, "spanish")
    body = api.get("/api/daily").json()
    assert body["date"] == today()
    assert [c["variant"] for c in body["challenges"]] == [
        "portuguese",
        "spanish",
        "countess",
        "barricade",
        "chinese_freecell",
    ]
    by_variant = {c["variant"]: c for c in body["challenges"]}
    assert by_variant["spanish"]["attempt"]["status"] == "playing"
    assert by_variant["spanish"]["status"] == "playing"  # PROTOCOL.md's "attempt's status"
    assert by_variant["portuguese"]["attempt"] is None
    assert by_variant["portuguese"]["status"] is None
    assert by_variant["portuguese"]["winnable"] is True
    assert by_variant["portuguese"]["par_cards"] == 52


def test_the_daily_list_reads_a_players_five_attempts_in_one_query(api, other_api):  # noqa: ANN001
    """Every lobby opens on `GET /api/daily`: asked challenge by challenge, a player's
    attempts took five queries, one for each game whether they had begun it or not."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    for variant in ("spanish", "countess", "barricade"):
        play(api, variant)
    play(other_api, "portuguese")  # someone else's attempt is not mine
    with CaptureQueriesContext(connection) as queries:
        body = api.get("/api/daily").json()
    begun = {c["variant"]: c["attempt"] and c["attempt"]["status"] for c in body["challenges"]}
    assert begun == {
        "portuguese": None,
        "spanish": "playing",
        "countess": "playing",
        "barricade": "playing",
        "chinese_freecell": None,
    }
    reads = [q["sql"] for q in queries.captured_queries if 'FROM "games_game"' in q["sql"]]
    assert len(reads) == 1, reads


def test_the_daily_list_reads_its_ranks_in_one_query(api, other_api, user, other_user):  # noqa: ANN001
    """Each finished attempt's rank took two queries of its own (is it on the board, how many
    are ahead): ten for a player who had played all five challenges."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    when = timezone.now()
    challenges = {c.variant: c for c in daily.ensure_day(clock.today())}
    # alice's score against bob's, variant by variant: ahead, behind, tied (the earlier wins).
    shapes = {"spanish": (30, 20), "countess": (10, 40), "barricade": (25, 25)}
    for variant, (mine, theirs) in shapes.items():
        c = challenges[variant]
        finished_attempt(other_user, c, "resigned", theirs, 9, 60, when)
        finished_attempt(user, c, "resigned", mine, 9, 60, when + dt.timedelta(seconds=1))
    play(api, "portuguese")  # still playing: no rank yet
    with CaptureQueriesContext(connection) as queries:
        body = api.get("/api/daily").json()
    ranks = {c["variant"]: c["attempt"] and c["attempt"]["rank"] for c in body["challenges"]}
    assert ranks == {
        "portuguese": None,
        "spanish": 1,
        "countess": 2,
        "barricade": 2,
        "chinese_freecell": None,
    }
    reads = [q["sql"] for q in queries.captured_queries if 'FROM "games_game"' in q["sql"]]
    assert len(reads) == 2, reads  # the attempts, then their ranks


def test_certified_winnable_deals_replay_to_a_win(db):  # noqa: ANN001
    from games import engine

    for variant in WINNABLE:
        challenge = daily.ensure_daily(clock.today(), variant)
        assert challenge.winnable and challenge.par_moves == len(challenge.line)
        state = engine.replay(variant, challenge.deal.number, challenge.line)
        assert state.status == "won"


def test_W1_a_daily_deal_number_is_not_predictable_before_its_day_starts(api, settings):  # noqa: ANN001
    """The number is an HMAC of the date under a server secret (so no one computes it), no
    answer carries it before the day is over, and tomorrow's challenge is served to no one."""
    tomorrow = (clock.today() + dt.timedelta(days=1)).isoformat()
    for res in (
        api.post(f"/api/daily/{tomorrow}/countess/play"),
        api.get(f"/api/daily/{tomorrow}/countess/leaderboard"),
    ):
        assert (res.status_code, res.json()["code"]) == (404, "not_found")
    assert play(api, "countess").json()["deal"] is None
    date = dt.date(2026, 1, 1)
    a = [daily.candidate_deal(date, "portuguese", i) for i in range(3)]
    assert a == [daily.candidate_deal(date, "portuguese", i) for i in range(3)]
    settings.DAILY_SECRET = "another secret"
    assert a != [daily.candidate_deal(date, "portuguese", i) for i in range(3)]
    assert daily.candidate_deal(date, "spanish", 0) != daily.candidate_deal(date, "countess", 0)


def test_daily_deals_come_from_the_whole_range_a_client_may_ask_for():
    """A small range lets the visible cards name the deal, and so the face-down stock: the
    candidates must spread over 1 to 2^53 - 1, the API's own limit, not stop at 10^9."""
    deals = [
        daily.candidate_deal(dt.date(2026, 1, 1) + dt.timedelta(days=d), variant, i)
        for d in range(10)
        for variant in ("countess", "barricade")
        for i in range(3)
    ]
    assert all(1 <= n <= services.MAX_DEAL for n in deals)
    assert services.MAX_DEAL == 2**53 - 1
    # 60 draws from 2^53 numbers: the largest falls under 2^52 with odds of 2^-60.
    assert max(deals) > 2**52


def test_one_challenge_per_day_and_variant_is_a_constraint(db):  # noqa: ANN001
    challenge = daily.ensure_daily(clock.today(), "portuguese")
    assert daily.ensure_daily(clock.today(), "portuguese").pk == challenge.pk
    with pytest.raises(IntegrityError):
        DailyChallenge.objects.create(
            date=challenge.date,
            variant="portuguese",
            deal=challenge.deal,
            winnable=True,
            par_cards=52,
            par_moves=1,
            line=[],
        )


def test_concurrent_first_play_makes_one_attempt(api, user, monkeypatch):  # noqa: ANN001
    challenge = daily.ensure_daily(clock.today(), "portuguese")
    first, created = daily.play_daily(user, challenge)
    assert created
    # The second request looked before the first one committed: it saw no attempt, then its
    # insert hits the unique constraint and it resumes the first one's game.
    calls: list[int] = []
    real = daily.ranked_attempt

    def racing(u, c):  # noqa: ANN001, ANN202
        calls.append(1)
        return None if len(calls) == 1 else real(u, c)

    monkeypatch.setattr(daily, "ranked_attempt", racing)
    second, created = daily.play_daily(user, challenge)
    assert not created and second.pk == first.pk
    assert Game.objects.filter(ranked=True, owner=user).count() == 1


@pytest.mark.parametrize(
    ("path", "status", "code"),
    [
        ("/api/daily/2026-13-45/portuguese/play", 400, "bad_date"),
        ("/api/daily/yesterday/portuguese/play", 400, "bad_date"),
        # ISO week dates are not the API's days; one with junk after it was read as a day.
        ("/api/daily/2026W487xx/portuguese/play", 400, "bad_date"),
        ("/api/daily/2026-W48-7/portuguese/play", 400, "bad_date"),
        ("/api/daily/2026W487/portuguese/play", 400, "bad_date"),
        ("/api/daily/{today}/klondike/play", 404, "unknown_variant"),
        ("/api/daily/{future}/portuguese/play", 404, "not_found"),
        ("/api/daily/2001-01-01/portuguese/play", 404, "not_found"),
    ],
)
def test_bad_daily_requests(api, path, status, code):  # noqa: ANN001
    future = (clock.today() + dt.timedelta(days=1)).isoformat()
    res = api.post(path.format(today=today(), future=future))
    assert res.status_code == status and res.json()["code"] == code
    res = api.get(path.replace("/play", "/leaderboard").format(today=today(), future=future))
    assert res.status_code == status and res.json()["code"] == code


def test_another_users_ranked_attempt_cannot_be_played_but_may_be_watched(api, other_api):  # noqa: ANN001
    game = play(api).json()
    move = game["state"]["legal_moves"][0]
    res = other_api.post(f"/api/games/{game['id']}/moves", {"move": move, "v": 0}, format="json")
    assert res.status_code == 403 and res.json()["code"] == "forbidden"
    # PROTOCOL.md: other signed-in users may watch, read only; the deal number stays hidden.
    watched = other_api.get(f"/api/games/{game['id']}")
    assert watched.status_code == 200 and watched.json()["deal"] is None
    assert watched.json()["state"] == game["state"]
    assert other_api.get(f"/api/games/{game['id']}/moves").status_code == 200
    assert api.get("/api/daily").json()["watch_after_own_attempt"] is False


def test_a_server_may_hide_todays_games_until_the_watchers_own_attempt_is_over(
    api, other_api, settings
):  # noqa: ANN001
    """WATCH_AFTER_OWN_ATTEMPT: a game on today's deal shows the deal as played (a Countess
    stock as it is drawn), so such a server opens it only to players done with theirs."""
    settings.WATCH_AFTER_OWN_ATTEMPT = True
    assert api.get("/api/daily").json()["watch_after_own_attempt"] is True
    game = play(api).json()
    for path in ("", "/moves"):
        res = other_api.get(f"/api/games/{game['id']}{path}")
        assert res.status_code == 403 and res.json()["code"] == "forbidden"
    other_api.post(f"/api/games/{play(other_api).json()['id']}/resign")
    assert other_api.get(f"/api/games/{game['id']}").status_code == 200
    # A practice game is open to all, and a past day's games once the day is over.
    practice = api.post("/api/games", {"variant": "countess"}, format="json").json()["id"]
    assert other_api.get(f"/api/games/{practice}").status_code == 200


def test_no_hints_in_a_ranked_attempt(api):  # noqa: ANN001
    game = play(api).json()
    res = api.get(f"/api/games/{game['id']}/hint")
    assert res.status_code == 403 and res.json()["code"] == "forbidden"


def test_hint_in_practice_is_a_legal_move(api):  # noqa: ANN001
    game = api.post("/api/games", {"variant": "portuguese", "deal": 3}, format="json").json()
    hint = api.get(f"/api/games/{game['id']}/hint").json()["move"]
    assert hint in game["state"]["legal_moves"]


def test_ranked_undo_counts_as_a_move_but_not_for_a_draw(api):  # noqa: ANN001
    game = play(api, "countess").json()
    gid = game["id"]
    state = api.post(f"/api/games/{gid}/moves", {"move": "draw", "v": 0}, format="json").json()
    res = api.post(f"/api/games/{gid}/undo", {"v": 1}, format="json")
    assert res.status_code == 400 and "draw" in res.json()["detail"]
    others = [m for m in state["state"]["legal_moves"] if m != "draw" and "-f" not in m]
    if others:  # a non-draw move can be undone, and the undo counts
        after = api.post(
            f"/api/games/{gid}/moves", {"move": others[0], "v": 1}, format="json"
        ).json()
        undone = api.post(f"/api/games/{gid}/undo", {"v": 2}, format="json").json()
        assert undone["v"] == 3 and undone["state"]["moves"] == 3
        assert after["state"]["moves"] == 2


def todays_deal_with_a_first_move(variant: str, wanted: Callable[[str], bool]) -> int:
    """Make today's challenge of `variant` the first deal with a `wanted` first move: its
    number."""
    number = next(
        n
        for n in range(1, 1000)
        if any(wanted(m) for m in engine.new_game(variant, n).legal_moves())
    )
    daily.ensure_day(clock.today())
    challenge = DailyChallenge.objects.get(date=clock.today(), variant=variant)
    challenge.deal = services.get_deal(variant, number)
    challenge.save(update_fields=["deal"])
    return number


def test_ranked_undo_refuses_a_play_from_the_stock_that_showed_the_next_card(api):  # noqa: ANN001
    """Barricade A plays from its stock's face-up top: the card beneath then shows, and undoing
    the play would hide it again, a free look at the stock."""
    todays_deal_with_a_first_move("barricade", lambda m: m.startswith("stock-"))
    game = play(api, "barricade").json()
    gid = game["id"]
    move = next(m for m in game["state"]["legal_moves"] if m.startswith("stock-"))
    after = api.post(f"/api/games/{gid}/moves", {"move": move, "v": 0}, format="json").json()
    assert after["state"]["stock"]["top"] != game["state"]["stock"]["top"]
    res = api.post(f"/api/games/{gid}/undo", {"v": 1}, format="json")
    assert res.status_code == 400 and res.json()["code"] == "illegal_move"
    assert "turned a card up" in res.json()["detail"]
    assert api.get(f"/api/games/{gid}").json()["v"] == 1  # nothing changed


def test_ranked_undo_refuses_a_move_to_a_foundation_as_C3_keeps_it_there(api):  # noqa: ANN001
    """RULES.md C3: a card on a foundation never leaves it. A practice game's undo takes any
    move back; a ranked attempt, ranked by its foundation cards, keeps to the rule."""
    number = todays_deal_with_a_first_move("portuguese", lambda m: "-f" in m)
    game = play(api, "portuguese").json()
    gid = game["id"]
    move = next(m for m in game["state"]["legal_moves"] if "-f" in m)
    api.post(f"/api/games/{gid}/moves", {"move": move, "v": 0}, format="json")
    res = api.post(f"/api/games/{gid}/undo", {"v": 1}, format="json")
    assert res.status_code == 400 and res.json()["code"] == "illegal_move"
    assert "a card on a foundation stays there" in res.json()["detail"]
    assert api.get(f"/api/games/{gid}").json()["v"] == 1  # nothing changed

    practice = api.post(
        "/api/games", {"variant": "portuguese", "deal": number}, format="json"
    ).json()
    api.post(f"/api/games/{practice['id']}/moves", {"move": move, "v": 0}, format="json")
    undone = api.post(f"/api/games/{practice['id']}/undo", {"v": 1}, format="json")
    assert undone.status_code == 200
    assert undone.json()["state"]["foundations"] == practice["state"]["foundations"]


def test_practice_of_todays_deal_only_after_the_ranked_attempt(api):  # noqa: ANN001
    url = f"/api/daily/{today()}/portuguese/practice"
    assert api.post(url).status_code == 403
    game = play(api).json()
    assert api.post(url).status_code == 403  # nor while the attempt is open
    assert not Game.objects.filter(ranked=False).exists()
    api.post(f"/api/games/{game['id']}/resign")
    res = api.post(url)
    assert res.status_code == 201
    practice = res.json()
    assert practice["daily"]["ranked"] is False and practice["deal"] is None
    assert play(api).json()["id"] == game["id"]  # only the first counts


def test_win_with_the_stored_line_ranks_first(api, other_api):  # noqa: ANN001
    game = play(api).json()
    line = DailyChallenge.objects.get(date=clock.today(), variant="portuguese").line
    final = play_line(api, game["id"], line)
    assert final["status"] == "won" and final["state"]["status"] == "won"
    assert final["finished_at"] is not None and final["rank"] == 1
    # A second player resigns at once: ranked below.
    other = play(other_api).json()
    assert other["rank"] is None  # still playing
    other_api.post(f"/api/games/{other['id']}/resign")
    # A finished attempt opened later still says where it stands; the list of games does not.
    assert other_api.get(f"/api/games/{other['id']}").json()["rank"] == 2
    assert api.get(f"/api/games/{game['id']}").json()["rank"] == 1
    assert [g["rank"] for g in api.get("/api/games").json()] == [None]
    board = other_api.get(f"/api/daily/{today()}/portuguese/leaderboard").json()
    assert [(e["rank"], e["username"], e["status"]) for e in board["entries"]] == [
        (1, "alice", "won"),
        (2, "bob", "resigned"),
    ]
    assert board["entries"][0]["moves"] == len(line)
    assert board["entries"][0]["finished_at"] == final["finished_at"]  # one format: ...Z
    late = api.post(f"/api/games/{game['id']}/resign")  # a win stands
    assert late.status_code == 409 and late.json()["code"] == "game_over"
    assert Game.objects.get(pk=game["id"]).status == "won"
    assert board["me"]["rank"] == 2
    daily_list = api.get("/api/daily").json()
    attempt = next(c for c in daily_list["challenges"] if c["variant"] == "portuguese")["attempt"]
    assert attempt["status"] == "won" and attempt["rank"] == 1
    profile = api.get("/api/users/ALICE").json()
    assert profile["daily"]["portuguese"]["wins"] == 1
    assert profile["current_streak"] == 1 and profile["recent"][0]["status"] == "won"
    alltime = api.get("/api/leaderboards/portuguese").json()
    assert alltime["entries"][0]["username"] == "alice"
    assert alltime["entries"][0]["wins"] == 1 and alltime["entries"][0]["best_par_ratio"] == 1.0


@pytest.mark.parametrize("after_own_attempt", [False, True])
def test_live_games_lists_other_players_games_in_play_that_one_may_watch(
    api, other_api, move_clock, settings, after_own_attempt: bool
):  # noqa: ANN001
    """Any game in play by default (PROTOCOL.md: anyone signed in may watch); with
    WATCH_AFTER_OWN_ATTEMPT, today's ranked attempt only once alice's own is over."""
    settings.WATCH_AFTER_OWN_ATTEMPT = after_own_attempt

    def live() -> set[int]:
        return {g["id"] for g in api.get("/api/games/live").json()}

    practice = other_api.post("/api/games", {"variant": "countess"}, format="json").json()["id"]
    ranked = play(other_api).json()["id"]
    mine = api.post("/api/games", {"variant": "countess"}, format="json").json()["id"]
    over = other_api.post("/api/games", {"variant": "countess"}, format="json").json()["id"]
    other_api.post(f"/api/games/{over}/resign")
    if after_own_attempt:
        assert live() == {practice}
        api.post(f"/api/games/{play(api).json()['id']}/resign")
    assert live() == {practice, ranked}
    assert api.get(f"/api/games/{ranked}").status_code == 200  # the link works
    # The next day the attempt is closed (it counts as it stands): no longer live.
    date = today()
    move_clock(1)
    replay = play(other_api, date=date).json()["id"]  # a past deal plays as practice
    assert live() == {practice, replay} and mine not in live()


def test_the_live_list_sorts_its_games_before_reading_their_owners_deals_and_days(api, other_api):  # noqa: ANN001
    """Every lobby asks for the live list every 10 s, and its candidates are every game played
    in the last 10 minutes: joined to their deals, days and owners before the sort, 1,333 of
    them took 17.8 ms of PostgreSQL's time against 2.3 with the joins after it."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    practice = other_api.post("/api/games", {"variant": "countess"}, format="json").json()["id"]
    ranked = play(other_api).json()["id"]
    api.post(f"/api/games/{play(api).json()['id']}/resign")
    with CaptureQueriesContext(connection) as queries:
        listed = api.get("/api/games/live").json()
    assert {g["id"] for g in listed} == {practice, ranked}
    assert {g["owner"] for g in listed} == {"bob"} and {g["daily"] for g in listed} == {
        None,
        today(),
    }
    (ranking,) = [q["sql"] for q in queries.captured_queries if "COALESCE" in q["sql"]]
    assert 'ON ("games_game".' not in ranking  # no join of the listed games (subqueries: U0)


def test_live_games_name_their_deal_unless_it_is_todays_daily(api, other_api):  # noqa: ANN001
    """Two games of one player tell apart by their deal; a daily deal's number stays secret
    until its day is over, as it does on the game itself (and a face-down stock's until its
    game is over: test_hidden_cards)."""
    practice = other_api.post("/api/games", {"variant": "spanish", "deal": 77}, format="json")
    ranked = play(other_api).json()["id"]
    api.post(f"/api/games/{play(api).json()['id']}/resign")  # alice may watch the daily now
    deals = {g["id"]: g["deal"] for g in api.get("/api/games/live").json()}
    assert deals == {practice.json()["id"]: 77, ranked: None}
    assert other_api.get(f"/api/games/{ranked}").json()["deal"] is None


def test_live_games_are_the_recently_played_most_recent_first(api, other_api):  # noqa: ANN001
    """A game nobody has touched for ten minutes is left, not live (at half an hour, as it
    was, a reviewer watched games long abandoned), and one never played is
    live for five minutes after it starts; the list leads with the game played last (a game
    with no move yet ranks by its start: on PostgreSQL a descending order put those first,
    however old)."""
    import datetime as dt

    from django.utils import timezone

    def new(variant: str) -> int:
        # Deal 1: a random deal may be stuck after three moves (about one in a thousand), and
        # a stuck game is not live.
        body = {"variant": variant, "deal": 1}
        return other_api.post("/api/games", body, format="json").json()["id"]

    def played_at(pk: int, started: dt.timedelta, moved: dt.timedelta) -> None:
        """Three moves, the last `moved` ago, in a game started `started` ago."""
        for v in range(3):
            state = other_api.get(f"/api/games/{pk}").json()["state"]
            move = {"move": state["legal_moves"][0], "v": v}
            assert other_api.post(f"/api/games/{pk}/moves", move, format="json").status_code == 200
        Game.objects.filter(pk=pk).update(started_at=now - started, last_move_at=now - moved)
        Move.objects.filter(game_id=pk).update(at=now - moved)

    left, started, played = new("countess"), new("spanish"), new("portuguese")
    opened, paused, stale = new("barricade"), new("chinese_freecell"), new("spanish")
    now = timezone.now()
    Game.objects.filter(pk=left).update(started_at=now - dt.timedelta(hours=5))
    Game.objects.filter(pk=started).update(started_at=now - dt.timedelta(minutes=4))
    Game.objects.filter(pk=opened).update(started_at=now - dt.timedelta(minutes=6))
    # Played in this order, as the moves' times say (a later move has a later row).
    played_at(stale, dt.timedelta(hours=3), dt.timedelta(minutes=15))  # played, then left
    played_at(paused, dt.timedelta(hours=1), dt.timedelta(minutes=8))
    played_at(played, dt.timedelta(hours=2), dt.timedelta(minutes=1))
    assert [g["id"] for g in api.get("/api/games/live").json()] == [played, started, paused]


def test_the_live_list_reads_only_the_latest_moves(api, other_api, monkeypatch):  # noqa: ANN001
    """The games of the latest moves are found from the newest move back, a chunk at a time,
    however many games were left open long ago."""
    from games import selectors

    monkeypatch.setattr(selectors, "_LIVE_CHUNK", 2)
    ids = [
        other_api.post("/api/games", {"variant": "spanish", "deal": d}, format="json").json()["id"]
        for d in (1, 2, 3)
    ]
    for pk in ids:
        move = other_api.get(f"/api/games/{pk}").json()["state"]["legal_moves"][0]
        other_api.post(f"/api/games/{pk}/moves", {"move": move, "v": 0}, format="json")
    import datetime as dt

    from django.utils import timezone

    Move.objects.filter(game_id=ids[0]).update(at=timezone.now() - dt.timedelta(hours=1))
    since = timezone.now() - dt.timedelta(minutes=30)
    assert selectors.recently_played(since) == set(ids[1:])
    assert selectors.recently_played(since, most=2) == set(ids[1:])
    assert {g["id"] for g in api.get("/api/games/live").json()} == set(ids[1:])


def test_past_day_reveals_the_deal_and_plays_as_practice(api, move_clock):  # noqa: ANN001
    game = play(api).json()
    challenge = DailyChallenge.objects.get(date=clock.today(), variant="portuguese")
    date = challenge.date.isoformat()
    move_clock(1)
    revealed = api.get(f"/api/games/{game['id']}").json()
    assert revealed["deal"] == challenge.deal.number
    # It counts as it stands: still `playing`, but no move is taken, so none is legal.
    assert revealed["state"]["status"] == "playing" and revealed["state"]["day_over"] is True
    assert revealed["state"]["legal_moves"] == [] and game["state"]["legal_moves"]
    assert "day_over" not in game["state"]
    move = game["state"]["legal_moves"][0]
    res = api.post(f"/api/games/{game['id']}/moves", {"move": move, "v": 0}, format="json")
    assert res.status_code == 409 and res.json()["code"] == "game_over"
    # The open attempt counts as it stands on the past board.
    board = api.get(f"/api/daily/{date}/portuguese/leaderboard").json()
    assert board["total"] == 1 and board["entries"][0]["status"] == "playing"
    assert revealed["rank"] == board["entries"][0]["rank"] == 1  # the game says its place too
    practice = api.post(f"/api/daily/{date}/portuguese/play")
    assert practice.status_code == 201
    assert practice.json()["daily"]["ranked"] is False
    assert practice.json()["deal"] == challenge.deal.number
    # `play` again resumes that practice game, as it resumes a ranked attempt ...
    again = api.post(f"/api/daily/{date}/portuguese/play")
    assert (again.status_code, again.json()["id"]) == (200, practice.json()["id"])
    # ... until it is over; the practice endpoint always starts a new one.
    api.post(f"/api/games/{practice.json()['id']}/resign")
    fresh = api.post(f"/api/daily/{date}/portuguese/play")
    assert fresh.status_code == 201 and fresh.json()["id"] != practice.json()["id"]
    extra = api.post(f"/api/daily/{date}/portuguese/practice")
    assert extra.status_code == 201 and extra.json()["id"] != fresh.json()["id"]


def test_leaderboard_order_pagination_and_my_entry(api, make_user, user):  # noqa: ANN001
    from django.utils import timezone

    challenge = daily.ensure_daily(clock.today(), "countess")
    now = timezone.now()
    specs = [  # (foundation cards, moves, seconds, finished offset)
        (10, 50, 100, 5),
        (12, 80, 300, 4),
        (10, 40, 500, 3),
        (10, 40, 90, 2),
        (10, 40, 90, 1),
    ]
    expected, players = [], []
    for i, (cards, moves, secs, offset) in enumerate(specs):
        players.append(make_user(f"p{i}"))
        finished_attempt(
            players[-1],
            challenge,
            "stuck",
            cards,
            moves,
            secs,
            now - dt.timedelta(minutes=offset),
        )
        expected.append((f"p{i}", cards, moves, secs, -offset))
    finished_attempt(user, challenge, "resigned", 0, 1, 1, now)
    expected.append(("alice", 0, 1, 1, 0))
    order = [e[0] for e in sorted(expected, key=lambda e: (-e[1], e[2], e[3], e[4]))]
    assert order == ["p1", "p3", "p4", "p2", "p0", "alice"]
    url = f"/api/daily/{today()}/countess/leaderboard"
    page1 = api.get(url, {"page": 1, "page_size": 4}).json()
    page2 = api.get(url, {"page": 2, "page_size": 4}).json()
    names = [e["username"] for e in page1["entries"] + page2["entries"]]
    assert names == order
    assert [e["rank"] for e in page1["entries"] + page2["entries"]] == [1, 2, 3, 4, 5, 6]
    assert page1["total"] == 6 and page1["me"]["rank"] == 6 and page1["me"]["username"] == "alice"
    # Each player's own rank, read apart from the board (`me`), is where the board has them:
    # three of them tie on cards, and two of those on moves.
    for player in players:
        me = client_for(player).get(url).json()["me"]
        assert me["rank"] == order.index(player.username) + 1, me
    assert api.get(url, {"page_size": 500}).status_code == 400
    assert api.get(url, {"page": "x"}).status_code == 400


def test_leaderboard_queries_do_not_grow_with_entries(
    api, make_user, django_assert_max_num_queries
):  # noqa: ANN001, E501
    from django.utils import timezone

    challenge = daily.ensure_daily(clock.today(), "countess")
    url = f"/api/daily/{today()}/countess/leaderboard"

    def add(n: int) -> None:
        for i in range(n):
            finished_attempt(make_user(), challenge, "stuck", i % 9, i, i, timezone.now())

    add(3)
    with django_assert_max_num_queries(8):
        assert len(api.get(url).json()["entries"]) == 3
    add(30)
    with django_assert_max_num_queries(8):
        assert len(api.get(url).json()["entries"]) == 20
    with django_assert_max_num_queries(8):
        api.get("/api/users/alice")
    with django_assert_max_num_queries(6):
        api.get("/api/leaderboards/countess")


def test_a_board_reads_no_stored_position_and_only_its_pages_players(api, make_user, user):  # noqa: ANN001
    """A game row holds its position (about 0.5 KB of JSON) that no board shows, and a full
    board has 10,000 players of whom a page shows 20: reading both made page 250 of a board
    twice as slow on PostgreSQL (bench/leaderboard.py)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext
    from django.utils import timezone

    challenge = daily.ensure_daily(clock.today(), "countess")
    for i in range(5):
        finished_attempt(make_user(f"b{i}"), challenge, "stuck", i, 10, 10, timezone.now())
    finished_attempt(user, challenge, "stuck", 9, 10, 10, timezone.now())
    with CaptureQueriesContext(connection) as queries:
        body = api.get(f"/api/daily/{today()}/countess/leaderboard", {"page_size": 2}).json()
    assert [e["username"] for e in body["entries"]] == ["alice", "b4"]
    assert body["me"]["username"] == "alice" and body["me"]["rank"] == 1
    games = [q["sql"] for q in queries.captured_queries if '"games_game"' in q["sql"]]
    assert games and not [sql for sql in games if '"games_game"."state"' in sql]
    ranked = [sql for sql in games if 'ORDER BY "games_game"."foundation_cards" DESC' in sql]
    assert len(ranked) == 1 and "accounts_user" not in ranked[0]


def test_certification_runs_in_a_worker_process(settings):  # noqa: ANN001
    from games import engine

    settings.DAILY_CERTIFY_IN_PROCESS_POOL = True
    date = dt.date(2026, 1, 2)
    cert = daily.run_certify(date, "spanish")
    assert cert.winnable
    assert cert.deal == daily.candidate_deal(date, "spanish", cert.candidates_tried - 1)
    assert engine.replay("spanish", cert.deal, cert.line).status == "won"


def test_a_days_missing_challenges_are_certified_side_by_side(settings):  # noqa: ANN001
    """Begun together on the pool's processes, each waited for by its own run_certify: the
    same deals as one by one (the solver's budget is in nodes, not seconds)."""
    settings.DAILY_CERTIFY_IN_PROCESS_POOL = True
    date = dt.date(2026, 3, 4)
    daily.ensure_daily(date, "spanish")  # one made already: not certified again
    made = daily.ensure_day(date)
    assert [c.variant for c in made] == list(VARIANT_IDS)
    assert daily._started == {}  # every job begun ahead was waited for
    settings.DAILY_CERTIFY_IN_PROCESS_POOL = False
    for challenge in made:
        assert challenge.deal.number == daily.certify(date, challenge.variant).deal


@pytest.mark.django_db(transaction=True)
def test_two_first_requests_share_each_certification(pool_submissions):  # noqa: ANN001
    """The start-up job and a first request (or two first requests) at once: each challenge is
    certified once, and nothing begun is left behind."""
    import threading
    import time

    from django.db import connections

    date = dt.date(2026, 3, 9)

    def first_request() -> None:
        try:
            daily.ensure_day(date)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=first_request) for _ in range(2)]
    for t in threads:
        t.start()
        time.sleep(0.05)  # the second comes while the first waits for its first certificate
    for t in threads:
        t.join()
    assert DailyChallenge.objects.filter(date=date).count() == len(VARIANT_IDS)
    assert pool_submissions == dict.fromkeys(VARIANT_IDS, 1)
    assert daily._started == {}


def test_a_challenge_stored_since_a_request_read_its_day_is_not_begun_again(settings, monkeypatch):  # noqa: ANN001
    """A request reads the day (none made), another stores a challenge and forgets its job,
    then the first begins the day's missing certifications: it began the stored one again, a
    whole certification for nothing (seen as a flaky count in the test above)."""
    settings.DAILY_CERTIFY_IN_PROCESS_POOL = True
    submitted: list[str] = []
    monkeypatch.setattr(daily, "_submit", lambda date, variant: submitted.append(variant))
    monkeypatch.setattr(daily, "_started", {})  # this test's own, whatever it leaves
    monkeypatch.setattr(daily, "_stored", set())
    date = dt.date(2026, 3, 10)
    daily._done_with(date, "portuguese", stored=True)  # stored by the other request
    daily._done_with(date, "spanish")  # its job failed: not stored
    daily.start_certifying(date, ["portuguese", "spanish"])  # the first request, on what it read
    assert submitted == ["spanish"]


def test_a_certification_worker_that_died_is_replaced(settings):  # noqa: ANN001
    import os
    import signal

    settings.DAILY_CERTIFY_IN_PROCESS_POOL = True
    date = dt.date(2026, 1, 2)
    first = daily.run_certify(date, "spanish")
    broken = daily._certify_pool()
    for pid in list(broken._processes):  # the worker is killed, as an out-of-memory kill would
        os.kill(pid, signal.SIGKILL)
    # The pool learns of it at once or at the next job: either way the day is certified.
    assert daily.run_certify(date, "spanish") == dataclasses.replace(first, seconds=ANY)
    assert daily.run_certify(date + dt.timedelta(days=1), "spanish").winnable
    assert daily._certify_pool() is not broken


@pytest.mark.parametrize("variant", ["spanish", "barricade", "chinese_freecell"])
def test_tidy_line_keeps_the_result_in_fewer_moves(variant):  # noqa: ANN001
    import random

    from games import engine
    from games.certification import tidy_line

    rng = random.Random(5)
    state, line, best = engine.new_game(variant, 9), [], 0
    for _ in range(300):  # a wandering random line, as a search can produce
        if not state.legal_moves():
            break
        move = rng.choice(state.legal_moves())
        state = state.apply(move)
        line.append(move)
        best = max(best, state.foundation_count)
    tidy = tidy_line(variant, 9, line)
    assert engine.replay(variant, 9, tidy).foundation_count == best
    assert len(tidy) < len(line)


def test_a_stuck_ranked_attempt_cannot_be_undone(api):  # noqa: ANN001
    """A stuck practice game may be taken back into play; a ranked attempt's ending stands."""
    game = play(api).json()
    move = game["state"]["legal_moves"][0]
    res = api.post(f"/api/games/{game['id']}/moves", {"move": move, "v": 0}, format="json")
    assert res.status_code == 200
    # As if that move left none.
    Game.objects.filter(pk=game["id"]).update(status="stuck", finished_at=timezone.now())
    res = api.post(f"/api/games/{game['id']}/undo", {"v": 1}, format="json")
    assert res.status_code == 409 and res.json()["code"] == "game_over"
    assert Game.objects.get(pk=game["id"]).status == "stuck"


def test_the_lobby_names_the_day_its_challenges_are_of_across_midnight(
    api, move_clock, monkeypatch
):  # noqa: ANN001
    """Midnight may pass while the day's challenges are made (certifying takes seconds): the
    answer's date is still the day of the challenges it lists."""
    real = daily.ensure_day

    def midnight_passes(day):  # noqa: ANN001, ANN202
        made = real(day)
        move_clock(1)
        return made

    monkeypatch.setattr(daily, "ensure_day", midnight_passes)
    body = api.get("/api/daily").json()
    assert {c["date"] for c in body["challenges"]} == {body["date"]}


def test_a_players_attempts_are_read_without_an_order_their_unique_index_need_not_give(api, user):  # noqa: ANN001
    """A ranked attempt is one row per player and day (game_one_ranked_attempt_per_daily):
    ordered by id, PostgreSQL could walk a player's every game newest first to find it, five
    times for `GET /api/daily` (1.7 ms each for a player of 2,000 games, in a review)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    api.post(f"/api/games/{play(api).json()['id']}/resign")
    with CaptureQueriesContext(connection) as queries:
        assert api.get("/api/daily").status_code == 200
        board = api.get(f"/api/daily/{today()}/portuguese/leaderboard").json()
    assert board["me"]["username"] == user.username
    mine = [
        q["sql"]
        for q in queries.captured_queries
        if '"games_game"."owner_id" = ' in q["sql"] and '"games_game"."ranked"' in q["sql"]
    ]
    assert len(mine) == 2 and not [sql for sql in mine if "ORDER BY" in sql]  # list, board
