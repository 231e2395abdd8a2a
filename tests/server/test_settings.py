"""The server's own settings: counts that would leave moves or requests waiting forever are
refused when the settings load, by name, so a typo in a deployment fails at start, not later
under load."""

from __future__ import annotations

import subprocess
import sys

import pytest
from django.core.exceptions import ImproperlyConfigured

from server.env import env_bool, env_count, env_rate
from server.settings import local_secret
from tests.live_server import ROOT, run_django, run_python


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
    run = run_django(
        code,
        DEBUG=debug,
    )
    assert run.returncode == 0, run.stderr
    assert run.stderr.count("Not Found: /nowhere") == 1, run.stderr


def test_log_level_sets_djangos_loggers_too():
    """LOG_LEVEL=ERROR quiets Django's warnings as it does the server's; its SQL log stays
    off at DEBUG."""
    code = (
        "import django, logging; django.setup(); "
        "logging.getLogger('django.request').warning('Not Found: /nowhere'); "
        "logging.getLogger('server.x').warning('a warning of the server'); "
        "logging.getLogger('django.request').error('an error of Django'); "
        "print(logging.getLogger('django.db.backends').getEffectiveLevel())"
    )
    env = {"DJANGO_SETTINGS_MODULE": "server.settings", "SECRET_KEY": "x" * 50}
    run = run_python(code, LOG_LEVEL="ERROR", SQLITE_PATH="/tmp/unused.sqlite3", **env)
    assert run.returncode == 0, run.stderr
    assert "an error of Django" in run.stderr
    assert "Not Found" not in run.stderr and "a warning of the server" not in run.stderr
    run = run_python(code, LOG_LEVEL="DEBUG", SQLITE_PATH="/tmp/unused.sqlite3", **env)
    assert "Not Found" in run.stderr and run.stdout.strip() == "20"  # INFO: no SQL


def test_a_development_key_is_made_once_per_checkout_and_kept(tmp_path):  # noqa: ANN001
    """No key written in the repository: the daily deals derive from it, and anyone could
    compute a development server's deals (tomorrow's too) and their face-down cards."""
    path = tmp_path / ".secret-key"
    key = local_secret(path)
    assert len(key) >= 50 and path.read_text() == key
    assert path.stat().st_mode & 0o077 == 0  # the owner's alone
    assert local_secret(path) == key  # the next run keeps it: sessions and deals stay
    assert local_secret(tmp_path / "another") != key
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


def test_processes_starting_together_share_one_development_key(tmp_path):  # noqa: ANN001
    """daphne's workers start at once; each must sign and deal with the same key."""
    path = tmp_path / ".secret-key"
    code = "from pathlib import Path; from server.settings import local_secret; "
    code += f"print(local_secret(Path({str(path)!r})))"
    env = {"PATH": "/usr/bin:/bin", "SECRET_KEY": "x" * 50}
    runs = [
        subprocess.Popen(
            [sys.executable, "-c", code], cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True
        )
        for _ in range(6)
    ]
    keys = {run.communicate(timeout=60)[0].strip() for run in runs}
    assert keys == {path.read_text()} and len(path.read_text()) >= 50


