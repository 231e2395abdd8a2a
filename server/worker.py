"""`python -m server.worker [daphne's arguments]`: daphne, on the project's reactor.

daphne installs Twisted's asyncio reactor when it is imported, unless an asyncio reactor is
installed already; this installs `server.reactor.SoonWriteReactor` first, on a loop set up as
daphne sets up its own (ASGI_THREADS), then runs daphne's command line.

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

SWITCH_INTERVAL_MS = 5.0


def set_switch_interval() -> float:
    """Apply GIL_SWITCH_INTERVAL_MS; returns the interval in seconds."""
    ms = float(os.environ.get("GIL_SWITCH_INTERVAL_MS", SWITCH_INTERVAL_MS))
    sys.setswitchinterval(ms / 1000)
    return sys.getswitchinterval()


def close_oversized_sockets() -> None:
    """Close a socket that sends a frame over daphne's limit with 1009, instead of dropping it.

    daphne reads at most 1 MiB per message (`--websocket_max_message_size`); a frame up to
    that reaches the consumer, which refuses anything over 64 KiB with `bad_message`. A larger
    one autobahn refuses before reading it, and by default by cutting the TCP connection
    (`failByDrop`): the client saw its socket vanish with no close code and no reason. With
    the closing handshake it gets 1009 ("message too big") and autobahn's reason; so do
    protocol errors (1002, 1007). Set before daphne builds its factory.
    """
    import daphne.server
    from daphne.ws_protocol import WebSocketFactory

    class ClosingWebSocketFactory(WebSocketFactory):
        def resetProtocolOptions(self) -> None:  # noqa: N802 - autobahn's name
            super().resetProtocolOptions()
            self.failByDrop = False

    daphne.server.WebSocketFactory = ClosingWebSocketFactory


def start_day_end_pushes(loop: asyncio.AbstractEventLoop) -> None:
    """Watch for midnight (games.day_end). Called once the loop runs: daphne has imported the
    application by then, so Django is set up."""
    from games import day_end

    day_end.start(loop)


def main(argv: list[str] | None = None) -> None:
    from server import reactor

    set_switch_interval()

    loop = asyncio.new_event_loop()
    if "ASGI_THREADS" in os.environ:
        loop.set_default_executor(ThreadPoolExecutor(max_workers=int(os.environ["ASGI_THREADS"])))
    reactor.install(loop)
    close_oversized_sockets()
    loop.call_soon(start_day_end_pushes, loop)

    from daphne.cli import CommandLineInterface

    CommandLineInterface().run(sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":
    main()
