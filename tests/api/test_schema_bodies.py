"""Real answers against the OpenAPI schema the server publishes: every field a body carries is
named there, with its type, so a client generated from the schema knows all of it."""

from __future__ import annotations

import pytest
from jsonschema import Draft202012Validator

from games import clock

pytestmark = pytest.mark.django_db


def _strict(node: object) -> object:
    """OpenAPI 3.0 to JSON Schema: `nullable` admits null beside a `type`; an object admits no
    field its schema does not name (a field the schema does not name is a finding), nor does a
    free-form one (`{}` for its values: a client generated from it knows none of its fields)."""
    if isinstance(node, list):
        return [_strict(n) for n in node]
    if not isinstance(node, dict):
        return node
    out = {k: _strict(v) for k, v in node.items() if k not in ("nullable", "example", "readOnly")}
    if "$ref" in out:
        out["$ref"] = out["$ref"].replace("#/components/schemas/", "#/$defs/")
    if out.get("type") == "object" and out.get("additionalProperties") in (None, {}, True):
        out["additionalProperties"] = False
    # OpenAPI 3.0.3: `nullable` extends the `type` beside it, and does nothing without one (a
    # strict validator, openapi-core, refuses null there).
    return {"anyOf": [out, {"type": "null"}]} if node.get("nullable") and "type" in node else out


def body_problems(schema: dict, method: str, template: str, res) -> list[str]:  # noqa: ANN001
    responses = schema["paths"][template][method]["responses"]
    documented = responses.get(str(res.status_code))
    if documented is None:
        return [f"{method} {template}: {res.status_code} not documented"]
    body = documented["content"]["application/json"]["schema"]
    return [
        f"{method} {template} {res.status_code} at {where}"
        for where in _problems(schema, body, res.json())
    ]


def _problems(schema: dict, body: dict, value: object) -> list[str]:
    defs = {k: _strict(v) for k, v in schema["components"]["schemas"].items()}
    validator = Draft202012Validator({"allOf": [_strict(body)], "$defs": defs})
    return [f"{list(e.absolute_path)}: {e.message[:160]}" for e in validator.iter_errors(value)]


def test_answers_carry_only_what_the_schema_names(api, anon, user):  # noqa: ANN001
    schema = anon.get("/api/schema", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    today = clock.today().isoformat()
    ranked = api.post(f"/api/daily/{today}/spanish/play").json()
    api.post(f"/api/games/{ranked['id']}/resign")
    game = api.post("/api/games", {"variant": "countess", "deal": 3}, format="json").json()
    moved = api.post(f"/api/games/{game['id']}/moves", {"move": "draw", "v": 0}, format="json")
    calls = [
        ("get", "/api/variants", anon.get("/api/variants")),
        ("get", "/api/me", api.get("/api/me")),
        ("get", "/api/users/{username}", anon.get(f"/api/users/{user.username}")),
        ("get", "/api/daily", api.get("/api/daily")),
        ("get", "/api/leaderboards/{variant}", anon.get("/api/leaderboards/spanish")),
        (
            "get",
            "/api/daily/{date}/{variant}/leaderboard",
            api.get(f"/api/daily/{today}/spanish/leaderboard"),
        ),
        ("post", "/api/games/{game_id}/moves", moved),
        ("get", "/api/games/{game_id}", api.get(f"/api/games/{ranked['id']}")),
        ("get", "/api/games/{game_id}/moves", api.get(f"/api/games/{game['id']}/moves")),
        ("get", "/api/games", api.get("/api/games")),
        ("get", "/api/games/{game_id}/positions", api.get(f"/api/games/{game['id']}/positions")),
        ("get", "/api/games/{game_id}", api.get("/api/games/999999")),
    ]
    found = [p for method, path, res in calls for p in body_problems(schema, method, path, res)]
    assert found == []


def test_a_406_is_documented_on_every_operation(api, anon):  # noqa: ANN001
    """An Accept header that admits no JSON gets 406 `not_acceptable` from any endpoint."""
    schema = anon.get("/api/schema", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    res = api.get("/api/me", HTTP_ACCEPT="text/csv")
    assert res.status_code == 406 and res.json()["code"] == "not_acceptable"
    assert body_problems(schema, "get", "/api/me", res) == []
    undocumented = [
        f"{method} {path}"
        for path, operations in schema["paths"].items()
        for method, operation in operations.items()
        if "406" not in operation["responses"]
    ]
    assert undocumented == []


def test_the_per_client_429_is_documented_on_every_operation(anon):  # noqa: ANN001
    """Any request past its client's share gets 429 `rate_limited` (server.http_limit)."""
    schema = anon.get("/api/schema", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    undocumented = [
        f"{method} {path}"
        for path, operations in schema["paths"].items()
        for method, operation in operations.items()
        if "HTTP_REQUESTS_PER_CLIENT"
        not in operation["responses"].get("429", {}).get("description", "")
    ]
    assert undocumented == []
    hint = schema["paths"]["/api/games/{game_id}/hint"]["get"]["responses"]["429"]["description"]
    assert hint.count("`rate_limited`") == 2  # its own throttle's reason, and this one


def test_the_schemas_examples_are_valid_bodies(anon):  # noqa: ANN001
    """Each example the schema shows, request or response, is a body its schema accepts, its
    nulls too: a game's `daily` was `{allOf: [$ref], nullable: true}`, a null there no strict
    validator admits."""
    schema = anon.get("/api/schema", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    found, checked = [], 0
    for path, ops in schema["paths"].items():
        for method, op in ops.items():
            sides = [("request", op.get("requestBody", {})), *op["responses"].items()]
            for status, response in sides:
                body = response.get("content", {}).get("application/json", {})
                for name, example in body.get("examples", {}).items():
                    where = f"{method} {path} {status} {name}"
                    found += [
                        f"{where} {p}" for p in _problems(schema, body["schema"], example["value"])
                    ]
                    checked += 1
    assert checked >= 6 and found == []


def test_nullable_is_only_said_beside_a_type(anon):  # noqa: ANN001
    """OpenAPI 3.0.3: `nullable: true` adds null to the `type` beside it, and means nothing
    without one, so a field that is another schema or null must say so another way."""
    schema = anon.get("/api/schema", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    found: list[str] = []

    def walk(node: object, where: str) -> None:
        if isinstance(node, dict):
            if node.get("nullable") and "type" not in node:
                found.append(where)
            for key, item in node.items():
                walk(item, f"{where}/{key}")
        elif isinstance(node, list):
            for i, item in enumerate(node):
                walk(item, f"{where}[{i}]")

    walk(schema, "")
    assert found == []
