"""Twisted's asyncio reactor, writing to sockets at the end of the loop pass instead of after
the next poll.

Daphne runs on Twisted's `AsyncioSelectorReactor`. There, a socket write only buffers the bytes
and asks the loop to watch the socket for writability (`add_writer`: an `epoll_ctl` and
selector bookkeeping); the next poll reports it writable, the bytes go out, and the watch is
dropped again (another `epoll_ctl`). A move's `ack` and `state` paid for that round every time,
though a socket with room in its send buffer is writable at once: profiled under load at 100
sockets, an eighth of the event loop's busy time went to adding and dropping that watch.

Here a write schedules one flush for the end of the current loop pass (`call_soon`), and the
flush sends what every socket written to in that pass has buffered, so the frames written by
one callback still go out in one `send`. Only a socket whose send buffer is full, whose bytes
are not all taken, is handed to the real writability watch, exactly as before. Each send goes
through the same `_readOrWrite` as a watched write, so errors and disconnects are handled the
same way.

Installed by `server.worker` before daphne imports Twisted (daphne keeps an asyncio reactor
that is already installed).
"""

from __future__ import annotations

import asyncio
from typing import Any

from twisted.internet.asyncioreactor import AsyncioSelectorReactor
from twisted.python.log import callWithLogger


class SoonWriteReactor(AsyncioSelectorReactor):
    def __init__(self, eventloop: asyncio.AbstractEventLoop | None = None) -> None:
        self._soon: dict[Any, None] = {}  # writers to flush at the end of this pass, in order
        self._flushing: Any = None  # the writer being flushed now
        self._drained = False  # whether it gave up writing (removeWriter) while flushed
        super().__init__(eventloop)

    def addWriter(self, writer: Any) -> None:  # noqa: N802 - Twisted's name
        if writer is self._flushing:
            self._drained = False  # wrote again while flushed (a producer resumed): not done
            return
        if writer in self._soon or writer in self._writers:
            return
        if writer in self._continuousPolling._writers:
            return
        if not self._soon:
            self._asyncioEventloop.call_soon(self._flush)
        self._soon[writer] = None

    def removeWriter(self, writer: Any) -> None:  # noqa: N802 - Twisted's name
        if writer is self._flushing:
            self._drained = True
        if writer in self._soon:
            del self._soon[writer]
            return
        super().removeWriter(writer)

    def getWriters(self) -> list:  # noqa: N802 - Twisted's name
        return list(self._soon) + super().getWriters()

    def removeAll(self) -> list:  # noqa: N802 - Twisted's name
        soon, self._soon = list(self._soon), {}
        return soon + super().removeAll()

    def _flush(self) -> None:
        soon, self._soon = self._soon, {}
        for writer in soon:
            self._flushing, self._drained = writer, False
            try:
                callWithLogger(writer, self._readOrWrite, writer, False)
            finally:
                self._flushing = None
            # Bytes left (a full send buffer) and still open: wait for writability, as before.
            if not self._drained and writer.fileno() != -1 and writer.connected:
                AsyncioSelectorReactor.addWriter(self, writer)


def install(eventloop: asyncio.AbstractEventLoop | None = None) -> SoonWriteReactor:
    """Install the reactor, as `twisted.internet.asyncioreactor.install` does its own."""
    from twisted.internet.main import installReactor

    reactor = SoonWriteReactor(eventloop)
    installReactor(reactor)
    return reactor
