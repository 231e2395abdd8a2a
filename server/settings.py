"""Settings for Solitaire Arena, read from the environment (12-factor).

With no environment at all the server runs embedded: a SQLite file beside the
project and the in-memory channel layer, so a fresh machine needs no services.
`DATABASE_URL` and `REDIS_URL` switch to PostgreSQL and Redis.
"""

from __future__ import annotations

import hashlib
import os
import secrets
from contextlib import suppress
from pathlib import Path

import dj_database_url
from django.conf import global_settings
from django.core.exceptions import ImproperlyConfigured

from server.env import env_bool, env_count, env_list, env_number, env_rate, env_whole

BASE_DIR = Path(__file__).resolve().parent.parent


DEBUG = env_bool("DEBUG", True)


def local_secret(path: Path) -> str:
    """The development key of this checkout: made at random the first time, kept in `path`
    (git ignores it) so sessions and daily deals stay the same from one run to the next.

    A key written in the repository is public, and the daily deals derive from it: anyone could
    compute a `make run` server's deal numbers, tomorrow's too, and with them every face-down
    card of a ranked Countess or Barricade A attempt. Processes starting together (daphne's
    workers) all read the one key the first of them links into place."""
    try:
        key = path.read_text().strip()
    except FileNotFoundError:
        key = ""
    if key:
        return key
    draft = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        draft.write_text(secrets.token_urlsafe(50))
        draft.chmod(0o600)
        with suppress(FileExistsError):  # another process got there first: its key stands
            os.link(draft, path)
    finally:
        draft.unlink(missing_ok=True)
    return path.read_text().strip()


SECRET_KEY = os.environ.get("SECRET_KEY") or ""
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("SECRET_KEY must be set when DEBUG=0")
    SECRET_KEY = local_secret(Path(os.environ.get("LOCAL_SECRET_PATH") or BASE_DIR / ".secret-key"))

# The daily deal number is derived from this secret so nobody can compute tomorrow's deal.
DAILY_SECRET = os.environ.get("DAILY_SECRET") or SECRET_KEY
# Certify daily deals in a worker process, off the request threads (see games.daily).
DAILY_CERTIFY_IN_PROCESS_POOL = env_bool("DAILY_CERTIFY_IN_PROCESS_POOL", True)
# Processes that certify a day's challenges side by side (games.daily.start_certifying).
DAILY_CERTIFY_WORKERS = env_count("DAILY_CERTIFY_WORKERS", 2)
# After a certification fails (a solver error, no candidate proven), how long its challenge is
# answered 503 `unavailable` before a request tries again (games.daily.ensure_daily).
DAILY_CERTIFY_RETRY_SECONDS = env_whole("DAILY_CERTIFY_RETRY_SECONDS", 300)
# Whether a server process certifies today's challenges as it starts (games.day_end.watch), so
# its first visitor does not wait for them; off in the tests' servers.
DAILY_PREPARE_AT_START = env_bool("DAILY_PREPARE_AT_START", True)
# Whether another player's game on today's deal may be watched only once your own ranked
# attempt at that challenge is over (games.selectors.can_view). PROTOCOL.md lets any signed-in
# user watch any game, so it is off; a competition that would rather nobody learn a deal's stock
# by watching may turn it on (a second account still could, by playing the deal itself).
WATCH_AFTER_OWN_ATTEMPT = env_bool("WATCH_AFTER_OWN_ATTEMPT", False)

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "channels",
    "accounts",
    "games",
    "web",
]

