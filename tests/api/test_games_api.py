"""Practice games over REST: start, read, move, undo, resign, and every refusal."""

from __future__ import annotations

import pytest
from django.db import InterfaceError, OperationalError

from games.models import Game, Move
from tests.conftest import layer_down

pytestmark = pytest.mark.django_db


def new_game(api, variant="portuguese", deal=1):  # noqa: ANN001, ANN201
    res = api.post("/api/games", {"variant": variant, "deal": deal}, format="json")
    assert res.status_code == 201, res.content
    return res.json()


def test_start_practice_game_returns_protocol_shape(api):  # noqa: ANN001
    game = new_game(api)
    assert set(game) >= {
        "id",
        "variant",
        "deal",
        "daily",
        "owner",
        "v",
        "state",
        "started_at",
        "finished_at",
    }
    assert game["v"] == 0 and game["deal"] == 1 and game["daily"] is None
    state = game["state"]
    assert state["tableau"][0] == ["JD", "QC", "TS", "7D"]  # RULES.md D4
    assert state["moves"] == 0 and state["status"] == "playing"
    assert state["stock"] == {"count": 0, "top": None} and state["cells"] == []


def test_random_deal_when_none_given(api):  # noqa: ANN001
    res = api.post("/api/games", {"variant": "spanish"}, format="json")
    assert res.status_code == 201 and res.json()["deal"] >= 1


def test_move_applies_and_is_recorded(api):  # noqa: ANN001
    game = new_game(api)
    move = game["state"]["legal_moves"][0]
    res = api.post(f"/api/games/{game['id']}/moves", {"move": move, "v": 0}, format="json")
    assert res.status_code == 200, res.content
    body = res.json()
    assert body["v"] == 1 and body["state"]["moves"] == 1 and body["state"]["last_move"] == move
    history = api.get(f"/api/games/{game['id']}/moves").json()
    assert [(h["n"], h["move"], h["v"]) for h in history] == [(1, move, 0)]


def test_move_history_in_pieces(api):  # noqa: ANN001
    """`after` and `limit` read a long history in pieces; without them, every move."""
    game = new_game(api, "spanish", 7)
    played = []
    for v in range(5):
        move = api.get(f"/api/games/{game['id']}").json()["state"]["legal_moves"][0]
        res = api.post(f"/api/games/{game['id']}/moves", {"move": move, "v": v}, format="json")
        assert res.status_code == 200, res.content
        played.append(move)
    url = f"/api/games/{game['id']}/moves"

    def ns(query: str) -> list[int]:
        res = api.get(url + query)
        assert res.status_code == 200, res.content
        return [row["n"] for row in res.json()]

    assert ns("") == [1, 2, 3, 4, 5]
    assert [row["move"] for row in api.get(url).json()] == played
    assert ns("?after=2") == [3, 4, 5] and ns("?limit=2") == [1, 2]
    assert ns("?after=2&limit=2") == [3, 4] and ns("?after=4&limit=2") == [5]
    assert ns("?after=5") == [] and ns("?after=2147483647") == []
    bad = ("?after=-1", "?after=x", "?limit=0", "?limit=2147483648", "?after=1.5", "?after= 1")
    assert ns("?after=0002&limit=00001") == [3]  # leading zeros are still the number
    for query in (*bad, "?after=" + "9" * 5000):  # past the digits Python reads: was a 500
        res = api.get(url + query)
        assert res.status_code == 400 and res.json()["code"] == "bad_request", query


def test_a_history_writes_each_moves_time_as_the_rest_of_the_api_writes_times(api):  # noqa: ANN001
    """The database writes a history's times as text (clock.IsoText): each must be the text
    DRF writes for the same moment, whether its microseconds are zero or not."""
    import datetime as dt

    from rest_framework.fields import DateTimeField

    game = new_game(api, "spanish", 7)
    for v in range(3):
        move = api.get(f"/api/games/{game['id']}").json()["state"]["legal_moves"][0]
        api.post(f"/api/games/{game['id']}/moves", {"move": move, "v": v}, format="json")
    moments = [
        dt.datetime(2026, 11, 29, 2, 3, 4, tzinfo=dt.UTC),
        dt.datetime(2026, 1, 2, 23, 59, 59, 10, tzinfo=dt.UTC),
        dt.datetime(2026, 7, 1, 0, 0, 0, 999999, tzinfo=dt.timezone(dt.timedelta(hours=-5))),
    ]
    for n, moment in enumerate(moments, start=1):
        Move.objects.filter(game_id=game["id"], n=n).update(at=moment)
    history = api.get(f"/api/games/{game['id']}/moves").json()
    assert [h["at"] for h in history] == [DateTimeField().to_representation(m) for m in moments]
    assert [h["at"] for h in history] == [
        "2026-11-29T02:03:04Z",
        "2026-01-02T23:59:59.000010Z",
        "2026-07-01T05:00:00.999999Z",
    ]


