"""`python -m server.worker [daphne's arguments]`: daphne, on the project's reactor.

daphne installs Twisted's asyncio reactor when it is imported, unless an asyncio reactor is
installed already; this installs `server.reactor.SoonWriteReactor` first, on a loop set up as
daphne sets up its own (ASGI_THREADS), then runs daphne's command line.

It also shortens the GIL's switch interval (GIL_SWITCH_INTERVAL_MS, 1 ms; CPython's is 5 ms).
A worker has two busy threads: the event loop, and the thread that writes move batches, which
waits on PostgreSQL five times a batch. Each time its answer is in, it waits for the loop to
hand over the GIL, up to a whole interval when the loop is busy. Measured on PostgreSQL at 100
clients, two runs each, alternating: 3545 and 3959 moves/s (53 % of the echo both times) at
1 ms, 3369 and 3359 (45 % and 48 %) at 5 ms, with no loss on the echo.
"""

from __future__ import annotations

import asyncio
import os
import sys
from concurrent.futures import ThreadPoolExecutor

SWITCH_INTERVAL_MS = 1.0


def set_switch_interval() -> float:
    """Apply GIL_SWITCH_INTERVAL_MS; returns the interval in seconds."""
    ms = float(os.environ.get("GIL_SWITCH_INTERVAL_MS", SWITCH_INTERVAL_MS))
    sys.setswitchinterval(ms / 1000)
    return sys.getswitchinterval()


def main(argv: list[str] | None = None) -> None:
    from server import reactor

    set_switch_interval()

    loop = asyncio.new_event_loop()
    if "ASGI_THREADS" in os.environ:
        loop.set_default_executor(ThreadPoolExecutor(max_workers=int(os.environ["ASGI_THREADS"])))
    reactor.install(loop)

    from daphne.cli import CommandLineInterface

    CommandLineInterface().run(sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":
    main()
