"""A replay over REST (`GET /api/games/{id}/positions`): each version of a game as its players
saw it, replayed from the deal, with no face-down card, and only for those who may open it."""

from __future__ import annotations

import random

import pytest

from games import clock, engine
from games.models import VARIANT_IDS
from tests.api.test_hidden_cards import cards_in, face_up

pytestmark = pytest.mark.django_db


def played_game(api, variant: str, deal: int, actions: int, seed: int) -> tuple[int, list[dict]]:  # noqa: ANN001
    """A practice game of random legal moves, with an undo now and then: its id, and the
    state each answer showed, version by version."""
    game = api.post("/api/games", {"variant": variant, "deal": deal}, format="json").json()
    rng = random.Random(seed)
    seen = [game["state"]]
    for v in range(actions):
        state = seen[-1]
        if state["status"] != "playing":
            break
        if v and rng.random() < 0.15:
            res = api.post(f"/api/games/{game['id']}/undo", {"v": v}, format="json")
        else:
            move = rng.choice(state["legal_moves"])
            res = api.post(f"/api/games/{game['id']}/moves", {"move": move, "v": v}, format="json")
        assert res.status_code == 200, res.content
        seen.append(res.json()["state"])
    return game["id"], seen


@pytest.mark.parametrize("variant", VARIANT_IDS)
def test_a_replay_shows_each_version_as_it_was_seen(api, variant: str) -> None:  # noqa: ANN001
    game_id, seen = played_game(api, variant, deal=4, actions=40, seed=VARIANT_IDS.index(variant))
    res = api.get(f"/api/games/{game_id}/positions")
    assert res.status_code == 200
    positions = res.json()
    assert [p["v"] for p in positions] == list(range(len(seen)))
    for position, state in zip(positions, seen, strict=True):
        assert position["state"] == state, f"v{position['v']}"


@pytest.mark.parametrize("variant", ["countess", "barricade"])
def test_a_replay_shows_no_face_down_card(api, variant: str) -> None:  # noqa: ANN001
    game_id, _ = played_game(api, variant, deal=2, actions=60, seed=7)
    history = [m["move"] for m in api.get(f"/api/games/{game_id}/moves").json()]
    for position in api.get(f"/api/games/{game_id}/positions").json():
        full = engine.replay(variant, 2, history[: position["v"]]).to_dict()
        hidden = cards_in(position) - face_up(full)
        assert not hidden, f"v{position['v']}: face-down cards sent: {hidden}"


def test_a_replay_comes_a_page_at_a_time(api) -> None:  # noqa: ANN001
    game_id, seen = played_game(api, "spanish", deal=9, actions=25, seed=3)
    pages, start = [], 0
    while page := api.get(f"/api/games/{game_id}/positions", {"start": start, "limit": 7}).json():
        assert len(page) <= 7
        pages += page
        start = page[-1]["v"] + 1
    assert [p["state"] for p in pages] == seen
    assert api.get(f"/api/games/{game_id}/positions", {"start": 10**6}).json() == []


def test_a_resigned_game_ends_its_replay_resigned(api) -> None:  # noqa: ANN001
    game_id, seen = played_game(api, "portuguese", deal=1, actions=3, seed=1)
    api.post(f"/api/games/{game_id}/resign")
    positions = api.get(f"/api/games/{game_id}/positions").json()
    assert positions[-1]["state"]["status"] == "resigned"
    assert positions[-1]["state"]["legal_moves"] == []
    assert positions[-2]["state"] == seen[-2]


def test_todays_ranked_attempt_is_replayed_as_it_may_be_watched(api, other_api) -> None:  # noqa: ANN001
    day = clock.today().isoformat()
    game = api.post(f"/api/daily/{day}/portuguese/play").json()
    assert other_api.get(f"/api/games/{game['id']}/positions").status_code == 200


def test_todays_ranked_attempt_is_replayed_only_as_it_may_be_watched_when_hidden(
    api, other_api, settings
) -> None:  # noqa: ANN001
    settings.WATCH_AFTER_OWN_ATTEMPT = True
    day = clock.today().isoformat()
    game = api.post(f"/api/daily/{day}/portuguese/play").json()
    res = other_api.get(f"/api/games/{game['id']}/positions")
    assert res.status_code == 403 and res.json()["code"] == "forbidden"
    own = other_api.post(f"/api/daily/{day}/portuguese/play").json()
    other_api.post(f"/api/games/{own['id']}/resign")
    assert other_api.get(f"/api/games/{game['id']}/positions").status_code == 200