MIDDLEWARE = [
    "server.middleware.KnownHostMiddleware",
    "server.cors.CrossOriginMiddleware",
    "server.middleware.ResponseHeadersMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "server.middleware.BodySizeLimitMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "server.urls"
ASGI_APPLICATION = "server.asgi.application"
WSGI_APPLICATION = None

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# --- Database -------------------------------------------------------------
DATABASE_URL = os.environ.get("DATABASE_URL", "")
if DATABASE_URL:
    try:
        _database = dj_database_url.parse(
            DATABASE_URL, conn_max_age=env_whole("CONN_MAX_AGE", 600), conn_health_checks=True
        )
    except ValueError as exc:  # an unknown scheme, a malformed URL
        scheme = DATABASE_URL.partition("://")[0] if "://" in DATABASE_URL else "none"
        raise ImproperlyConfigured(  # the URL is not repeated: it may hold a password
            f"DATABASE_URL is not a database URL this server understands (scheme {scheme!r}):"
            " postgres://user:password@host:5432/name, or unset for SQLite"
        ) from exc
    DATABASES = {"default": _database}
else:
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": os.environ.get("SQLITE_PATH", str(BASE_DIR / "db.sqlite3")),
            # Keep connections: opening one (and its PRAGMAs) on every socket message costs ms.
            "CONN_MAX_AGE": env_whole("CONN_MAX_AGE", 600),
            "CONN_HEALTH_CHECKS": True,
            "OPTIONS": {
                # IMMEDIATE makes a writing transaction take the lock at BEGIN, so two
                # writers queue instead of failing with "database is locked" mid-way.
                "transaction_mode": "IMMEDIATE",
                "timeout": 20,
                "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            },
            # A file, not shared-cache memory, so tests see real SQLite locking (with the
            # busy timeout) rather than "table is locked" errors from concurrent threads. One
            # per checkout: two clones' suites running at once on one machine shared one name
            # and broke each other's databases ("file is not a database").
            "TEST": {
                "NAME": os.environ.get(
                    "SQLITE_TEST_PATH",
                    f"/tmp/solitaire-arena-test-{hashlib.sha1(bytes(BASE_DIR)).hexdigest()[:10]}"
                    ".sqlite3",
                )
            },
        }
    }

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
AUTH_USER_MODEL = "accounts.User"
AUTHENTICATION_BACKENDS = ["accounts.backends.CaseInsensitiveModelBackend"]

# --- Channel layer --------------------------------------------------------
REDIS_URL = os.environ.get("REDIS_URL", "")
# What this deployment's keys in Redis start with (the cache's and the channel layer's), so that
# several may share one Redis. Parallel test workers (pytest-xdist) get one each, as they get a
# database each: the servers a test starts inherit the worker's name with its environment.
REDIS_KEY_PREFIX = os.environ.get("REDIS_KEY_PREFIX", "arena") + (
    f"-{os.environ['PYTEST_XDIST_WORKER']}" if os.environ.get("PYTEST_XDIST_WORKER") else ""
)
if REDIS_URL:
    # redis-py 8 reads with a 5 s socket timeout by default, and the layer's receive is a
    # blocking BZPOPMIN of up to 5 s: every idle socket died with a TimeoutError (close 1011).
    # Reads may take that long plus slack; a Redis that stops answering is still noticed.
    # Every send and group operation in flight holds a pooled connection, and the pool raises
    # (it does not wait) past its bound, redis-py's default of 100: a hundred sockets moving
    # at once closed with 1011. So the bound is per process and set here.
    REDIS_SOCKET_TIMEOUT = env_number("REDIS_SOCKET_TIMEOUT", 15)
    REDIS_MAX_CONNECTIONS = env_count("REDIS_MAX_CONNECTIONS", 1000)
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "server.channel_layer.RedisLayer",
            "CONFIG": {
                "hosts": [
                    {
                        "address": REDIS_URL,
                        "socket_timeout": REDIS_SOCKET_TIMEOUT,
                        "socket_connect_timeout": 5,
                        "max_connections": REDIS_MAX_CONNECTIONS,
                    }
                ],
                "prefix": f"{REDIS_KEY_PREFIX}:asgi",
                "capacity": 1500,
                "expiry": 30,
            },
        }
    }
    # DRF keeps its throttle counts (sign-up and sign-in attempts per client) in the cache:
    # in Redis, every daphne process counts against the same limit; in each process's memory
    # (below), a limit of 30 a minute let through 30 per worker.
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": REDIS_URL,
            "KEY_PREFIX": REDIS_KEY_PREFIX,
            # Its reads take a millisecond; a Redis that hung held every limited request (a
            # sign-in, a new game) and its HTTP slot for redis-py's 5 s before the limit let
            # it through (server.throttling).
            "OPTIONS": {"socket_timeout": 1, "socket_connect_timeout": 1},
        }
    }
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "server.channel_layer.InProcessChannelLayer"}}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {
        "NAME": "django.contrib.auth.password_validation.MinimumLengthValidator",
        "OPTIONS": {"min_length": 8},
    },
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
    {"NAME": "accounts.validators.NotOnlySpacesValidator"},
]

# Test servers only (the end-to-end tests sign up or in about 80 times): PBKDF2 took 0.3–0.74 s
# of CPU for each on this project's machines, about a minute of those tests. Django's default
# hashers stay behind the fast one, so accounts made without it still sign in; refused in
# production.
if env_bool("FAST_PASSWORD_HASH", False):
    if not DEBUG:
        raise ImproperlyConfigured("FAST_PASSWORD_HASH is for test servers: refused when DEBUG=0")
    PASSWORD_HASHERS = [
        "django.contrib.auth.hashers.MD5PasswordHasher",
        *global_settings.PASSWORD_HASHERS,
    ]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
