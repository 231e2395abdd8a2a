"""Shared fixtures: users with tokens, authenticated API clients, service URLs."""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator

import pytest
from django.conf import settings
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

_names = itertools.count(1)

# The daily deals derive from DAILY_SECRET, and a development server makes a random key per
# checkout (server.settings.local_secret): the suite pins one, here and in the environment of
# every server it starts, so a day's deals are the same on every machine and every run.
os.environ["DAILY_SECRET"] = settings.DAILY_SECRET = "daily-deals-of-the-test-suite-only"


@pytest.fixture
def make_user(db):  # noqa: ANN001, ANN201
    from accounts.models import User

    def make(username: str | None = None, password: str = "correct-horse-9") -> User:
        user = User.objects.create_user(
            username=username or f"player{next(_names)}", password=password
        )
        Token.objects.create(user=user)
        return user

    return make


@pytest.fixture
def user(make_user):  # noqa: ANN001, ANN201
    return make_user("alice")


@pytest.fixture
def other_user(make_user):  # noqa: ANN001, ANN201
    return make_user("bob")


def client_for(user) -> APIClient:  # noqa: ANN001
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {user.auth_token.key}")
    return client


@pytest.fixture
def api(user) -> APIClient:  # noqa: ANN001
    return client_for(user)


@pytest.fixture
def other_api(other_user) -> APIClient:  # noqa: ANN001
    return client_for(other_user)


@pytest.fixture
def anon() -> APIClient:
    return APIClient()


_certificates: dict = {}


@pytest.fixture(autouse=True)
def reuse_certificates(monkeypatch):  # noqa: ANN001, ANN201
    from django.conf import settings

    """Certify each (date, variant) once per test session: the real solver, computed once,
    since every test starts from an empty database."""
    from games import daily

    real = daily.certify

    def cached(date, variant, budget=None):  # noqa: ANN001, ANN202
        key = (date, variant, budget)
        if key not in _certificates:
            _certificates[key] = real(date, variant, budget)
        return _certificates[key]

    monkeypatch.setattr(daily, "certify", cached)
    monkeypatch.setattr(settings, "DAILY_CERTIFY_IN_PROCESS_POOL", False)
    monkeypatch.setattr(settings, "DAILY_PREPARE_AT_START", False)
    # Countess and Barricade A pick the best par among candidates: fewer, smaller searches in
    # tests (still the real solver), so a test session certifies in seconds, not a minute.
    from games.certification import Budget

    small = Budget(candidates=2, max_nodes=5_000, time_limit=5.0)
    monkeypatch.setitem(daily.BUDGETS, "countess", small)
    monkeypatch.setitem(daily.BUDGETS, "barricade", small)


@pytest.fixture
def pool_submissions(settings, monkeypatch):  # noqa: ANN001, ANN201
    """Certification in the process pool, as in production, with the jobs submitted to it
    counted by variant (a Counter)."""
    from collections import Counter

    from games import daily

    settings.DAILY_CERTIFY_IN_PROCESS_POOL = True
    submitted: Counter = Counter()
    real_submit = daily._submit

    def counted(date, variant):  # noqa: ANN001, ANN202
        submitted[variant] += 1
        return real_submit(date, variant)

    monkeypatch.setattr(daily, "_submit", counted)
    return submitted


@pytest.fixture(autouse=True)
def outages_forgotten() -> None:
    """A test whose fan-out or store failed (a layer or cache made to fail) leaves the next
    tests as they were: fan-outs are skipped for a few seconds after one timed out
    (games.broadcast), and an outage is logged once a minute (server.stores.log_away)."""
    from games import broadcast
    from server import stores

    broadcast._broken_until, broadcast._skipped = 0.0, 0
    stores._away_logged.clear()


@pytest.fixture(autouse=True)
def empty_state_cache():  # noqa: ANN201
    """Every test starts from an empty database, so from an empty cache of games too: a game
    id that a rolled-back test used may come back, at the same version, as another game."""
    from games import state_cache

    state_cache.states.entries.clear()


@pytest.fixture
def move_clock(monkeypatch):  # noqa: ANN001, ANN201
    """Shift the server's "today" by a number of days."""
    import datetime as dt

    from games import clock

    real = clock.today

    def shift(days: int) -> None:
        monkeypatch.setattr(clock, "today", lambda: real() + dt.timedelta(days=days))

    return shift


THROTTLED_CLIENT = "127.0.0.1"  # the test client's address, as DRF's throttles see it


# What tests leave in the cache that a later test (or a later run, on Redis) would trip on.
TEST_CACHE_KEYS = (
    "throttle_*",  # throttle counts: user ids repeat from test to test, so a later one hears 429
    "day-end:*",  # a midnight claimed (games.day_end): a later run would find it taken
    "day-prepare:*",  # a day's certification claimed (games.day_end), the same way
    "day-close:*",  # the close of the days before a day claimed (games.day_end), the same way
    "hint-line:*",  # a hint's kept line (games.hints): its key names the game's start, so
    # another game never reads it, but a test's are dropped with the rest
)


