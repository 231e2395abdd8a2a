"""Redis away for a moment: what its cache holds (the request limits' counts, hints' kept
lines) is not worth a 500 for a sign-in, a new game or a hint (server.throttling)."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from server import stores
from tests.conftest import redis_down

pytestmark = pytest.mark.django_db


class CacheAway:
    """A cache whose Redis cannot be reached: every call raises as Django's RedisCache does."""

    def __getattr__(self, name: str):  # noqa: ANN204
        def away(*args: object, **kwargs: object) -> None:
            raise redis_down()

        return away


@pytest.fixture
def cache_away(monkeypatch):  # noqa: ANN001, ANN201
    from rest_framework.throttling import SimpleRateThrottle

    from games import hints

    monkeypatch.setattr(SimpleRateThrottle, "cache", CacheAway())
    monkeypatch.setattr(hints, "cache", CacheAway())
    monkeypatch.setattr(stores, "_away_logged", {})


def test_signing_up_and_in_and_playing_go_on_while_the_cache_is_away(cache_away, caplog):  # noqa: ANN001
    anon = APIClient()
    signed_up = anon.post(
        "/api/auth/register", {"username": "ada", "password": "s3cret-pass"}, format="json"
    )
    assert signed_up.status_code == 201, signed_up.content
    for _ in range(2):
        token = anon.post(
            "/api/auth/token", {"username": "ada", "password": "s3cret-pass"}, format="json"
        )
        assert token.status_code == 200, token.content
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {token.json()['token']}")
    game = api.post("/api/games", {"variant": "spanish", "deal": 7}, format="json")
    assert game.status_code == 201, game.content
    assert api.get(f"/api/games/{game.json()['id']}/hint").status_code == 200
    assert api.get("/api/games/live").status_code == 200
    lines = [r.getMessage() for r in caplog.records if r.name.startswith("server.")]
    # Once a minute for each: the second sign-in logged nothing more.
    assert sorted(line.split(" (")[0] for line in lines) == [
        "A hint's kept line",
        "The auth limit",
        "The hint limit",
        "The live limit",
        "The new_game limit",
        "The register limit",
    ], lines
    assert all("Connection refused" in line for line in lines)
