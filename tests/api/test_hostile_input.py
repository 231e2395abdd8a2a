"""Input built to break the server (from a black-box fuzzing audit): each one was a 500, an
HTML page or a body silently dropped, and is now a JSON error that says what was wrong."""

from __future__ import annotations

import pytest
from django.test import Client

from tests.api.test_games_api import new_game

pytestmark = pytest.mark.django_db

TOO_BIG_FOR_BIGINT = 2**63
DEEP = "[" * 1000 + "]" * 1000


def assert_json_error(res, status: int, code: str) -> dict:  # noqa: ANN001
    assert res.status_code == status, res.content[:300]
    assert res["Content-Type"].startswith("application/json"), res["Content-Type"]
    body = res.json()
    assert body["code"] == code and body["detail"], body
    return body


@pytest.mark.parametrize("path", ["/api/auth/register", "/api/games", "/api/games/1/moves"])
def test_a_body_nested_too_deep_is_bad_json_not_a_500(api, path):  # noqa: ANN001
    res = api.post(path, f'{{"x": {DEEP}}}', content_type="application/json")
    assert_json_error(res, 400, "bad_json")


def test_a_number_too_long_to_read_is_bad_json_without_python_internals(api):  # noqa: ANN001
    game = new_game(api)
    body = '{"move": "t0-t2", "v": ' + "9" * 5000 + "}"
    res = api.post(f"/api/games/{game['id']}/moves", body, content_type="application/json")
    detail = assert_json_error(res, 400, "bad_json")["detail"]
    assert "sys." not in detail and "int_max_str_digits" not in detail
    assert api.get(f"/api/games/{game['id']}").json()["v"] == 0


@pytest.mark.parametrize("action", ["moves", "undo", "resign", ""])
@pytest.mark.parametrize("game_id", [TOO_BIG_FOR_BIGINT, 10**30])
def test_a_game_id_past_the_bigint_is_no_game(api, action, game_id):  # noqa: ANN001
    url = f"/api/games/{game_id}/{action}".rstrip("/")
    res = api.post(url, {"move": "t0-t2", "v": 0}, format="json") if action else api.get(url)
    assert_json_error(res, 404, "not_found")


def test_the_largest_bigint_id_is_an_ordinary_missing_game(api):  # noqa: ANN001
    res = api.post(f"/api/games/{2**63 - 1}/moves", {"move": "t0-t2", "v": 0}, format="json")
    assert_json_error(res, 404, "not_found")


@pytest.mark.parametrize("page", ["99999999999999999999", str(2**63 - 1), "1000001", "9" * 5000])
def test_a_page_past_any_board_is_bad_request(api, page):  # noqa: ANN001
    date = api.get("/api/daily").json()["date"]
    for url in (f"/api/daily/{date}/portuguese/leaderboard", "/api/leaderboards/portuguese"):
        assert_json_error(api.get(url, {"page": page}), 400, "bad_request")


def test_a_username_with_a_nul_is_no_player(api):  # noqa: ANN001
    assert_json_error(api.get("/api/users/a%00b"), 404, "not_found")


@pytest.mark.parametrize("path", ["/api/nope", "/api/games/abc/moves", "/api/games/5/"])
def test_any_method_on_an_unknown_api_path_is_a_json_404(user, path):  # noqa: ANN001
    """A plain Django view answers unknown paths; with CSRF checks on (a browser's session),
    a POST there got Django's HTML 403 page before it."""
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(user)
    for method in ("post", "put", "patch", "delete", "get"):
        assert_json_error(getattr(browser, method)(path), 404, "not_found")


def test_a_chunked_body_is_refused_not_read_as_empty(api):  # noqa: ANN001
    res = api.generic(
        "POST",
        "/api/games",
        "",
        content_type="application/json",
        HTTP_TRANSFER_ENCODING="chunked",
    )
    assert_json_error(res, 411, "length_required")


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("get", "/api/auth/token"),  # signs in (POST) and out (DELETE) only
        ("get", "/api/auth/register"),
        ("get", "/api/auth/login"),
        ("post", "/api/me"),
        ("put", "/api/games"),
        ("delete", "/api/games/1"),
        ("put", "/api/games/1/moves"),
        ("get", "/api/games/1/undo"),
        ("get", "/api/games/1/resign"),
        ("post", "/api/games/1/hint"),
        ("post", "/api/games/live"),
        ("post", "/api/daily"),
        ("get", "/api/daily/2026-01-01/spanish/play"),
        ("post", "/api/leaderboards/spanish"),
        ("post", "/api/users/somebody"),
        ("post", "/api/variants"),
        ("post", "/api/health"),
    ],
)
def test_a_method_a_path_does_not_take_is_405_before_credentials_are_asked(anon, api, method, path):  # noqa: ANN001
    """The wrong method is what a client must hear, signed in or not: DRF asked for
    credentials first, so the same request was 401 without them and 405 with them."""
    for client in (anon, api):
        res = getattr(client, method)(path)
        assert_json_error(res, 405, "method_not_allowed")
        assert method.upper() not in res.headers["Allow"]