def test_a_long_history_comes_in_pages_each_naming_the_next(api, monkeypatch):  # noqa: ANN001
    """A game may hold 100,000 actions: all of them in one answer was 7 MB and a second of the
    server's one loop, and 16 such requests at once stalled every other request of the process
    for seconds. An answer carries MOVES_PAGE moves at most (2 here), and names the next page
    in its Link header when more follow; a page the client's own limit ended names none."""
    from games.api import views

    monkeypatch.setattr(views, "MOVES_PAGE", 2)
    game = new_game(api, "spanish", 7)
    for v in range(5):
        move = api.get(f"/api/games/{game['id']}").json()["state"]["legal_moves"][0]
        api.post(f"/api/games/{game['id']}/moves", {"move": move, "v": v}, format="json")
    url = f"/api/games/{game['id']}/moves"

    def page(query: str) -> tuple[list[int], str | None]:
        res = api.get(url + query)
        assert res.status_code == 200, res.content
        return [row["n"] for row in res.json()], res.headers.get("Link")

    def next_of(query: str) -> str:
        return f'<http://testserver{url}?{query}>; rel="next"'

    assert page("") == ([1, 2], next_of("after=2"))
    assert page("?after=2") == ([3, 4], next_of("after=4"))
    assert page("?after=4") == ([5], None)
    assert page("?limit=3") == ([1, 2], next_of("after=2&limit=1"))
    assert page("?after=2&limit=1") == ([3], None)
    assert page("?limit=2") == ([1, 2], None)  # the client's limit, not the page's
    assert page("?after=3") == ([4, 5], None)  # a whole page, and nothing after it


def test_a_state_names_the_move_that_made_its_version(api):  # noqa: ANN001
    """A game read just before another move commits: its `last_move` is the move its board
    shows, not the newer one (it was read from the newest history row, in a second query)."""
    from games import selectors

    game = new_game(api, "spanish", 3)
    url = f"/api/games/{game['id']}/moves"
    first = game["state"]["legal_moves"][0]
    body = api.post(url, {"move": first, "v": 0}, format="json").json()
    read = Game.objects.get(pk=game["id"])  # at version 1
    second = body["state"]["legal_moves"][0]
    assert api.post(url, {"move": second, "v": 1}, format="json").status_code == 200
    assert selectors.state_view(read)["last_move"] == first
    listed = selectors.with_last_move(Game.objects.filter(pk=game["id"])).get()
    assert listed.version == 2 and selectors.state_view(listed)["last_move"] == second


def test_illegal_move_is_refused_and_changes_nothing(api):  # noqa: ANN001
    game = new_game(api)
    res = api.post(f"/api/games/{game['id']}/moves", {"move": "t0-f0", "v": 0}, format="json")
    assert res.status_code == 400
    assert res.json()["code"] == "illegal_move" and res.json()["detail"]
    assert Game.objects.get(pk=game["id"]).version == 0
    assert not Move.objects.exists()


# The long one is `illegal_move` as on the socket, not `invalid`: no move is that long.
@pytest.mark.parametrize(
    "move", ["t99-f0", "banana", "t0-x1", "c0-t1", " t0-t1", "t0-t1 ", "t0-t1:" + "9" * 20]
)
def test_unknown_piles_and_garbage_are_refused(api, move):  # noqa: ANN001
    game = new_game(api)
    res = api.post(f"/api/games/{game['id']}/moves", {"move": move, "v": 0}, format="json")
    assert res.status_code == 400
    assert res.json()["code"] == "illegal_move"
    assert not Move.objects.exists()


def test_a_legal_move_spelt_with_a_count_of_one_is_refused(api):  # noqa: ANN001
    """PROTOCOL.md writes `:N` only for N >= 2: `t0-t1:1` is not in `legal_moves`, so it is
    not a move, even where `t0-t1` is one."""
    game = new_game(api)
    move = next(m for m in game["state"]["legal_moves"] if m != "draw")
    url = f"/api/games/{game['id']}/moves"
    res = api.post(url, {"move": f"{move}:1", "v": 0}, format="json")
    assert res.status_code == 400
    assert res.json()["code"] == "illegal_move" and "N >= 2" in res.json()["detail"]
    assert not Move.objects.exists()
    assert api.post(url, {"move": move, "v": 0}, format="json").status_code == 200