# Collected files (`make run` and the Docker image run collectstatic) are served as collected:
# in production compressed (.gz beside each file, see STORAGES below). In development, or with
# nothing collected yet, straight from the app folders, so a fresh checkout works as it is.
WHITENOISE_USE_FINDERS = DEBUG or not STATIC_ROOT.is_dir()
WHITENOISE_AUTOREFRESH = DEBUG

# Request bodies above this are refused with 413 before any parsing (see server.middleware).
MAX_REQUEST_BYTES = 64 * 1024
DATA_UPLOAD_MAX_MEMORY_SIZE = MAX_REQUEST_BYTES
# WebSocket frames above this are refused with an error frame.
MAX_WS_FRAME_BYTES = 64 * 1024
# Per-socket token bucket: sustained frames per second and burst. Past it a frame gets a
# `rate_limited` error; this many refusals within 10 s close the socket with 4429.
WS_RATE_PER_SECOND = env_number("WS_RATE_PER_SECOND", 30)
WS_RATE_BURST = env_number("WS_RATE_BURST", 60)
WS_ABUSE_REFUSALS = env_whole("WS_ABUSE_REFUSALS", 50)
# What one user's sockets share in a process: at most this many open at once (one more is
# closed with 4429; 0: no limit), and at most this many `sync`s being answered at once (each a
# database read on the sockets' thread pool); one more gets `rate_limited`.
WS_MAX_SOCKETS_PER_USER = env_whole("WS_MAX_SOCKETS_PER_USER", 256)
# The bench's echo socket, /ws/echo (server.echo): the ceiling bench/ws_moves.py measures the
# game socket against. It answers every frame with no rate limit, so a production server
# (DEBUG=0) serves it only when asked; the benches ask.
WS_ECHO = env_bool("WS_ECHO", DEBUG)
WS_SYNCS_AT_ONCE = env_count("WS_SYNCS_AT_ONCE", 4)
# A socket whose client has stopped reading is dropped once this many bytes of frames wait in
# the server for it (server.daphne_server); a reading client has a few kilobytes at most.
WS_SEND_BUFFER_BYTES = env_whole("WS_SEND_BUFFER_BYTES", 1024 * 1024)
# A socket whose frames wait unhandled past either limit sends far faster than it is served
# (a client that waits for its answers has one or two waiting): it is closed with 4429 at
# once, and its waiting frames dropped (server.daphne_server). 0: no limit.
WS_MAX_WAITING_FRAMES = env_whole("WS_MAX_WAITING_FRAMES", 1024)
WS_MAX_WAITING_BYTES = env_whole("WS_MAX_WAITING_BYTES", 4 * 1024 * 1024)
# HTTP requests in progress at once per process (each holds a thread and a database
# connection); the others wait for a slot (server.http_limit).
HTTP_CONCURRENCY = env_count("HTTP_CONCURRENCY", 16)
# Requests one client (its credential, else its address) may have in progress or waiting at
# once, per process; one more is refused with 429 at once (server.http_limit). 0: no limit.
HTTP_REQUESTS_PER_CLIENT = env_whole("HTTP_REQUESTS_PER_CLIENT", 16)
# Connections open at once from one client address, per process (0: no limit): past it a new
# one is closed as it opens (server.daphne_server.PeerLimit). And the seconds a request, its head
# and its body, may take to arrive in full, however steadily it trickles in; past it, 408.
HTTP_MAX_CONNECTIONS_PER_ADDRESS = env_whole("HTTP_MAX_CONNECTIONS_PER_ADDRESS", 4000)
HTTP_REQUEST_SECONDS = env_number("HTTP_REQUEST_SECONDS", 20)
# Hints (a solver run of up to a second) this process works on at once, for all its users.
HINT_CONCURRENCY = env_count("HINT_CONCURRENCY", 2)
# The most actions (moves and undos) a game may have, so that a game's history stays bounded
# (100,000 rows take 1.2 s to read). No deal needs more than a few hundred, but a bot that
# plays random legal moves until the game ends may well wander for thousands: the bound is
# far past that.
GAME_MAX_MOVES = env_count("GAME_MAX_MOVES", 100_000)
# Games whose engine state and row a process keeps between their moves (games.state_cache):
# about 11 KB each. A game not kept is played the slower way, from its stored state with the
# row lock; 0 keeps none.
GAME_STATE_CACHE = env_whole("GAME_STATE_CACHE", 5000)
# Threads (and so PostgreSQL connections per process) for socket reads and writes.
GAME_DB_THREADS = env_count("GAME_DB_THREADS", 16)
# Socket moves are written in batches (group commit, games.move_batcher): at most this many
# moves per transaction, and this many batches in flight at once per process on threads.
GAME_MOVE_BATCH = env_count("GAME_MOVE_BATCH", 128)
GAME_BATCH_WRITERS = env_count("GAME_BATCH_WRITERS", 1)
# On PostgreSQL, write socket move batches from the event loop (games.loop_writer); 0 writes
# them on a thread. There, this many batches are in flight at once, each on its own connection.
GAME_LOOP_WRITER = env_bool("GAME_LOOP_WRITER", True)
GAME_LOOP_BATCHES = env_count("GAME_LOOP_BATCHES", 2)

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        # Token first: its WWW-Authenticate header turns "not signed in" into a 401.
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["server.json_input.StrictJSONParser"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "server.errors.api_exception_handler",
    "DEFAULT_THROTTLE_RATES": {
        "auth": env_rate("AUTH_THROTTLE_RATE", "30/min"),
        "register": env_rate("REGISTER_THROTTLE_RATE", "30/min"),
        "hint": env_rate("HINT_THROTTLE_RATE", "20/min"),
        "positions": env_rate("POSITIONS_THROTTLE_RATE", "120/min"),
        "new_game": env_rate("NEW_GAME_THROTTLE_RATE", "300/min"),
        "live": env_rate("LIVE_THROTTLE_RATE", "120/min"),
    },
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
    # How many proxies in front append to X-Forwarded-For: a throttle keys on the address the
    # nearest one saw. 0 (no proxy): the connection's address, and the header is ignored.
    "NUM_PROXIES": env_whole("TRUSTED_PROXIES", 0),
}

