"""The server's own settings: counts that would leave moves or requests waiting forever are
refused when the settings load, by name, so a typo in a deployment fails at start, not later
under load."""

from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured

from server.settings import env_count
from tests.live_server import run_python


@pytest.mark.parametrize("raw", ["0", "-1", "two"])
def test_a_count_under_one_is_refused_by_name(monkeypatch, raw):  # noqa: ANN001
    """With no writer (or room for no move in a batch) a move would wait forever."""
    monkeypatch.setenv("GAME_LOOP_BATCHES", raw)
    with pytest.raises(ImproperlyConfigured, match="GAME_LOOP_BATCHES must be a whole number"):
        env_count("GAME_LOOP_BATCHES", 2)


@pytest.mark.parametrize(
    "name",
    [
        "GAME_LOOP_BATCHES",
        "GAME_BATCH_WRITERS",
        "GAME_MOVE_BATCH",
        "GAME_DB_THREADS",
        "HTTP_CONCURRENCY",
    ],
)
def test_the_server_refuses_to_start_with_a_count_of_zero(name):  # noqa: ANN001
    run = run_python("import server.settings", **{name: "0"})
    assert run.returncode == 1 and f"{name} must be a whole number of at least 1" in run.stderr


def test_a_batch_count_is_read_or_defaults(monkeypatch):  # noqa: ANN001
    monkeypatch.delenv("GAME_LOOP_BATCHES", raising=False)
    assert env_count("GAME_LOOP_BATCHES", 2) == 2
    monkeypatch.setenv("GAME_LOOP_BATCHES", "3")
    assert env_count("GAME_LOOP_BATCHES", 2) == 3


@pytest.mark.parametrize("debug", ["1", "0"])
def test_a_django_warning_is_logged_once(debug: str):
    """Under DEBUG, Django's own console handler and the root's both printed it."""
    code = (
        "import django, logging; django.setup(); "
        "logging.getLogger('django.request').warning('Not Found: /nowhere')"
    )
    run = run_python(
        code,
        DJANGO_SETTINGS_MODULE="server.settings",
        DEBUG=debug,
        SECRET_KEY="x" * 50,
        SQLITE_PATH="/tmp/unused.sqlite3",
    )
    assert run.returncode == 0, run.stderr
    assert run.stderr.count("Not Found: /nowhere") == 1, run.stderr
