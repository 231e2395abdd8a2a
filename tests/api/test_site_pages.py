"""The site's own paths: the browser client at `/`, and a page of its own for any other."""

from __future__ import annotations

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db

BROWSER = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"


@pytest.mark.parametrize("path", ["/nothing-here", "/ws/games/1", "/play/3", "/static/no.js"])
@pytest.mark.parametrize("debug", [True, False])
def test_a_path_the_site_does_not_serve_is_its_own_404_page(path, debug, settings):  # noqa: ANN001
    """Under DEBUG (as `make run` serves) Django's 404 listed every URL pattern of the server."""
    settings.DEBUG = debug
    res = Client().get(path, HTTP_ACCEPT=BROWSER)
    assert res.status_code == 404 and res["Content-Type"].startswith("text/html")
    page = res.content.decode()
    assert "Not found" in page and 'href="/"' in page
    assert "URLconf" not in page and "api/" not in page.replace('href="/api/docs"', "")


@pytest.mark.parametrize("method", ["get", "post", "delete"])
def test_a_client_that_does_not_ask_for_html_gets_the_apis_json_404(method):  # noqa: ANN001
    res = getattr(Client(enforce_csrf_checks=True), method)("/nothing-here")
    assert res.status_code == 404 and res.json() == {"code": "not_found", "detail": "No such page."}


def test_the_admin_without_its_slash_still_finds_the_admin():
    res = Client().get("/admin")
    assert res.status_code == 301 and res["Location"] == "/admin/"
