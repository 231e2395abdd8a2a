"""server.reactor.SoonWriteReactor: writes leave at the end of the loop pass, in one send, and a
socket that cannot take them all waits for writability as with Twisted's own reactor."""

from __future__ import annotations

import asyncio
import os
import subprocess
from collections.abc import Callable

import pytest
from twisted.internet.protocol import Factory, Protocol

from server.reactor import SoonWriteReactor
from server.serve import daphne_args
from server.worker import new_event_loop
from tests.live_server import run_python

# The reactor runs on either loop a worker may pick (server.worker.new_event_loop).
LOOPS = pytest.mark.parametrize("loop_name", ["uvloop", "asyncio"])


def _loop(name: str) -> asyncio.AbstractEventLoop:
    old = os.environ.get("EVENT_LOOP")
    os.environ["EVENT_LOOP"] = name
    try:
        return new_event_loop()
    finally:
        if old is None:
            del os.environ["EVENT_LOOP"]
        else:
            os.environ["EVENT_LOOP"] = old


class _Held(Protocol):
    made: list

    def connectionMade(self) -> None:  # noqa: N802 - Twisted's name
        self.made.append(self)


def _run(test: Callable, loop_name: str) -> None:
    """Run `test(reactor, server_transport, reader)` on a fresh reactor and a real TCP socket."""
    loop = _loop(loop_name)
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


@LOOPS
def test_writes_of_one_pass_leave_in_one_send_without_a_write_watch(loop_name: str):
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

    _run(test, loop_name)


@LOOPS
def test_a_full_send_buffer_waits_for_writability_and_loses_nothing(loop_name: str):
    async def test(reactor: SoonWriteReactor, transport, reader) -> None:  # noqa: ANN001
        payload = bytes(range(256)) * (64 * 1024)  # 16 MiB: more than the socket buffers hold
        transport.write(payload)
        await asyncio.sleep(0.05)
        assert transport in reactor._writers  # the rest waits for the socket, as before
        assert await reader.readexactly(len(payload)) == payload
        await asyncio.sleep(0.05)
        assert not reactor.getWriters()

    _run(test, loop_name)


@LOOPS
def test_a_closing_socket_sends_what_it_has_then_closes(loop_name: str):
    async def test(reactor: SoonWriteReactor, transport, reader) -> None:  # noqa: ANN001
        transport.write(b"last words")
        transport.loseConnection()
        assert await reader.read() == b"last words"  # then end of stream
        await asyncio.sleep(0.01)
        assert not transport.connected and not reactor.getWriters()

    _run(test, loop_name)


@pytest.mark.parametrize("extra", [["-b", "127.0.0.1", "-p", "8000"], ["--fd", "3"]])
def test_workers_run_daphne_on_this_reactor(extra: list[str]):
    assert daphne_args(extra)[1:3] == ["-m", "server.worker"]


def _in_a_worker(code: str, **env: str) -> subprocess.CompletedProcess:
    """Run `code` with server.worker imported as `w`, in a fresh interpreter with only `env`."""
    return run_python(f"import server.worker as w; {code}", **env)


@pytest.mark.parametrize(("setting", "seconds"), [(None, 0.005), ("1", 0.001)])
def test_workers_keep_cpythons_gil_switch_interval_unless_told(setting, seconds):  # noqa: ANN001
    env = {} if setting is None else {"GIL_SWITCH_INTERVAL_MS": setting}
    out = _in_a_worker("print(w.set_switch_interval())", **env).stdout
    assert abs(float(out) - seconds) < 1e-9


@pytest.mark.parametrize(
    ("setting", "module"), [(None, "uvloop"), ("uvloop", "uvloop"), ("asyncio", "asyncio")]
)
def test_workers_run_on_uvloop_unless_told(setting, module):  # noqa: ANN001
    env = {} if setting is None else {"EVENT_LOOP": setting}
    out = _in_a_worker("print(type(w.new_event_loop()))", **env).stdout
    assert out.startswith(f"<class '{module}.")


def test_an_unknown_event_loop_is_refused_by_name():
    run = _in_a_worker("w.new_event_loop()", EVENT_LOOP="trio")
    assert run.returncode == 1
    assert "EVENT_LOOP must be one of uvloop, asyncio, not 'trio'" in run.stderr


@pytest.mark.parametrize(("env", "kept"), [({}, "200"), ({"DEBUG_QUERIES_KEPT": "50"}, "50")])
def test_a_worker_keeps_a_bounded_query_log_under_debug(env, kept):  # noqa: ANN001
    """Django keeps 9,000 queries per connection under DEBUG, and a worker's connections last
    as long as its threads: `make run` grew by 7 MB per 1,000 sockets. A worker keeps 200."""
    code = (
        "w.cap_query_log(); import django; django.setup(); "
        "from django.db import connection; connection.ensure_connection(); "
        "[connection.cursor().execute('SELECT 1') for _ in range(300)]; "
        "print(connection.queries_log.maxlen, len(connection.queries))"
    )
    run = _in_a_worker(
        code,
        DJANGO_SETTINGS_MODULE="server.settings",
        DEBUG="1",
        SECRET_KEY="x" * 50,
        SQLITE_PATH="/tmp/unused-queries.sqlite3",
        **env,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == [kept, kept]
