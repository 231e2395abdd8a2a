"""Cross-origin access to the API (server.cors): a page on another site uses it with a token,
never with this site's session."""

from __future__ import annotations

import pytest
from django.test import Client

from tests.conftest import play_line

pytestmark = pytest.mark.django_db

ELSEWHERE = "https://client.example"


def preflight(client: Client, path: str, method: str = "POST") -> object:
    return client.options(
        path,
        HTTP_ORIGIN=ELSEWHERE,
        HTTP_ACCESS_CONTROL_REQUEST_METHOD=method,
        HTTP_ACCESS_CONTROL_REQUEST_HEADERS="authorization, content-type",
    )


@pytest.mark.parametrize(
    "path", ["/api/games", "/api/games/1/moves", "/api/auth/token", "/api/me", "/api/nowhere"]
)
def test_a_preflight_is_answered_without_a_credential(path: str) -> None:
    """It carries none (browsers never send one on a preflight): a view would answer 401, and
    the browser would then refuse the request it was asking about."""
    res = preflight(Client(), path)
    assert res.status_code == 204
    assert res.content == b""
    assert res["Access-Control-Allow-Origin"] == "*"
    assert {m.strip() for m in res["Access-Control-Allow-Methods"].split(",")} == {
        "GET",
        "HEAD",
        "POST",
        "DELETE",
    }
    allowed = {h.strip().lower() for h in res["Access-Control-Allow-Headers"].split(",")}
    assert allowed == {"authorization", "content-type"}
    assert int(res["Access-Control-Max-Age"]) > 0
    assert "Access-Control-Allow-Credentials" not in res


def test_answers_under_the_api_are_readable_from_any_origin(api, user) -> None:  # noqa: ANN001
    started = api.post("/api/games", {"variant": "spanish", "deal": 7}, format="json")
    assert started.status_code == 201
    assert started["Access-Control-Allow-Origin"] == "*"
    refused = api.post(
        f"/api/games/{started.json()['id']}/moves", {"move": "t0-t0", "v": 0}, format="json"
    )
    assert refused.status_code == 400 and refused["Access-Control-Allow-Origin"] == "*"
    exposed = {h.strip() for h in refused["Access-Control-Expose-Headers"].split(",")}
    assert {"Link", "Retry-After", "WWW-Authenticate"} <= exposed
    anonymous = Client().get("/api/me", HTTP_ORIGIN=ELSEWHERE)
    assert anonymous.status_code == 401 and anonymous["Access-Control-Allow-Origin"] == "*"
    assert "Access-Control-Allow-Credentials" not in anonymous


def test_a_history_pages_next_link_is_exposed(api, monkeypatch) -> None:  # noqa: ANN001
    """`Link: rel="next"` is how a client pages a history: a page elsewhere must read it."""
    from games.api import views

    monkeypatch.setattr(views, "MOVES_PAGE", 1)
    game = api.post("/api/games", {"variant": "countess", "deal": 3}, format="json").json()
    play_line(api, game["id"], ["draw", "draw"])
    page = api.get(f"/api/games/{game['id']}/moves", HTTP_ORIGIN=ELSEWHERE)
    assert 'rel="next"' in page["Link"]
    assert "Link" in page["Access-Control-Expose-Headers"]


def test_pages_and_static_files_are_not_opened_to_other_sites() -> None:
    res = Client().get("/", HTTP_ORIGIN=ELSEWHERE)
    assert "Access-Control-Allow-Origin" not in res
    assert preflight(Client(), "/").status_code != 204


def test_a_cross_site_write_with_this_sites_session_is_still_refused(user) -> None:  # noqa: ANN001
    """`*` lets no cookie through a browser, and the CSRF check still stands for a request
    that carries the session: another site cannot play as its visitor."""
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    res = client.post(
        "/api/games",
        {"variant": "spanish"},
        content_type="application/json",
        HTTP_ORIGIN=ELSEWHERE,
    )
    assert res.status_code == 403
    assert res.json()["code"] == "forbidden" and "CSRF" in res.json()["detail"]
    assert "Access-Control-Allow-Credentials" not in res