@pytest.mark.parametrize("method", ["options", "post", "put", "delete"])
def test_a_method_the_docs_page_does_not_take_is_a_json_405(anon, method):  # noqa: ANN001
    """Not a 500 (OPTIONS rendered its metadata through the page's HTML renderer), nor the
    page's plain HTML: an error under /api/ is JSON, as the README says."""
    assert_json_error(getattr(anon, method)("/api/docs"), 405, "method_not_allowed")
    assert anon.get("/api/docs").status_code == 200


@pytest.mark.parametrize("debug", [False, True])
def test_an_unknown_host_and_an_unservable_accept_get_json_errors(api, settings, debug):  # noqa: ANN001
    settings.DEBUG = debug  # with DEBUG Django answered DisallowedHost with its debug page
    for path in ("/api/me", "/", "/api/docs"):
        res = api.get(path, HTTP_HOST="evil.example")
        assert_json_error(res, 400, "bad_request")
        assert "ALLOWED_HOSTS" in res.json()["detail"]
    assert_json_error(api.get("/api/me", HTTP_ACCEPT="text/csv"), 406, "not_acceptable")


@pytest.mark.parametrize(
    ("throttle", "path"), [("HintThrottle", "hint"), ("PositionThrottle", "positions")]
)
def test_solver_and_replay_reads_are_rate_limited_per_player(
    api, other_api, monkeypatch, throttle, path
):  # noqa: ANN001
    """A hint is a solver run and a page of positions a replay from the deal: a client
    asking in a loop is held to the endpoint's rate."""
    from games.api import views

    monkeypatch.setattr(getattr(views, throttle), "rate", "2/min", raising=False)
    game = new_game(api, "spanish", 3)
    url = f"/api/games/{game['id']}/{path}"
    assert [api.get(url).status_code for _ in range(2)] == [200, 200]
    assert_json_error(api.get(url), 429, "rate_limited")
    mine = new_game(other_api, "spanish", 3)  # another player has a limit of their own
    assert other_api.get(f"/api/games/{mine['id']}/{path}").status_code == 200


def test_starting_games_is_rate_limited_per_player_and_listing_them_is_not(
    api, other_api, monkeypatch
):  # noqa: ANN001
    """Each game is a row kept for good: one user started 1,000 in 8 s, and took every place
    in the live list."""
    from games.api import throttles

    monkeypatch.setattr(throttles.NewGameThrottle, "rate", "2/min", raising=False)
    body = {"variant": "portuguese", "deal": 1}
    codes = [api.post("/api/games", body, format="json").status_code for _ in range(2)]
    assert codes == [201, 201]
    res = api.post("/api/games", body, format="json")
    assert_json_error(res, 429, "rate_limited")
    assert int(res.headers["Retry-After"]) > 0
    assert api.get("/api/games").status_code == 200  # reading your games is not starting one
    assert len(api.get("/api/games").json()) == 2
    assert other_api.post("/api/games", body, format="json").status_code == 201


def test_the_live_list_is_rate_limited_per_player(api, other_api, monkeypatch):  # noqa: ANN001
    from games.api import throttles

    monkeypatch.setattr(throttles.LiveThrottle, "rate", "2/min", raising=False)
    assert [api.get("/api/games/live").status_code for _ in range(2)] == [200, 200]
    assert_json_error(api.get("/api/games/live"), 429, "rate_limited")
    assert other_api.get("/api/games/live").status_code == 200


def test_hints_wait_for_a_free_solver_and_are_refused_past_the_wait(api, monkeypatch):  # noqa: ANN001
    """Hints share this process's solver slots whoever asks: the per-user limit alone let
    twelve accounts run 48 solver runs at once beside every socket."""
    import threading

    from games import selectors

    slots = threading.BoundedSemaphore(1)
    monkeypatch.setattr(selectors, "_hint_slots", slots)
    monkeypatch.setattr(selectors, "HINT_WAIT_SECONDS", 0.05)
    game = new_game(api, "spanish", 3)
    url = f"/api/games/{game['id']}/hint"
    slots.acquire()  # another player's hint is being solved
    res = api.get(url)
    assert_json_error(res, 429, "rate_limited")
    assert res.headers["Retry-After"] == str(selectors.HINT_RETRY_SECONDS)
    assert "busy" in res.json()["detail"]
    slots.release()
    assert api.get(url).status_code == 200
    assert slots.acquire(blocking=False)  # the hint gave its slot back


