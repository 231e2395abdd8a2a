from __future__ import annotations

import json
import re

import pytest

pytestmark = pytest.mark.django_db


def test_health_reports_database_and_channel_layer(anon):  # noqa: ANN001
    res = anon.get("/api/health")
    assert res.status_code == 200
    body = res.json()
    assert body["status"] == "ok"
    assert body["database"]["ok"] and body["channel_layer"]["ok"]


def test_health_is_503_when_the_database_is_down(anon, monkeypatch):  # noqa: ANN001
    from server import health

    monkeypatch.setattr(health, "check_database", lambda: {"ok": False, "error": "down"})
    res = anon.get("/api/health")
    assert res.status_code == 503
    assert res.json()["status"] == "degraded"


def test_a_channel_layer_that_hangs_is_a_503_in_two_seconds_logged_a_line(
    anon,  # noqa: ANN001
    monkeypatch,  # noqa: ANN001
    caplog,  # noqa: ANN001
):
    """A Redis that hung held the check for its socket timeout (15 s), and every failed check
    logged a traceback."""
    import asyncio
    import time

    from channels.layers import get_channel_layer

    from server import health

    async def hang(*args: object) -> None:
        await asyncio.Event().wait()

    monkeypatch.setattr(health, "LAYER_PROBE_SECONDS", 0.2)
    monkeypatch.setattr(get_channel_layer(), "send", hang)
    for _ in range(2):
        started = time.monotonic()
        res = anon.get("/api/health")
        assert res.status_code == 503 and time.monotonic() - started < 2
        assert res.json()["channel_layer"]["error"] == "TimeoutError"
    (line,) = [r for r in caplog.records if r.name == "server.health"]
    assert line.exc_info is None and "channel layer check" in line.getMessage()


@pytest.mark.parametrize("accept", [None, "*/*", "application/json"])
def test_the_schema_is_json_unless_yaml_is_asked_for(anon, accept):  # noqa: ANN001
    """The API is JSON: a client that fetches the schema with no Accept header parses JSON."""
    headers = {} if accept is None else {"HTTP_ACCEPT": accept}
    res = anon.get("/api/schema", **headers)
    assert res.status_code == 200 and "json" in res["Content-Type"]
    assert json.loads(res.content)["openapi"].startswith("3.")


def test_the_schema_refuses_an_accept_it_cannot_meet_in_the_apis_json(anon):  # noqa: ANN001
    """A 406 is the API's error body, sent as JSON, not as an OpenAPI document."""
    res = anon.get("/api/schema", HTTP_ACCEPT="text/html")
    assert res.status_code == 406 and res["Content-Type"] == "application/json"
    assert json.loads(res.content)["code"] == "not_acceptable"
    assert b"\n" not in res.content


def test_the_schema_is_yaml_where_asked_for(anon):  # noqa: ANN001
    yaml = anon.get("/api/schema", HTTP_ACCEPT="application/vnd.oai.openapi")
    assert yaml["Content-Type"].startswith("application/vnd.oai.openapi")
    assert yaml.content.startswith(b"openapi: 3.")
    assert anon.get("/api/schema?format=yaml").content.startswith(b"openapi: 3.")