SPECTACULAR_SETTINGS = {
    "TITLE": "Solitaire Arena API",
    "DESCRIPTION": (
        "REST API of Solitaire Arena. Every error is JSON `{code, detail}`. "
        "A client's page on another site may call it with its token: every answer carries "
        "`Access-Control-Allow-Origin: *`, and preflights are answered (never with credentials). "
        "The WebSocket API is described in docs/websocket.md, served at "
        "[/api/docs/websocket](/api/docs/websocket)."
    ),
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "server.openapi.document_common_refusals",
        "server.openapi.nullable_refs",
    ],
    # Swagger UI from the installed sidecar package: /api/docs works with no internet.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    # games.api.urls' row ids: integers, bounded by the database's bigint.
    "PATH_CONVERTER_OVERRIDES": {"row_id": {"type": "integer", "minimum": 0, "maximum": 2**63 - 1}},
    "SERVE_PERMISSIONS": ["rest_framework.permissions.AllowAny"],
    "SERVE_AUTHENTICATION": [],
}

# --- Production hardening (DEBUG=0) ----------------------------------------
if not DEBUG:
    SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
    # An orchestrator's probe reaches a worker over plain HTTP, past the proxy that holds TLS:
    # redirected, it read 301 for a server that is up (or down). It names no secret.
    SECURE_REDIRECT_EXEMPT = [r"^api/health$"]
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = env_whole("SECURE_HSTS_SECONDS", 31536000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", True)
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_CONTENT_TYPE_NOSNIFF = True
    STORAGES = {
        "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
        "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
    }

LOG_LEVEL = os.environ.get("LOG_LEVEL", "INFO").strip().upper()
if LOG_LEVEL not in {"DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"}:
    raise ImproperlyConfigured(
        "LOG_LEVEL must be DEBUG, INFO, WARNING, ERROR or CRITICAL,"
        f" not {os.environ['LOG_LEVEL']!r}"
    )
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"without_traceback": {"()": "server.errors.WithoutTraceback"}},
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": LOG_LEVEL},
    "loggers": {
        # Django's own configuration gives "django" a console handler of its own under DEBUG,
        # and the record went on to the root's as well: every warning printed twice.
        "django": {"handlers": ["console"], "level": LOG_LEVEL, "propagate": False},
        "django.db.backends": {"level": "INFO"},
        "django.security.DisallowedHost": {"filters": ["without_traceback"]},
    },
}