@pytest.mark.parametrize(
    "query", [{"start": -1}, {"start": "x"}, {"limit": 0}, {"limit": 201}, {"limit": "1.5"}]
)
def test_a_replay_refuses_a_page_it_cannot_read(api, query: dict) -> None:  # noqa: ANN001
    game_id, _ = played_game(api, "spanish", deal=1, actions=1, seed=1)
    res = api.get(f"/api/games/{game_id}/positions", query)
    assert res.status_code == 400 and res.json()["code"] == "bad_request"


def test_a_replay_of_no_game_or_without_sign_in(api, anon) -> None:  # noqa: ANN001
    assert api.get("/api/games/999999/positions").status_code == 404
    game_id, _ = played_game(api, "spanish", deal=1, actions=1, seed=1)
    assert anon.get(f"/api/games/{game_id}/positions").status_code == 401


@pytest.fixture
def small_checkpoints(monkeypatch):  # noqa: ANN001, ANN201
    """Positions kept every 5 versions, from an empty store."""
    from games import replay

    monkeypatch.setattr(replay, "CHECKPOINT", 5)
    monkeypatch.setattr(replay, "_checkpoints", type(replay._checkpoints)())
    return replay


@pytest.mark.parametrize("variant", VARIANT_IDS)
def test_pages_from_kept_positions_show_what_was_seen(api, small_checkpoints, variant: str) -> None:  # noqa: ANN001
    """Pages read last first, then in order, then again: those after the first start from a
    kept position (an undo right after one is taken back from the position alone), and every
    one shows each version as its answer did."""
    game_id, seen = played_game(api, variant, deal=6, actions=45, seed=11)
    url = f"/api/games/{game_id}/positions"
    for starts in ([40, 30, 20, 10, 0], [0, 10, 20, 30, 40], [35, 3]):
        for start in starts:
            page = api.get(url, {"start": start, "limit": 10}).json()
            assert [p["state"] for p in page] == seen[start : start + 10], (starts, start)
    kept = {v for (gid, _, v) in small_checkpoints._checkpoints if gid == game_id}
    assert kept == set(range(5, len(seen), 5))


def test_an_undo_just_after_a_kept_position_is_taken_back_from_it(api, small_checkpoints) -> None:  # noqa: ANN001
    game = api.post("/api/games", {"variant": "spanish", "deal": 2}, format="json").json()
    state, url = game["state"], f"/api/games/{game['id']}"
    seen = [state]
    for v in range(8):
        if v in (5, 6):  # two undos in a row, right after the position kept at version 5
            res = api.post(f"{url}/undo", {"v": v}, format="json")
        else:
            res = api.post(
                f"{url}/moves", {"move": seen[-1]["legal_moves"][0], "v": v}, format="json"
            )
        seen.append(res.json()["state"])
    api.get(f"{url}/positions", {"start": 0, "limit": 6})  # keeps version 5
    assert [p["state"] for p in api.get(f"{url}/positions", {"start": 5}).json()] == seen[5:]


def test_a_page_reads_the_history_from_its_kept_position(api, small_checkpoints, monkeypatch):  # noqa: ANN001, ANN201
    """A page read the whole history up to its end, however far back its kept position was:
    at 100,000 actions, all of them for every page. Only an undo that reaches back past the
    kept position needs the history before it."""
    game = api.post("/api/games", {"variant": "spanish", "deal": 2}, format="json").json()
    url, seen = f"/api/games/{game['id']}", [game["state"]]
    for v in range(14):
        if v in (11, 12, 13):  # the third takes back a move from before version 10
            res = api.post(f"{url}/undo", {"v": v}, format="json")
        else:
            move = seen[-1]["legal_moves"][0]
            res = api.post(f"{url}/moves", {"move": move, "v": v}, format="json")
        seen.append(res.json()["state"])
    api.get(f"{url}/positions", {"start": 0, "limit": 15})  # keeps versions 5 and 10
    reads = []
    read = small_checkpoints._read
    monkeypatch.setattr(
        small_checkpoints, "_read", lambda g, a, e: reads.append(a) or read(g, a, e)
    )

    def page(start: int) -> list[dict]:
        return [p["state"] for p in api.get(f"{url}/positions", {"start": start}).json()]

    assert page(7) == seen[7:] and reads == [4]  # from version 5: the actions from the 5th on
    reads.clear()
    assert page(12) == seen[12:] and reads == [9, 0]  # the undo at 13 reaches back past 10


def test_undone_moves_follow_the_standing_moves() -> None:
    from games.replay import undone_moves

    history = ["a", "b", "undo", "c", "undo", "undo", "d", "e", "undo"]
    assert undone_moves(history) == {2: "b", 4: "c", 5: "a", 8: "e"}
    assert undone_moves(history[4:], ["a", "c"]) == {0: "c", 1: "a", 4: "e"}  # from a checkpoint
    assert undone_moves(history[4:], ["c"]) is None  # reaches back past what it was given
