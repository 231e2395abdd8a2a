"""End-to-end fixtures: a real daphne server in a subprocess and the system Chromium.

The server gets its own SQLite file (SQLITE_PATH; DATABASE_URL is removed, REDIS_URL kept if
set), is migrated first, has today's daily challenges made (seed_daily.py), and is killed at
the end. Tests talk to it over HTTP and WebSocket only, like any client; the one exception is
reading a daily challenge's stored winning line from the SQLite file.

Chromium is never downloaded: Debian's headless shell (/usr/bin/chromium-headless-shell) is used,
or its browser (/usr/bin/chromium) when the shell is not installed; having neither skips these
tests locally but fails them when CI is set.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.flows import DESKTOP
from tests.e2e.harness import HttpError, Server
from tests.live_server import daphne_command, free_port, server_env

ROOT = Path(__file__).resolve().parents[2]
# The headless shell first: the browser's own Blink and V8 without its windowing and profile
# machinery (what Playwright itself runs headless). On a 2-core Xeon a new page and context cost
# Chromium 0.05 s of CPU against 0.65 s in the full browser, and a first load of the lobby
# 0.16 s against 0.6 s: the browser tests' Chromium CPU fell from 178 s to 60 s, their time
# from 152 s to 102 s (docs/performance.md, "Session 62").
CHROMIUMS = ("/usr/bin/chromium-headless-shell", "/usr/bin/chromium")
CHROMIUM = os.environ.get("E2E_CHROMIUM") or next(
    (path for path in CHROMIUMS if os.path.exists(path)), CHROMIUMS[-1]
)
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

# What Chromium writes to the console (an error or a warning) when a page breaks a rule of its own.
CONSOLE_FAILURES = (
    "Content Security Policy",
    "closed before the connection is established",
)


def _server_env(sqlite_path: Path) -> dict[str, str]:
    """A fast password hash: the tests make some eighty sign-ups and sign-ins, and PBKDF2 took
    0.3–0.7 s of CPU each, on the cores the browser and the tests share."""
    return server_env(
        sqlite_path,
        DEBUG="1",
        AUTH_THROTTLE_RATE="10000/min",
        REGISTER_THROTTLE_RATE="10000/min",
        LOG_LEVEL="WARNING",
        FAST_PASSWORD_HASH="1",
    )


def _start(srv: Server, env: dict[str, str], procs: list) -> None:
    """Prepare the database and start daphne (in a thread, while the browser starts)."""
    try:
        subprocess.run(
            [sys.executable, str(Path(__file__).with_name("seed_daily.py"))],
            cwd=ROOT,
            env=env,
            check=True,
            timeout=120,
            stdout=subprocess.DEVNULL,
        )
        port = int(srv.base_url.rsplit(":", 1)[1])
        daphne = daphne_command(port)
        with open(srv.log_path, "wb") as log:
            proc = subprocess.Popen(daphne, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
        procs.append(proc)
        deadline = time.monotonic() + 30
        while proc.poll() is None and time.monotonic() < deadline:
            try:
                health = srv.request("GET", "/api/health", wait=False)
                if health and health.get("status") == "ok":
                    return
            except (OSError, HttpError):
                pass
            time.sleep(0.1)
        srv.failure = f"daphne did not become healthy:\n{srv.log_path.read_text()[-3000:]}"
    except Exception as exc:  # noqa: BLE001 - reported to the first test that needs the server
        srv.failure = f"the e2e server could not start: {exc}"
    finally:
        srv.ready.set()


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    workdir = tmp_path_factory.mktemp("e2e-server")
    srv = Server(f"http://127.0.0.1:{free_port()}", workdir / "e2e.sqlite3", workdir / "daphne.log")
    procs: list[subprocess.Popen] = []
    starter = threading.Thread(
        target=_start, args=(srv, _server_env(srv.sqlite_path), procs), daemon=True
    )
    starter.start()
    try:
        yield srv
    finally:
        starter.join(timeout=60)
        for proc in procs:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    """Module scope: Playwright's sync API keeps an event loop running in the main thread while
    it is open, which would break the asyncio tests collected after the browser tests."""
    if not (os.path.exists(CHROMIUM) or shutil.which(CHROMIUM)):
        message = f"{CHROMIUM} is not installed (apt-get install chromium-headless-shell)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture
def open_page(server: Server, browser):  # noqa: ANN001, ANN201
    """open_page(viewport=DESKTOP, **context_options) -> a fresh page in its own context (its
    own cookies); `has_touch=True` for a touch screen.

    JavaScript errors on the page fail the test, and so do anything the page's
    Content-Security-Policy refuses (web/views.py) and a socket closed while it was still
    opening (web/static/web/socket.js `shut`): every flow the tests walk checks them.
    """
    contexts = []
    errors: list[str] = []

    def make(viewport: dict | None = None, **options):  # noqa: ANN003, ANN202
        server.wait_ready()
        context = browser.new_context(
            viewport=viewport or DESKTOP, base_url=server.base_url, **options
        )
        context.set_default_timeout(10_000)
        contexts.append(context)
        page = context.new_page()
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.on("console", lambda msg: refused(msg.type, msg.text))
        return page

    def refused(kind: str, text: str) -> None:
        if kind in ("error", "warning") and any(sign in text for sign in CONSOLE_FAILURES):
            errors.append(text)

    yield make
    for context in contexts:
        context.close()
    assert not errors, f"JavaScript errors on the page: {errors}"
