"""The browser client's page, as the server sends it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

STATIC = Path(__file__).resolve().parents[2] / "web" / "static" / "web"
IMPORT = re.compile(r'^import\b[^;]*?\bfrom\s+"\./([\w-]+\.js)";', re.MULTILINE)
PRELOAD = re.compile(r'<link rel="modulepreload" href="/static/web/([\w-]+\.js)">')


def imported_by(module: str) -> set[str]:
    """The modules `module` imports, directly or through others."""
    seen: set[str] = set()
    todo = [module]
    while todo:
        for name in IMPORT.findall((STATIC / todo.pop()).read_text()):
            if name not in seen:
                seen.add(name)
                todo.append(name)
    return seen


@pytest.mark.django_db
def test_the_page_names_every_module_the_client_imports_so_they_load_at_once(client) -> None:  # noqa: ANN001
    """Without the names the browser found the modules a level of imports at a time: app.js,
    then the seven it imports, then the two those import, a round trip each."""
    html = client.get("/").content.decode()
    assert imported_by("app.js") >= {"game.js", "cards.js", "socket.js"}
    assert set(PRELOAD.findall(html)) == imported_by("app.js")
    assert html.index('<script type="module" src="/static/web/app.js">') < html.index(
        "modulepreload"
    )
