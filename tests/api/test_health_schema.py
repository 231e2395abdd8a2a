from __future__ import annotations

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
    assert "cdn" not in html.lower()