def test_openapi_schema_documents_the_protocol(anon):  # noqa: ANN001
    res = anon.get("/api/schema", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert res.status_code == 200
    schema = res.json()
    assert schema["openapi"].startswith("3.")
    for path in [
        "/api/auth/register",
        "/api/auth/token",
        "/api/me",
        "/api/games",
        "/api/games/{game_id}/moves",
        "/api/variants",
        "/api/health",
    ]:
        assert path in schema["paths"], path


def test_docs_page_is_served_without_a_cdn(anon):  # noqa: ANN001
    res = anon.get("/api/docs")
    assert res.status_code == 200
    html = res.content.decode()
    assert "swagger" in html.lower()
    # Every script, stylesheet and icon from this server: none from another host (a CDN).
    # (Not "cdn" anywhere in the page: the page's CSRF token is random, and once spelled it.)
    assets = re.findall(r'(?:src|href)="([^"]*)"', html)
    setup = "/api/docs?script="
    assert setup in assets, assets
    assert all(a.startswith("/static/") for a in assets if a != setup), assets


def test_docs_page_runs_no_inline_script_under_its_policy(anon):  # noqa: ANN001
    """Swagger UI's setup script was inline in the page, which therefore had no
    Content-Security-Policy: it is served apart, and the page has one."""
    res = anon.get("/api/docs")
    policy = res["Content-Security-Policy"]
    assert "script-src 'self';" in policy and "frame-ancestors 'none'" in policy, policy
    html = res.content.decode()
    scripts = re.findall(r"<script([^>]*)>", html)
    assert scripts and all("src=" in attrs for attrs in scripts), scripts
    assert "/api/docs" not in anon.get("/api/schema").json()["paths"]
    setup = anon.get("/api/docs?script=")
    assert setup.status_code == 200
    assert setup["Content-Type"].startswith("application/javascript")
    assert "SwaggerUIBundle" in setup.content.decode() and "/api/schema" in setup.content.decode()


def test_the_websocket_reference_is_served_where_the_schema_says(anon):  # noqa: ANN001
    """PROTOCOL.md sends a client's author to docs/websocket.md, which the REST schema cannot
    hold: the server serves the file it has, and the schema's description names the URL."""
    from django.conf import settings

    assert "/api/docs/websocket" in anon.get("/api/schema").json()["info"]["description"]
    res = anon.get("/api/docs/websocket")
    assert res.status_code == 200 and res["Content-Type"] == "text/markdown; charset=utf-8"
    assert res["X-Content-Type-Options"] == "nosniff"  # SecurityMiddleware's, as every answer
    assert res.content == (settings.BASE_DIR / "docs" / "websocket.md").read_bytes()
    assert b"## `/ws/leaderboards/{date}/{variant}`" in res.content
    assert anon.head("/api/docs/websocket").status_code == 200
    refused = anon.post("/api/docs/websocket")
    assert (refused.status_code, refused.json()["code"]) == (405, "method_not_allowed")
    assert refused["Allow"] == "GET, HEAD"
    assert "/api/docs/websocket" not in anon.get("/api/schema").json()["paths"]


def operation(schema: dict, method: str, path: str) -> dict:
    return schema["paths"][path][method]


def test_each_endpoint_documents_the_errors_it_really_answers(api, anon, other_api):  # noqa: ANN001
    """Errors provoked for real: each one's status is in its endpoint's schema, with its code
    named there; and no endpoint lists an error it cannot give (409 on a read, 401 on a public
    board)."""
    schema = anon.get("/api/schema", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    game = api.post("/api/games", {"variant": "spanish", "deal": 3}, format="json").json()
    moves = f"/api/games/{game['id']}/moves"
    provoked = [
        (
            "post",
            "/api/auth/register",
            anon.post("/api/auth/register", {"username": "x"}, format="json"),
        ),
        (
            "post",
            "/api/auth/token",
            anon.post(
                "/api/auth/token", {"username": "nobody", "password": "wrong-pass-1"}, format="json"
            ),
        ),
        ("get", "/api/me", anon.get("/api/me")),
        (
            "post",
            "/api/games",
            api.post("/api/games", {"variant": "spanish", "deal": 0}, format="json"),
        ),
        ("get", "/api/games/{game_id}", api.get("/api/games/999999")),
        (
            "post",
            "/api/games/{game_id}/moves",
            api.post(moves, {"move": "t0-t0", "v": 0}, format="json"),
        ),
        (
            "post",
            "/api/games/{game_id}/moves",
            api.post(moves, {"move": "draw", "v": 5}, format="json"),
        ),
        (
            "post",
            "/api/games/{game_id}/moves",
            other_api.post(moves, {"move": "draw", "v": 0}, format="json"),
        ),
        (
            "get",
            "/api/daily/{date}/{variant}/leaderboard",
            anon.get("/api/daily/2026-13-01/spanish/leaderboard"),
        ),
        ("get", "/api/leaderboards/{variant}", anon.get("/api/leaderboards/nosuchgame")),
        ("get", "/api/users/{username}", anon.get("/api/users/nobody-at-all")),
    ]
    for method, path, res in provoked:
        assert res.status_code >= 400, (path, res.status_code)
        documented = operation(schema, method, path)["responses"]
        assert str(res.status_code) in documented, (method, path, res.status_code)
        assert f"`{res.json()['code']}`" in documented[str(res.status_code)]["description"]

    taken = anon.post(
        "/api/auth/register",
        {"username": "ada-twice", "password": "correct-horse-9"},
        format="json",
    )
    again = anon.post(
        "/api/auth/register",
        {"username": "ada-twice", "password": "correct-horse-9"},
        format="json",
    )
    assert taken.status_code == 201 and again.status_code == 409
    assert (
        "`username_taken`"
        in operation(schema, "post", "/api/auth/register")["responses"]["409"]["description"]
    )
    assert "429" in operation(schema, "post", "/api/auth/register")["responses"]
    assert "409" not in operation(schema, "get", "/api/games/{game_id}")["responses"]
    assert "409" not in operation(schema, "get", "/api/games/{game_id}/moves")["responses"]
    board = operation(schema, "get", "/api/daily/{date}/{variant}/leaderboard")["responses"]
    assert "403" not in board


def test_every_endpoint_that_refuses_a_wrong_token_says_so(anon):  # noqa: ANN001
    """A wrong token is a 401 `authentication_failed` wherever a view authenticates, public
    ones included (a client should hear that its token is bad, not be served as a stranger),
    and each such endpoint's schema lists it."""
    schema = anon.get("/api/schema", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    values = {"game_id": "1", "date": "2026-01-01", "variant": "spanish", "username": "nobody"}
    refused = []
    for path, operations in schema["paths"].items():
        url = re.sub(r"\{(\w+)\}", lambda m: values[m[1]], path)
        for method, op in operations.items():
            res = anon.generic(
                method.upper(),
                url,
                HTTP_AUTHORIZATION="Token " + "0" * 40,
                content_type="application/json",
            )
            if res.status_code == 401:
                refused.append(path)
                assert res.json()["code"] == "authentication_failed", (method, path)
                assert "`authentication_failed`" in op["responses"]["401"]["description"], (
                    method,
                    path,
                )
    assert "/api/daily" in refused and "/api/leaderboards/{variant}" in refused
    assert "/api/auth/register" not in refused  # sign-up ignores any token it is sent


def _properties(schema: dict, body: dict) -> set[str]:
    ref = body["schema"].get("$ref", "")
    return set(schema["components"]["schemas"][ref.rsplit("/", 1)[-1]]["properties"])


def test_schema_examples_show_what_their_side_really_carries(anon):  # noqa: ANN001
    """A request example is never shown as a response (a password in a 201 body), and each
    example uses only the fields of the body it illustrates."""
    schema = anon.get("/api/schema", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    checked = 0
    for ops in schema["paths"].values():
        for op in ops.values():
            bodies = [op.get("requestBody", {}).get("content", {}).get("application/json")]
            bodies += [
                r.get("content", {}).get("application/json") for r in op["responses"].values()
            ]
            for body in filter(None, bodies):
                for example in body.get("examples", {}).values():
                    assert set(example["value"]) <= _properties(schema, body), example
                    checked += 1
    assert checked >= 6
    register = schema["paths"]["/api/auth/register"]["post"]["responses"]["201"]
    assert "password" not in str(register["content"]["application/json"]["examples"])


def test_every_endpoint_that_reads_a_body_documents_its_refusals(api):  # noqa: ANN001
    """A body that is not JSON, not sent as JSON, over the limit or sent chunked is refused
    before the view reads it; every endpoint with a request body lists those refusals in its
    schema."""
    schema = api.get("/api/schema", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    game = api.post("/api/games", {"variant": "spanish", "deal": 3}, format="json").json()
    bodies = [
        ("{not json", "application/json", {}),
        ('{"move": "draw"}', "text/plain", {}),
        (json.dumps({"pad": "x" * 70_000}), "application/json", {}),
        ("", "application/json", {"HTTP_TRANSFER_ENCODING": "chunked"}),
    ]
    refusals = ("bad_json", "unsupported_media_type", "too_large", "length_required")
    checked = 0
    for path, operations in schema["paths"].items():
        url = path.replace("{game_id}", str(game["id"]))
        for method, op in operations.items():
            if "requestBody" not in op:
                continue
            for body, content_type, headers in bodies:
                res = api.generic(method.upper(), url, body, content_type=content_type, **headers)
                code = res.json()["code"]
                assert code in refusals, (path, code)
                documented = op["responses"].get(str(res.status_code), {}).get("description", "")
                assert f"`{code}`" in documented, (method, path, res.status_code, code)
                checked += 1
    assert checked >= 6 * len(bodies)


def test_a_failed_check_names_the_error_kind_not_its_text(anon, monkeypatch, caplog):  # noqa: ANN001
    """The check is public: a driver's message (hosts, ports, users) goes to the log only."""
    from django.db import OperationalError

    from server import health

    def refused(*args: object, **kwargs: object) -> None:
        raise OperationalError('connection to server at "db.internal" (10.0.0.7) failed')

    monkeypatch.setattr(health.connection, "cursor", refused)
    res = anon.get("/api/health")
    assert res.status_code == 503
    assert res.json()["database"]["error"] == "OperationalError"
    assert "db.internal" not in res.content.decode() and "db.internal" in caplog.text


def test_the_schema_spells_out_a_players_stats_and_recent_results(anon):  # noqa: ANN001
    """`/api/me`'s `stats` and a profile are the same document: both name its fields, down
    to a recent result's `day_over` (an attempt left open when its day ended)."""
    schemas = anon.get("/api/schema", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()[
        "components"
    ]["schemas"]
    assert schemas["Me"]["properties"]["stats"]["$ref"].endswith("/PlayerStats")
    assert {"played", "won", "daily", "current_streak", "recent"} <= set(
        schemas["PlayerStats"]["properties"]
    )
    assert "day_over" in schemas["RecentResult"]["properties"]
    assert {"username", "recent"} <= set(schemas["Profile"]["properties"])


def test_every_session_write_without_a_csrf_token_is_a_documented_403(user, anon):  # noqa: ANN001
    """A browser's session cookie alone does not make a write: Django's CSRF check refuses it
    with 403 `forbidden`, and every write that takes the cookie says so in the schema."""
    from rest_framework.test import APIClient

    schema = anon.get("/api/schema", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    browser = APIClient(enforce_csrf_checks=True)
    browser.force_login(user)
    writes = [
        (method, path)
        for path, operations in schema["paths"].items()
        for method, op in operations.items()
        if method in {"post", "delete"} and {"cookieAuth": []} in op.get("security", [])
    ]
    assert ("post", "/api/games") in writes and ("post", "/api/auth/logout") in writes
    for method, path in writes:
        url = path.format(game_id=1, date="2026-11-26", variant="spanish")
        res = getattr(browser, method)(url, {}, format="json")
        assert res.status_code == 403, (method, path, res.status_code)
        assert res.json()["code"] == "forbidden" and "CSRF" in res.json()["detail"]
        documented = operation(schema, method, path)["responses"]["403"]["description"]
        assert "`forbidden`" in documented and "CSRF" in documented, (method, path)


def test_a_degraded_health_documents_its_body(anon, monkeypatch):  # noqa: ANN001
    from server import health

    schema = anon.get("/api/schema", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    monkeypatch.setattr(health, "check_database", lambda: {"ok": False, "error": "down"})
    body = anon.get("/api/health").json()
    documented = operation(schema, "get", "/api/health")["responses"]["503"]
    ref = documented["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[1]
    assert set(body) == set(schema["components"]["schemas"][ref]["properties"])


def test_each_query_numbers_range_in_the_schema_is_the_one_the_server_keeps(api, anon):  # noqa: ANN001
    """A number at either end of the documented range is read; one past either end is a 400
    `bad_request`: the schema's minimum and maximum are the server's own."""
    schema = anon.get("/api/schema", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    game = api.post("/api/games", {"variant": "spanish", "deal": 3}, format="json").json()
    urls = {
        "/api/games/{game_id}/moves": f"/api/games/{game['id']}/moves",
        "/api/leaderboards/{variant}": "/api/leaderboards/spanish",
    }
    checked = 0
    for path, url in urls.items():
        for param in operation(schema, "get", path)["parameters"]:
            bounds = param["schema"]
            if param["in"] != "query":
                continue
            low, high = bounds["minimum"], bounds["maximum"]
            for value in (low, high):
                assert api.get(url, {param["name"]: value}).status_code == 200, (url, param, value)
            for value in (low - 1, high + 1):
                res = api.get(url, {param["name"]: value})
                assert res.status_code == 400 and res.json()["code"] == "bad_request", (url, value)
            checked += 1
    assert checked == 4


def test_a_challenges_path_names_its_variants_and_its_day_in_the_schema(anon):  # noqa: ANN001
    from games.models import VARIANT_IDS

    schema = anon.get("/api/schema", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    for method, path in [
        ("post", "/api/daily/{date}/{variant}/play"),
        ("post", "/api/daily/{date}/{variant}/practice"),
        ("get", "/api/daily/{date}/{variant}/leaderboard"),
        ("get", "/api/leaderboards/{variant}"),
    ]:
        params = {p["name"]: p["schema"] for p in operation(schema, method, path)["parameters"]}
        assert params["variant"]["enum"] == list(VARIANT_IDS), path
        if "{date}" in path:
            assert params["date"]["format"] == "date", path


@pytest.mark.parametrize("path", ["/api/me", "/api/variants", "/api/health", "/api/games"])
def test_a_format_the_api_does_not_write_is_a_406_not_a_404(api, anon, path):  # noqa: ANN001
    """`?format=xml` is DRF's URL format override: it was a 404 `not_found` (for /api/me, and
    before the 401 of a client with no credentials), a status those operations do not list."""
    for client in (api, anon):
        res = client.get(f"{path}?format=xml")
        assert res.status_code == 406 and res.json()["code"] == "not_acceptable"
    assert api.get(f"{path}?format=json").status_code == 200


def test_every_operation_but_the_health_check_documents_the_databases_503(anon):  # noqa: ANN001
    """server.errors answers any view 503 `unavailable` while the database cannot be reached."""
    schema = anon.get("/api/schema").json()
    for path, operations in schema["paths"].items():
        for method, op in operations.items():
            refusal = op["responses"].get("503")
            if path == "/api/health":
                assert "`unavailable`" not in (refusal or {}).get("description", "")
                continue
            assert refusal is not None and "`unavailable`" in refusal["description"], (method, path)
            assert "Retry-After" in refusal["headers"], (method, path)