def test_stale_version_is_409_and_a_resent_move_is_not_applied_twice(api):  # noqa: ANN001
    game = new_game(api)
    move = game["state"]["legal_moves"][0]
    url = f"/api/games/{game['id']}/moves"
    assert api.post(url, {"move": move, "v": 0}, format="json").status_code == 200
    res = api.post(url, {"move": move, "v": 0}, format="json")
    assert res.status_code == 409
    assert res.json()["code"] == "stale_version" and res.json()["v"] == 1
    assert Move.objects.count() == 1


def test_other_users_game_is_forbidden_to_play_but_readable(api, other_api):  # noqa: ANN001
    game = new_game(api)
    move = game["state"]["legal_moves"][0]
    res = other_api.post(f"/api/games/{game['id']}/moves", {"move": move, "v": 0}, format="json")
    assert res.status_code == 403 and res.json()["code"] == "forbidden"
    assert other_api.post(f"/api/games/{game['id']}/resign").status_code == 403
    assert other_api.get(f"/api/games/{game['id']}").status_code == 200
    assert not Move.objects.exists()


def test_missing_auth_is_401(anon, api):  # noqa: ANN001
    game = new_game(api)
    assert anon.get(f"/api/games/{game['id']}").status_code == 401
    res = anon.post(f"/api/games/{game['id']}/moves", {"move": "t0-t2", "v": 0}, format="json")
    assert res.status_code == 401


def test_unknown_game_is_404(api):  # noqa: ANN001
    res = api.get("/api/games/999999")
    assert res.status_code == 404 and res.json()["code"] == "not_found"


@pytest.mark.parametrize(
    "payload",
    [{}, {"move": "t0-t2"}, {"v": 0}, {"move": "t0-t2", "v": -1}, {"move": "t0-t2", "v": "x"}],
)
def test_malformed_move_requests_are_400(api, payload):  # noqa: ANN001
    game = new_game(api)
    res = api.post(f"/api/games/{game['id']}/moves", payload, format="json")
    assert res.status_code == 400 and res.json()["code"] == "invalid"


@pytest.mark.parametrize(
    ("path", "payload", "field"),
    [
        ("moves", {"move": "t0-t2", "v": "0"}, "v"),
        ("moves", {"move": "t0-t2", "v": True}, "v"),
        ("moves", {"move": "t0-t2", "v": 0.0}, "v"),
        ("moves", {"move": 5, "v": 0}, "move"),
        ("moves", {"move": ["t0-t2"], "v": 0}, "move"),
        ("undo", {"v": "1"}, "v"),
        ("", {"variant": "portuguese", "deal": "7"}, "deal"),
    ],
)
def test_wrong_json_types_are_400_naming_the_field_as_on_the_socket(api, path, payload, field):  # noqa: ANN001
    """REST used to coerce ("0" -> 0, 5 -> "5"), where the WebSocket says bad_message: a
    client's type bug is heard at once, on either transport, and nothing is played."""
    game = new_game(api)
    url = f"/api/games/{game['id']}/{path}" if path else "/api/games"
    res = api.post(url, payload, format="json")
    assert res.status_code == 400, res.json()
    assert res.json()["code"] == "invalid" and field in res.json()["fields"]
    assert api.get(f"/api/games/{game['id']}").json()["v"] == 0


def test_unknown_variant_and_bad_deal_are_400(api):  # noqa: ANN001
    assert api.post("/api/games", {"variant": "klondike"}, format="json").status_code == 400
    res = api.post("/api/games", {"variant": "portuguese", "deal": 0}, format="json")
    assert res.status_code == 400


@pytest.mark.parametrize("number", [2**31, 10**15, 2**53 - 1])
def test_large_deal_numbers_deal_the_engine_layout(api, number):  # noqa: ANN001
    """RULES.md D2 has no upper bound; the API goes up to 2^53 - 1, exact in any JSON client."""
    from games.engine import new_game as engine_game

    res = api.post("/api/games", {"variant": "portuguese", "deal": number}, format="json")
    assert res.status_code == 201, res.json()
    assert res.json()["deal"] == number
    assert res.json()["state"]["tableau"] == engine_game("portuguese", number).view()["tableau"]
    again = api.post("/api/games", {"variant": "portuguese", "deal": number}, format="json")
    assert again.json()["state"]["tableau"] == res.json()["state"]["tableau"]


def test_a_deal_number_past_2_53_is_refused_with_the_bound(api):  # noqa: ANN001
    res = api.post("/api/games", {"variant": "portuguese", "deal": 2**53}, format="json")
    assert res.status_code == 400 and res.json()["code"] == "invalid"
    assert str(2**53 - 1) in res.json()["detail"]


