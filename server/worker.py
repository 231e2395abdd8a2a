"""`python -m server.worker [daphne's arguments]`: daphne, on the project's reactor.

daphne installs Twisted's asyncio reactor when it is imported, unless an asyncio reactor is
installed already; this installs `server.reactor.SoonWriteReactor` first, on a loop set up as
daphne sets up its own (ASGI_THREADS), then runs daphne's command line with the project's
server and socket protocol (server.daphne_server).

The loop is uvloop's (EVENT_LOOP=uvloop, the default where it is installed) or asyncio's own
(EVENT_LOOP=asyncio). Twisted's asyncio reactor only asks the loop for readers, writers, timers
and `call_soon`, which uvloop runs in C instead of asyncio's Python `_run_once` and selector.
Measured in session 13 (bench/ws_moves.py's target cell, two servers side by side, windows
alternated, six rounds): 5,012 moves/s on average against 4,426 (+13 %; faster in 5 of 6
rounds), 186 against 205 µs of server CPU per move and 80 against 85 per echo. A move wakes the
loop more often than an echo does (the batch's connection, its futures), so it gains more.

It also sets the GIL's switch interval (GIL_SWITCH_INTERVAL_MS, default 5 ms: CPython's own).
While move batches on PostgreSQL ran on a thread, 1 ms served them better (3545 and 3959
moves/s against 3369 and 3359 at 5 ms, at 100 clients). Since they run on the event loop
(games.loop_writer) it no longer helps: 4763 and 4760 moves/s at 5 ms against 4668 and 4383 at
1 ms, alternating, and on SQLite 3799 and 4005 against 3807 and 3884. So the default is
CPython's again; the setting stays for measuring.
"""

from __future__ import annotations

import asyncio
import os
import sys
from concurrent.futures import ThreadPoolExecutor

from django.core.exceptions import ImproperlyConfigured

from server.env import env_count, env_number, env_whole
from server.gc_tuning import freeze_wanted, gen0_threshold

SWITCH_INTERVAL_MS = 5.0
EVENT_LOOPS = ("uvloop", "asyncio")


def event_loop_choice() -> str:
    choice = os.environ.get("EVENT_LOOP") or "uvloop"
    if choice not in EVENT_LOOPS:
        raise ImproperlyConfigured(
            f"EVENT_LOOP must be one of {', '.join(EVENT_LOOPS)}, not {choice!r}"
        )
    return choice


def new_event_loop() -> asyncio.AbstractEventLoop:
    """The loop EVENT_LOOP names; asyncio's, with a warning, if uvloop is asked for but missing
    (it has no Windows build)."""
    if event_loop_choice() == "uvloop":
        try:
            import uvloop
        except ImportError:
            print(
                "EVENT_LOOP=uvloop, but uvloop is not installed: using asyncio's loop.",
                file=sys.stderr,
            )
        else:
            return uvloop.new_event_loop()
    return asyncio.new_event_loop()


def switch_interval_ms() -> float:
    return env_number("GIL_SWITCH_INTERVAL_MS", SWITCH_INTERVAL_MS)


def set_switch_interval() -> float:
    """Apply GIL_SWITCH_INTERVAL_MS; returns the interval in seconds."""
    sys.setswitchinterval(switch_interval_ms() / 1000)
    return sys.getswitchinterval()


# Queries Django keeps per database connection under DEBUG (its own limit is 9,000). A worker's
# connections last as long as its threads, and every socket's reads went into their logs: with
# `make run` (DEBUG on) a worker grew by 7 MB per 1,000 sockets opened and closed, and a soak
# saw 1 MB a minute. DEBUG_QUERIES_KEPT sets how many; a production server (DEBUG=0) logs none.
DEBUG_QUERIES_KEPT = 200


def queries_kept() -> int:
    return env_whole("DEBUG_QUERIES_KEPT", DEBUG_QUERIES_KEPT)


def cap_query_log() -> int:
    """Keep at most DEBUG_QUERIES_KEPT queries per database connection in this process; call
    it before any connection is made. Returns the cap."""
    from django.db.backends.base.base import BaseDatabaseWrapper

    kept = queries_kept()
    BaseDatabaseWrapper.queries_limit = kept
    return kept


def asgi_threads() -> int | None:
    """ASGI_THREADS, the default executor's threads (daphne's own setting), or None: unset."""
    return env_count("ASGI_THREADS", 1) if os.environ.get("ASGI_THREADS") else None


def check_settings() -> None:
    """Read every setting a worker reads before Django, raising ImproperlyConfigured for the
    first that cannot be used: server.serve and server.stores call it, so a typo stops
    `make run` with one line rather than a traceback from every worker."""
    event_loop_choice()
    switch_interval_ms()
    queries_kept()
    asgi_threads()
    gen0_threshold()
    freeze_wanted()


def start_day_end_pushes(loop: asyncio.AbstractEventLoop) -> None:
    """Watch for midnight (games.day_end). Called once the loop runs: daphne has imported the
    application by then, so Django is set up."""
    from games import day_end

    day_end.start(loop)


def main(argv: list[str] | None = None) -> None:
    # As manage.py and server.asgi: what the worker imports before the application (daphne's
    # server, autobahn, this project's protocol classes) may read settings too.
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "server.settings")
    from server import reactor

    set_switch_interval()
    cap_query_log()

    loop = new_event_loop()
    if threads := asgi_threads():
        loop.set_default_executor(ThreadPoolExecutor(max_workers=threads))
    reactor.install(loop)
    from server import daphne_server  # imports daphne, which keeps the reactor installed above

    loop.call_soon(start_day_end_pushes, loop)
    daphne_server.ProjectCommandLine().run(sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":
    main()