def test_a_server_in_development_takes_no_key_from_the_repository(tmp_path):  # noqa: ANN001
    path = tmp_path / "key"
    code = "from django.conf import settings; print(settings.SECRET_KEY, settings.DAILY_SECRET)"
    run = run_django(
        code,
        DEBUG="1",
        SECRET_KEY="",
        DAILY_SECRET="",
        LOCAL_SECRET_PATH=str(path),
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == [path.read_text()] * 2


# PBKDF2 at 1,000 rounds (the count is in the hash), as an account made before the switch holds.
_PBKDF2 = "pbkdf2_sha256$1000$saltsaltsalt$UHuMGcEOxtZ0G+8agU8jXjB1Vs6YJf9EqLdDWcFWPzU="
_HASH_CODE = (
    "import django; django.setup(); from django.contrib.auth.hashers import make_password; "
    "print(make_password('correct-horse-9').split('$')[0])"
)


@pytest.mark.parametrize(("fast", "algorithm"), [("1", "md5"), ("0", "pbkdf2_sha256")])
def test_a_test_server_may_hash_passwords_fast(fast: str, algorithm: str):
    run = run_django(
        _HASH_CODE,
        FAST_PASSWORD_HASH=fast,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == algorithm


def test_a_fast_password_hash_is_refused_in_production():
    run = run_python(
        "import server.settings", FAST_PASSWORD_HASH="1", DEBUG="0", SECRET_KEY="x" * 50
    )
    assert run.returncode == 1 and "FAST_PASSWORD_HASH is for test servers" in run.stderr


def test_a_password_hashed_slowly_still_signs_in_with_the_fast_hash():
    code = (
        "import django; django.setup(); from django.contrib.auth.hashers import check_password; "
        f"print(check_password('correct-horse-9', {_PBKDF2!r}))"
    )
    run = run_django(
        code,
        FAST_PASSWORD_HASH="1",
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "True"


def test_in_production_every_plain_http_request_is_redirected_but_the_health_check(tmp_path):  # noqa: ANN001
    code = (
        "import django; django.setup(); from django.test import Client; c = Client(); "
        "print(c.get('/api/health').status_code, c.get('/api/me').status_code, "
        "c.get('/api/health', secure=True).status_code)"
    )
    run = run_django(
        code,
        DEBUG="0",
        ALLOWED_HOSTS="testserver",
        SQLITE_PATH=str(tmp_path / "db.sqlite3"),
    )
    assert run.returncode == 0, run.stderr
    health, me, secure_health = run.stdout.split()
    assert me == "301" and health != "301" and health == secure_health


@pytest.mark.parametrize(
    ("name", "raw", "says"),
    [
        ("DEBUG", "maybe", "DEBUG must be 1 or 0"),
        ("SECURE_SSL_REDIRECT", "2", "SECURE_SSL_REDIRECT must be 1 or 0"),
        ("WS_RATE_BURST", "x", "WS_RATE_BURST must be a number greater than 0"),
        ("WS_RATE_PER_SECOND", "0", "WS_RATE_PER_SECOND must be a number greater than 0"),
        ("HTTP_REQUEST_SECONDS", "nan", "HTTP_REQUEST_SECONDS must be a number greater than 0"),
        ("CONN_MAX_AGE", "ten", "CONN_MAX_AGE must be a whole number of at least 0"),
        ("WS_MAX_WAITING_BYTES", "4M", "WS_MAX_WAITING_BYTES must be a whole number of at least 0"),
        (
            "DAILY_CERTIFY_WORKERS",
            "0",
            "DAILY_CERTIFY_WORKERS must be a whole number of at least 1",
        ),
        ("LOG_LEVEL", "LOUD", "LOG_LEVEL must be DEBUG, INFO, WARNING, ERROR or CRITICAL"),
        ("GAME_LOOP_WRITER", "yes please", "GAME_LOOP_WRITER must be 1 or 0"),
        ("HINT_THROTTLE_RATE", "20/fortnight", "HINT_THROTTLE_RATE must be requests per period"),
        ("AUTH_THROTTLE_RATE", "thirty/min", "AUTH_THROTTLE_RATE must be requests per period"),
        # DRF reads the first letter alone: a minute, whatever was meant.
        ("LIVE_THROTTLE_RATE", "30/mango", "LIVE_THROTTLE_RATE must be requests per period"),
    ],
)
def test_a_setting_of_the_wrong_kind_is_refused_by_name(name: str, raw: str, says: str) -> None:
    """A typo stops the start with a line that names the setting: `DEBUG=maybe` started a
    server in production mode (anything but "1" was off), and the numbers gave tracebacks
    (a float() of "x", logging's "Unable to configure logger")."""
    # In production mode, where SECURE_SSL_REDIRECT is read.
    env = {"DEBUG": "0", "SECRET_KEY": "x" * 50, "SQLITE_PATH": "/tmp/unused.sqlite3", name: raw}
    run = run_python("import server.settings", **env)
    assert run.returncode == 1 and f"ImproperlyConfigured: {says}" in run.stderr, run.stderr


def test_the_usual_spellings_of_a_switch_are_read(monkeypatch) -> None:  # noqa: ANN001
    for raw, value in [("1", True), ("Yes", True), (" on ", True), ("0", False), ("False", False)]:
        monkeypatch.setenv("DEBUG", raw)
        assert env_bool("DEBUG", not value) is value
    monkeypatch.setenv("DEBUG", "")
    assert env_bool("DEBUG", True) is True  # set but empty: the default


@pytest.mark.parametrize(
    ("raw", "rate"),
    [
        ("30/min", "30/min"),
        ("5/S", "5/s"),
        (" 100/hour ", "100/hour"),
        ("12/Minutes", "12/minutes"),
        ("2/day", "2/day"),
        ("", "7/d"),
    ],
)
def test_a_throttle_rate_is_read_as_drf_reads_it(monkeypatch, raw: str, rate: str) -> None:  # noqa: ANN001
    """DRF parses a rate on the first throttled request and knows only lower-case periods:
    "5/S" was a KeyError there, a 500 on every sign-in."""
    from rest_framework.throttling import SimpleRateThrottle

    monkeypatch.setenv("AUTH_THROTTLE_RATE", raw)
    read = env_rate("AUTH_THROTTLE_RATE", "7/d")
    assert read == rate
    assert SimpleRateThrottle.parse_rate(None, read)[0] == int(rate.split("/")[0])


def test_a_database_url_the_server_cannot_read_is_refused_without_repeating_it() -> None:
    """It may hold a password: the line names its scheme and the form wanted."""
    run = run_python("import server.settings", DATABASE_URL="pg://admin:s3cret@db/arena")
    assert run.returncode == 1, run.stderr
    assert "DATABASE_URL is not a database URL this server understands (scheme 'pg')" in run.stderr
    assert "s3cret" not in run.stderr


@pytest.mark.parametrize(
    ("env", "served"),
    [({"DEBUG": "1"}, True), ({"DEBUG": "0"}, False), ({"DEBUG": "0", "WS_ECHO": "1"}, True)],
)
def test_the_benches_echo_socket_is_served_in_production_only_when_asked(env, served) -> None:  # noqa: ANN001
    """It answers every frame with no rate limit: a production server served it to anyone
    signed in."""
    code = (
        "import django; django.setup(); from server.routing import websocket_urlpatterns as p; "
        "print(any(str(u.pattern) == 'ws/echo' for u in p))"
    )
    run = run_django(
        code,
        **env,
    )
    assert run.stdout.strip() == str(served), run.stderr


@pytest.mark.parametrize(
    ("command", "code"),
    [
        ("import sys, manage; sys.argv = ['manage.py', 'migrate']; manage.main()", 1),
        ("from server import serve; raise SystemExit(serve.main(['--port', '0']))", 2),
    ],
)
@pytest.mark.parametrize(
    ("setting", "line"),
    [
        (
            {"DEBUG": "maybe"},
            "DEBUG must be 1 or 0 (or true/false, yes/no, on/off), not 'maybe'",
        ),
        # Read by daphne as Django sets up (an installed app): manage.py ended in its traceback.
        ({"ASGI_THREADS": "many"}, "ASGI_THREADS must be a whole number of at least 1, not 'many'"),
    ],
)
def test_a_refused_setting_is_one_line_outside_make_run_too(
    command: str, code: int, setting: dict, line: str
) -> None:
    """The Docker image starts with `manage.py migrate`, then `python -m server.serve`: both
    ended in a traceback (from each worker, for serve), its last line naming the setting."""
    run = run_python(command, SQLITE_PATH="/tmp/unused.sqlite3", **setting)
    assert run.returncode == code, run.stderr
    assert run.stderr.splitlines() == [f"The settings cannot be used: {line}"], run.stderr