def test_undo_steps_back_and_counts_as_a_move(api):  # noqa: ANN001
    game = new_game(api)
    before = game["state"]
    move = before["legal_moves"][0]
    api.post(f"/api/games/{game['id']}/moves", {"move": move, "v": 0}, format="json")
    res = api.post(f"/api/games/{game['id']}/undo", {"v": 1}, format="json")
    assert res.status_code == 200
    body = res.json()
    assert body["v"] == 2 and body["state"]["moves"] == 2
    assert body["state"]["tableau"] == before["tableau"]
    assert [h["move"] for h in api.get(f"/api/games/{game['id']}/moves").json()] == [move, "undo"]


def test_undo_at_the_start_is_refused(api):  # noqa: ANN001
    game = new_game(api)
    res = api.post(f"/api/games/{game['id']}/undo", {"v": 0}, format="json")
    assert res.status_code == 400 and res.json()["code"] == "illegal_move"


def test_a_stuck_practice_game_is_undone_into_play_and_a_resigned_one_is_not(api):  # noqa: ANN001
    """Spanish deal 1 is stuck after seven moves (found by the rules audit). In practice the
    move that left no move is taken back and the game plays on; a resignation stands."""
    game = api.post("/api/games", {"variant": "spanish", "deal": 1}, format="json").json()
    moves = ["t12-t0", "t2-t10", "t8-t12", "t6-t2", "t6-t8", "t11-t8", "t11-t2"]
    for v, move in enumerate(moves):
        body = api.post(f"/api/games/{game['id']}/moves", {"move": move, "v": v}, format="json")
    assert body.json()["state"]["status"] == "stuck" and body.json()["v"] == 7
    res = api.post(f"/api/games/{game['id']}/undo", {"v": 7}, format="json")
    assert res.status_code == 200, res.json()
    body = res.json()
    assert (body["v"], body["status"], body["finished_at"]) == (8, "playing", None)
    assert body["state"]["legal_moves"] and body["state"]["last_move"] == "undo"
    assert api.post(f"/api/games/{game['id']}/resign").status_code == 200
    res = api.post(f"/api/games/{game['id']}/undo", {"v": 8}, format="json")
    assert res.status_code == 409 and res.json()["code"] == "game_over"
    assert api.get(f"/api/games/{game['id']}").json()["v"] == 8


def test_resign_ends_the_game_and_further_moves_are_game_over(api):  # noqa: ANN001
    game = new_game(api)
    res = api.post(f"/api/games/{game['id']}/resign")
    assert res.status_code == 200
    body = res.json()
    assert body["status"] == "resigned" and body["state"]["status"] == "resigned"
    assert body["finished_at"] is not None and body["state"]["legal_moves"] == []
    move = game["state"]["legal_moves"][0]
    res = api.post(f"/api/games/{game['id']}/moves", {"move": move, "v": 0}, format="json")
    assert res.status_code == 409 and res.json()["code"] == "game_over"
    again = api.post(f"/api/games/{game['id']}/resign")
    assert again.status_code == 409 and again.json()["code"] == "game_over"


def test_variants_lists_the_five_games(api):  # noqa: ANN001
    ids = [v["id"] for v in api.get("/api/variants").json()]
    assert ids == ["portuguese", "spanish", "countess", "barricade", "chinese_freecell"]


def test_a_game_read_later_still_names_its_last_move(api):  # noqa: ANN001
    """PROTOCOL.md: the state carries `last_move` after every change, not only in the reply."""
    game = new_game(api)
    assert api.get(f"/api/games/{game['id']}").json()["state"]["last_move"] is None
    move = game["state"]["legal_moves"][0]
    api.post(f"/api/games/{game['id']}/moves", {"move": move, "v": 0}, format="json")
    assert api.get(f"/api/games/{game['id']}").json()["state"]["last_move"] == move
    api.post(f"/api/games/{game['id']}/undo", {"v": 1}, format="json")
    assert api.get(f"/api/games/{game['id']}").json()["state"]["last_move"] == "undo"


@pytest.mark.parametrize("path", ["/api/nonexistent", "/api/games/abc", "/api/games/1/"])
def test_unknown_api_paths_are_json_404s(api, path, settings):  # noqa: ANN001
    settings.DEBUG = True  # Django's own 404 page would be HTML then
    res = api.get(path)
    assert res.status_code == 404 and res.json()["code"] == "not_found"