def test_a_game_takes_no_action_past_its_most_moves(api, settings):  # noqa: ANN001
    """No deal needs more than a few hundred moves; one user's 100,000 made a history of
    1.2 s to read, for anyone who asked."""
    settings.GAME_MAX_MOVES = 3
    game = new_game(api)
    gid, legal = game["id"], game["state"]["legal_moves"]
    api.post(f"/api/games/{gid}/moves", {"move": legal[0], "v": 0}, format="json")
    assert api.post(f"/api/games/{gid}/undo", {"v": 1}, format="json").status_code == 200
    api.post(f"/api/games/{gid}/moves", {"move": legal[0], "v": 2}, format="json")
    now = api.get(f"/api/games/{gid}").json()
    # What the game still allows is what its state lists: nothing, so a client playing the
    # legal moves it is shown is never refused one; and why, beside the status still playing.
    assert now["v"] == 3 and now["state"]["status"] == "playing"
    assert now["state"]["legal_moves"] == [] and now["state"]["at_move_limit"] is True
    for res in (
        api.post(f"/api/games/{gid}/moves", {"move": legal[0], "v": 3}, format="json"),
        api.post(f"/api/games/{gid}/undo", {"v": 3}, format="json"),
    ):
        assert_json_error(res, 400, "illegal_move")
        assert "reached 3 moves" in res.json()["detail"] and res.json()["v"] == 3
    assert_json_error(
        api.post(f"/api/games/{gid}/moves", {"move": legal[0], "v": 2}, format="json"),
        409,
        "stale_version",
    )
    resigned = api.post(f"/api/games/{gid}/resign").json()
    assert resigned["status"] == "resigned" and "at_move_limit" not in resigned["state"]


def test_an_empty_move_is_illegal_over_rest_as_over_the_socket(api):  # noqa: ANN001
    game = new_game(api)
    for move in ("", " "):
        res = api.post(f"/api/games/{game['id']}/moves", {"move": move, "v": 0}, format="json")
        assert_json_error(res, 400, "illegal_move")
        assert res.json()["v"] == 0  # as every refused move says the version it found
    assert api.get(f"/api/games/{game['id']}").json()["v"] == 0


@pytest.mark.parametrize("action", ["moves", "undo"])
def test_a_version_past_64_bits_is_invalid_not_stale(api, action):  # noqa: ANN001
    """As on the socket, where such a number is not read: the client sent a number no game
    reaches, which no sync would mend."""
    game = new_game(api)
    for v in (2**63, 10**30):
        res = api.post(f"/api/games/{game['id']}/{action}", {"move": "draw", "v": v}, format="json")
        assert_json_error(res, 400, "invalid")
        assert "v" in res.json()["fields"]
    res = api.post(
        f"/api/games/{game['id']}/{action}", {"move": "draw", "v": 2**63 - 1}, format="json"
    )
    assert res.status_code == 409 and res.json()["code"] == "stale_version"


def test_a_null_deal_is_a_random_one_as_a_missing_one_is(api):  # noqa: ANN001
    res = api.post("/api/games", {"variant": "spanish", "deal": None}, format="json")
    assert res.status_code == 201 and isinstance(res.json()["deal"], int)


def test_resign_with_a_body_that_is_not_json_is_refused_and_the_game_plays_on(api):  # noqa: ANN001
    game = new_game(api)
    res = api.post(f"/api/games/{game['id']}/resign", "{bad", content_type="application/json")
    assert_json_error(res, 400, "bad_json")
    assert api.get(f"/api/games/{game['id']}").json()["state"]["status"] == "playing"
    res = api.post(f"/api/games/{game['id']}/resign")  # no body at all: fine
    assert res.status_code == 200 and res.json()["state"]["status"] == "resigned"


def test_a_host_not_served_is_a_json_400_and_one_line_in_the_log(anon, caplog):  # noqa: ANN001
    import logging

    with caplog.at_level(logging.ERROR, logger="django.security.DisallowedHost"):
        res = anon.get("/api/me", HTTP_HOST="evil.example")
    assert res.status_code == 400
    assert res.json() == {
        "code": "bad_request",
        "detail": "This server does not answer for that Host (ALLOWED_HOSTS).",
    }
    (record,) = [r for r in caplog.records if r.name == "django.security.DisallowedHost"]
    assert "evil.example" in record.getMessage() and record.exc_info is None


@pytest.mark.parametrize(
    "body, key",
    [
        ('{"move": "t0-t2", "v": 0, "v": 1}', "v"),
        ('{"move": "t0-t2", "move": "t1-t2", "v": 0}', "move"),
        ('{"move": "t0-t2", "v": 0, "x": {"a": 1, "a": 2}}', "a"),
    ],
)
def test_a_key_named_twice_is_bad_json_and_nothing_is_played(api, body, key):  # noqa: ANN001
    """Parsers disagree on which of two values counts (Python keeps the last, others the
    first): a body that means one move to one reader and another to the next is refused."""
    game = new_game(api)
    res = api.post(f"/api/games/{game['id']}/moves", body, content_type="application/json")
    detail = assert_json_error(res, 400, "bad_json")["detail"]
    assert f'the key "{key}" appears twice' in detail, detail
    assert api.get(f"/api/games/{game['id']}").json()["v"] == 0
