"""`python -m server.stores`, which `make run` asks before it migrates: a store that does not
answer stops the start with one line per store, and the embedded default passes silently."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from server.stores import first_line, where

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def closed_port() -> Iterator[int]:
    """A port bound and not listening: a connection to it is refused at once."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]


def run_stores(**env: str) -> subprocess.CompletedProcess[str]:
    environ = {
        k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL", "SQLITE_PATH")
    }
    environ.update(env)
    return subprocess.run(
        [sys.executable, "-m", "server.stores"],
        cwd=ROOT,
        env=environ,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_unreachable_database_and_redis_stop_the_start_with_one_line_each(closed_port):
    done = run_stores(
        DATABASE_URL=f"postgres://arena:secret@127.0.0.1:{closed_port}/arena",
        REDIS_URL=f"redis://127.0.0.1:{closed_port}/0",
    )
    assert done.returncode == 1
    lines = done.stderr.splitlines()
    assert len(lines) == 2, done.stderr
    assert lines[0].startswith(f"PostgreSQL at 127.0.0.1:{closed_port}/arena cannot be used (")
    assert "unset DATABASE_URL" in lines[0]
    assert lines[1].startswith(f"Redis at 127.0.0.1:{closed_port}/0 cannot be used (")
    assert "unset REDIS_URL" in lines[1]
    assert "secret" not in done.stderr and "Traceback" not in done.stderr


def test_an_sqlite_path_that_cannot_be_opened_is_named(tmp_path):
    path = tmp_path / "no such folder" / "arena.sqlite3"
    done = run_stores(SQLITE_PATH=str(path))
    assert done.returncode == 1
    assert done.stderr.strip().startswith(f"The SQLite database {path} cannot be opened (")


def test_the_embedded_default_passes_silently(tmp_path):
    done = run_stores(SQLITE_PATH=str(tmp_path / "arena.sqlite3"))
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


def test_where_names_host_port_and_database_without_credentials():
    assert where("postgres://u:p@db.example:6543/arena", 5432) == "db.example:6543/arena"
    assert where("redis://:p@cache", 6379) == "cache:6379"


def test_first_line_keeps_a_messages_first_line_or_its_type():
    assert first_line(OSError("refused\n\tIs the server running?")) == "refused"
    assert first_line(TimeoutError()) == "TimeoutError"


def test_a_setting_the_server_refuses_stops_the_start_with_its_line(closed_port):
    done = run_stores(DEBUG="maybe", DATABASE_URL=f"postgres://a:secret@127.0.0.1:{closed_port}/x")
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        "The settings cannot be used: DEBUG must be 1 or 0 (or true/false, yes/no, on/off),"
        " not 'maybe'"
    ], done.stderr


@pytest.mark.parametrize(
    ("setting", "line"),
    [
        ({"ASGI_THREADS": "many"}, "ASGI_THREADS must be a whole number of at least 1, not 'many'"),
        # Read by server.serve, after the migration: `make run` migrated, then stopped on it.
        ({"PORT": "70000"}, "PORT must be a port number from 0 to 65535, not '70000'"),
        ({"WEB_WORKERS": "two"}, "WEB_WORKERS must be a whole number of at least 1, not 'two'"),
    ],
)
def test_a_serving_setting_the_server_refuses_stops_the_start_before_migrating(
    tmp_path,  # noqa: ANN001
    setting: dict,
    line: str,
):
    """`make run` asks server.stores before it migrates: the workers' settings and the
    server command's are read there too."""
    done = run_stores(SQLITE_PATH=str(tmp_path / "db.sqlite3"), **setting)
    assert done.returncode == 1
    assert done.stderr.splitlines() == [f"The settings cannot be used: {line}"], done.stderr