def test_the_game_list_reads_last_moves_in_one_query(api, django_assert_max_num_queries):  # noqa: ANN001
    moved = []
    for deal in (1, 2, 3):
        game = new_game(api, deal=deal)
        move = game["state"]["legal_moves"][0]
        api.post(f"/api/games/{game['id']}/moves", {"move": move, "v": 0}, format="json")
        moved.append(move)
    with django_assert_max_num_queries(3):  # auth, then the games with their last moves
        games = api.get("/api/games").json()
    assert [g["state"]["last_move"] for g in games] == moved[::-1]


def test_the_game_list_pages_back_through_every_game(api):  # noqa: ANN001
    ids = [new_game(api, deal=deal)["id"] for deal in range(1, 8)]
    first = api.get("/api/games", {"limit": 3}).json()
    assert [g["id"] for g in first] == ids[::-1][:3]
    seen = [g["id"] for g in first]
    while True:
        page = api.get("/api/games", {"limit": 3, "before": seen[-1]}).json()
        if not page:
            break
        seen += [g["id"] for g in page]
    assert seen == ids[::-1]  # every game once, newest first
    assert len(api.get("/api/games").json()) == 7  # 50 by default


def test_a_game_started_between_pages_does_not_repeat_one(api):  # noqa: ANN001
    ids = [new_game(api, deal=deal)["id"] for deal in range(1, 5)]
    first = api.get("/api/games", {"limit": 2}).json()
    new_game(api, deal=9)
    rest = api.get("/api/games", {"limit": 2, "before": first[-1]["id"]}).json()
    assert [g["id"] for g in first + rest] == ids[::-1]


@pytest.mark.parametrize(
    "query", [{"limit": 0}, {"limit": 101}, {"limit": "x"}, {"before": 0}, {"before": "-3"}]
)
def test_the_game_list_refuses_a_page_it_cannot_read(api, query):  # noqa: ANN001
    res = api.get("/api/games", query)
    assert res.status_code == 400 and res.json()["code"] == "bad_request"
    assert "whole number" in res.json()["detail"]


def test_a_rest_move_whose_fan_out_fails_is_answered_as_played(api, monkeypatch):  # noqa: ANN001
    """The move has committed before its frames go to the game's sockets: a channel layer
    that fails then is logged, and the move is answered 200, not 500 for a move that stands."""
    from games import broadcast

    game = new_game(api)

    monkeypatch.setattr(broadcast, "send_to_game", layer_down)
    move = game["state"]["legal_moves"][0]
    res = api.post(f"/api/games/{game['id']}/moves", {"move": move, "v": 0}, format="json")
    assert res.status_code == 200, res.content
    assert res.json()["v"] == 1
    assert Game.objects.get(pk=game["id"]).version == 1


@pytest.mark.parametrize("error", [OperationalError, InterfaceError])
def test_a_rest_call_the_database_cannot_answer_is_a_503_to_try_again(api, monkeypatch, error):  # noqa: ANN001
    """PostgreSQL restarting: every call answered 500 (Django's HTML debug page under DEBUG),
    a write that may have landed among them. It is now the socket's `unavailable`, to retry,
    saying a write may stand."""
    from games import services

    game = new_game(api)

    def gone(*args: object) -> None:
        raise error("server closed the connection unexpectedly")

    monkeypatch.setattr(services, "play_move", gone)
    res = api.post(f"/api/games/{game['id']}/moves", {"move": "t0-t1", "v": 0}, format="json")
    assert res.status_code == 503 and res["Retry-After"] == "1"
    assert res.json()["code"] == "unavailable"
    assert "may have been saved" in res.json()["detail"]


def test_a_committed_rest_move_is_answered_as_played_though_the_database_goes_then(
    api,  # noqa: ANN001
    monkeypatch,  # noqa: ANN001
):
    """Its answer read the game's owner after the commit: the database gone just then turned a
    move that stands into an error. It asks the database nothing more."""
    from django.db import connection

    from games import services

    game = new_game(api)
    play_move = services.play_move
    gone = []

    def refuse(*args: object) -> None:
        raise OperationalError("server closed the connection unexpectedly")

    def then_gone(*args: object, **kwargs: object) -> object:
        outcome = play_move(*args, **kwargs)
        gone.append(connection.execute_wrapper(refuse))
        gone[0].__enter__()
        return outcome

    monkeypatch.setattr(services, "play_move", then_gone)
    move = game["state"]["legal_moves"][0]
    try:
        res = api.post(f"/api/games/{game['id']}/moves", {"move": move, "v": 0}, format="json")
    finally:
        gone[0].__exit__(None, None, None)
    assert res.status_code == 200, res.content
    assert (res.json()["v"], res.json()["owner"]) == (1, game["owner"])
