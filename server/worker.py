"""`python -m server.worker [daphne's arguments]`: daphne, on the project's reactor.

daphne installs Twisted's asyncio reactor when it is imported, unless an asyncio reactor is
installed already; this installs `server.reactor.SoonWriteReactor` first, on a loop set up as
daphne sets up its own (ASGI_THREADS), then runs daphne's command line.
"""

from __future__ import annotations

import asyncio
import os
import sys
from concurrent.futures import ThreadPoolExecutor


def main(argv: list[str] | None = None) -> None:
    from server import reactor

    loop = asyncio.new_event_loop()
    if "ASGI_THREADS" in os.environ:
        loop.set_default_executor(ThreadPoolExecutor(max_workers=int(os.environ["ASGI_THREADS"])))
    reactor.install(loop)

    from daphne.cli import CommandLineInterface

    CommandLineInterface().run(sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":
    main()