@pytest.fixture(autouse=True)
def fresh_cache() -> None:
    """Each test starts with none of the cache keys tests leave behind: they outlive a test (in
    the process's memory, or in Redis, the cache when REDIS_URL is set, for days). On Redis only
    those keys are dropped: it holds other data."""
    from django.core.cache import cache

    backend = getattr(cache, "_cache", None)
    if hasattr(backend, "get_client"):  # Redis
        client = backend.get_client(write=True)
        for pattern in TEST_CACHE_KEYS:
            keys = list(client.scan_iter(match=cache.make_key(pattern)))
            if keys:
                client.delete(*keys)
    else:
        cache.clear()


@pytest.fixture(autouse=True, scope="session")
def flush_by_delete_on_postgresql() -> Iterator[None]:
    """A test with `transaction=True` ends with Django's flush, one TRUNCATE of every table on
    PostgreSQL. On this project's machines that took 0.24 s a test (68 s of the suite's worker
    time); TRUNCATE makes new files for every table and index. DELETE FROM each table took
    7 ms for 25 small tables against 484 for TRUNCATE. Same rows left (none), same sequences
    (a flush without `reset_sequences` restarts none either); Django's foreign keys are
    deferred, so the order of the deletes doesn't matter within the flush's transaction."""
    from django.db.backends.postgresql.operations import DatabaseOperations

    truncate = DatabaseOperations.sql_flush

    def delete(self, style, tables, *, reset_sequences=False, allow_cascade=False):  # noqa: ANN001, ANN202
        if reset_sequences:
            return truncate(
                self, style, tables, reset_sequences=reset_sequences, allow_cascade=allow_cascade
            )
        return [f"DELETE FROM {self.quote_name(table)};" for table in tables]

    DatabaseOperations.sql_flush = delete
    yield
    DatabaseOperations.sql_flush = truncate


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):  # noqa: ANN001, ANN201
    """Real PBKDF2 costs ~0.3 s a user; tests that make dozens of users use a fast hasher."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def redis_down() -> ConnectionError:
    """The error a Redis client raises while its server cannot be reached."""
    return ConnectionError("Error 111 connecting to redis:6379. Connection refused.")


async def layer_down(*args: object, **kwargs: object) -> None:
    """A channel layer's send while its Redis cannot be reached."""
    raise redis_down()


# Whether a backend waits for a lock the given one holds (PostgreSQL).
WAITING_ON_THE_HOLDER = (
    "SELECT count(*) FROM pg_stat_activity WHERE %s = ANY(pg_blocking_pids(pid))"
)


def play_line(api: APIClient, game_id: int, line: list[str], v: int = 0) -> dict:
    """Play moves one by one through REST, each on the version the previous one returned."""
    body: dict = {}
    for move in line:
        res = api.post(f"/api/games/{game_id}/moves", {"move": move, "v": v}, format="json")
        assert res.status_code == 200, res.json()
        body = res.json()
        v = body["v"]
    return body


@pytest.fixture(autouse=True, scope="module")
def close_game_db_threads(django_db_blocker):  # noqa: ANN001, ANN201
    """Game sockets write through a thread pool on PostgreSQL; close its connections after
    each module so the test database can be dropped at the end."""
    yield
    import time

    from django.db import connection, connections

    from games.socket_calls import shutdown_db_pool

    shutdown_db_pool()
    if connection.vendor != "postgresql":
        return
    # asgiref's one thread for thread-sensitive calls outlives the module: close its
    # connection there, or the wait below ends it from the server side while it is still
    # this thread's, and the next module's first call on it fails ("the connection is lost").
    from asgiref.sync import SyncToAsync

    SyncToAsync.single_thread_executor.submit(connections.close_all).result()
    # A closed connection's server process lingers for a moment; wait for it, or dropping
    # the test database at the end fails with "being accessed by other users".
    deadline = time.monotonic() + 3
    with django_db_blocker.unblock():
        while time.monotonic() < deadline:
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                    "AND pid <> pg_backend_pid()"
                )
                if cursor.fetchone()[0] == 0:
                    break
            time.sleep(0.05)
        else:  # a straggler idle connection of a finished worker thread: end it
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE datname = current_database() AND pid <> pg_backend_pid()"
                )
        connection.close()


@pytest.fixture
async def close_sockets_left_open():  # noqa: ANN201
    """Disconnect the consumer-test sockets a test left open (tests.ws.helpers.OPEN), so each
    consumer ends through its disconnect handler, not by having its tasks cancelled with the
    test's event loop (on Redis a cancelled receive could leave the teardown waiting); then
    close the loop's move batcher, whose PostgreSQL connection would outlive the loop."""
    from games.move_batcher import close_batcher
    from tests.ws.helpers import close_open_sockets

    yield
    await close_open_sockets()
    await close_batcher()
