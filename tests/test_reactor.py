"""server.reactor.SoonWriteReactor: writes leave at the end of the loop pass, in one send, and a
socket that cannot take them all waits for writability as with Twisted's own reactor."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Callable

import pytest
from twisted.internet.protocol import Factory, Protocol

from server.reactor import SoonWriteReactor
from server.serve import daphne_args
from tests.live_server import ROOT


class _Held(Protocol):
    made: list

    def connectionMade(self) -> None:  # noqa: N802 - Twisted's name
        self.made.append(self)


def _run(test: Callable) -> None:
    """Run `test(reactor, server_transport, reader)` on a fresh reactor and a real TCP socket."""
    loop = asyncio.new_event_loop()
    reactor = SoonWriteReactor(loop)
    made: list = []
    protocol = type("Held", (_Held,), {"made": made})
    port = reactor.listenTCP(0, Factory.forProtocol(protocol), interface="127.0.0.1")

    async def main() -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port.getHost().port)
        while not made:
            await asyncio.sleep(0.001)
        try:
            await test(reactor, made[0].transport, reader)
        finally:
            writer.close()

    try:
        loop.run_until_complete(main())
    finally:
        port.stopListening()
        loop.run_until_complete(asyncio.sleep(0.01))
        loop.close()


def test_writes_of_one_pass_leave_in_one_send_without_a_write_watch():
    async def test(reactor: SoonWriteReactor, transport, reader) -> None:  # noqa: ANN001
        sends = []
        real = transport.writeSomeData
        transport.writeSomeData = lambda data: sends.append(bytes(data)) or real(data)
        watched = []
        add_writer = reactor._asyncioEventloop.add_writer
        reactor._asyncioEventloop.add_writer = lambda *a: watched.append(a) or add_writer(*a)
        transport.write(b'{"t":"ack"}')
        transport.write(b'{"t":"state"}')
        assert sends == []  # nothing yet: the flush runs at the end of this pass
        assert await reader.readexactly(24) == b'{"t":"ack"}{"t":"state"}'
        assert sends == [b'{"t":"ack"}{"t":"state"}'] and watched == []
        assert not reactor.getWriters()

    _run(test)


def test_a_full_send_buffer_waits_for_writability_and_loses_nothing():
    async def test(reactor: SoonWriteReactor, transport, reader) -> None:  # noqa: ANN001
        payload = bytes(range(256)) * (64 * 1024)  # 16 MiB: more than the socket buffers hold
        transport.write(payload)
        await asyncio.sleep(0.05)
        assert transport in reactor._writers  # the rest waits for the socket, as before
        assert await reader.readexactly(len(payload)) == payload
        await asyncio.sleep(0.05)
        assert not reactor.getWriters()

    _run(test)


def test_a_closing_socket_sends_what_it_has_then_closes():
    async def test(reactor: SoonWriteReactor, transport, reader) -> None:  # noqa: ANN001
        transport.write(b"last words")
        transport.loseConnection()
        assert await reader.read() == b"last words"  # then end of stream
        await asyncio.sleep(0.01)
        assert not transport.connected and not reactor.getWriters()

    _run(test)


@pytest.mark.parametrize("extra", [["-b", "127.0.0.1", "-p", "8000"], ["--fd", "3"]])
def test_workers_run_daphne_on_this_reactor(extra: list[str]):
    assert daphne_args(extra)[1:3] == ["-m", "server.worker"]


@pytest.mark.parametrize(("setting", "seconds"), [(None, 0.005), ("1", 0.001)])
def test_workers_keep_cpythons_gil_switch_interval_unless_told(setting, seconds):  # noqa: ANN001
    env = {} if setting is None else {"GIL_SWITCH_INTERVAL_MS": setting}
    out = subprocess.run(
        [sys.executable, "-c", "import server.worker as w; print(w.set_switch_interval())"],
        cwd=ROOT,
        env={"PATH": "/usr/bin:/bin", **env},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert abs(float(out) - seconds) < 1e-9
