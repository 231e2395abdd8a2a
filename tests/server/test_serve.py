"""server.serve: how many daphne workers, and when more than one is refused."""

from __future__ import annotations

import socket

import pytest

from server import serve


def test_one_worker_by_default_without_redis():
    assert serve.default_workers({}) == 1


def test_one_worker_per_core_with_redis(monkeypatch):  # noqa: ANN001
    monkeypatch.setattr(serve.os, "cpu_count", lambda: 4)
    assert serve.default_workers({"REDIS_URL": "redis://x"}) == 4


def test_web_workers_overrides_the_default():
    assert serve.default_workers({"WEB_WORKERS": "3"}) == 3


def test_one_worker_needs_nothing():
    assert serve.check_workers(1, "::1", {}) is None


@pytest.mark.parametrize(
    ("workers", "host", "env", "says"),
    [
        (0, "127.0.0.1", {}, "at least 1"),
        (2, "127.0.0.1", {}, "REDIS_URL"),
        (2, "::1", {"REDIS_URL": "redis://x"}, "IPv4"),
        (2, "no-such-host.invalid", {"REDIS_URL": "redis://x"}, "no IPv4 address"),
    ],
)
def test_more_workers_are_refused_with_a_reason(workers, host, env, says):  # noqa: ANN001
    assert says in serve.check_workers(workers, host, env)


def test_a_host_name_is_resolved_for_the_workers():
    assert serve.ipv4_address("localhost") == "127.0.0.1"
    assert serve.ipv4_address("10.1.2.3") == "10.1.2.3"
    assert serve.ipv4_address("::1") is None
    assert serve.check_workers(2, "localhost", {"REDIS_URL": "redis://x"}) is None


def test_the_default_falls_back_to_one_worker_where_more_cannot_listen(monkeypatch):  # noqa: ANN001
    started = {}
    monkeypatch.setenv("REDIS_URL", "redis://x")
    monkeypatch.delenv("WEB_WORKERS", raising=False)
    monkeypatch.setattr(serve.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(serve, "start_workers", lambda h, p, n, extra: started.update(n=n) or [])
    monkeypatch.setattr(serve, "supervise", lambda procs: 0)
    assert serve.main(["--host", "::1"]) == 0 and started["n"] == 1
    assert serve.main(["--host", "::1", "--workers", "2"]) == 2  # asked for: refused


def test_workers_may_all_bind_the_same_port():
    first = serve.listening_socket("127.0.0.1", 0)
    port = first.getsockname()[1]
    try:
        second = serve.listening_socket("127.0.0.1", port)
        second.close()
        with pytest.raises(OSError), socket.create_server(("127.0.0.1", port)):
            pass  # a plain socket without SO_REUSEPORT may not
    finally:
        first.close()


@pytest.mark.parametrize(
    ("shared", "workers"),
    [(True, "2"), (False, "2"), (False, "1")],
    ids=["workers-of-another-server", "a-plain-socket", "one-worker"],
)
def test_no_worker_is_started_on_a_port_in_use(monkeypatch, capsys, shared, workers):  # noqa: ANN001
    """A server with workers already on the port (`make run` twice, with Redis): the second's
    workers bound it beside the first's (SO_REUSEPORT) and took half of its new connections.
    A port held by a plain socket was a traceback with workers, and daphne's log lines and the
    supervisor's with one. Now: one line, and no worker."""
    held = (
        serve.listening_socket("127.0.0.1", 0) if shared else socket.create_server(("127.0.0.1", 0))
    )
    port = held.getsockname()[1]
    started = []
    monkeypatch.setenv("REDIS_URL", "redis://x")
    monkeypatch.setattr(serve, "start_workers", lambda *args: started.append(args) or [])
    monkeypatch.setattr(serve, "supervise", lambda procs: 0)
    command = ["--host", "127.0.0.1", "--port", str(port), "--workers", workers]
    try:
        assert serve.main(command) == 2
    finally:
        held.close()
    assert not started
    err = capsys.readouterr().err
    assert err == f"Cannot listen on 127.0.0.1:{port}: Address already in use.\n", err
    # Free again (a closed server's connections may linger in TIME_WAIT): the workers start.
    assert serve.main(command) == 0
    assert started


def test_main_refuses_two_workers_without_redis(monkeypatch, capsys):  # noqa: ANN001
    monkeypatch.delenv("REDIS_URL", raising=False)
    assert serve.main(["--workers", "2"]) == 2
    assert "REDIS_URL" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("name", "raw", "says"),
    [
        ("WEB_WORKERS", "two", "WEB_WORKERS must be a whole number of at least 1, not 'two'"),
        ("ASGI_THREADS", "0", "ASGI_THREADS must be a whole number of at least 1, not '0'"),
        ("GIL_SWITCH_INTERVAL_MS", "fast", "GIL_SWITCH_INTERVAL_MS must be a number greater"),
        ("DEBUG_QUERIES_KEPT", "-5", "DEBUG_QUERIES_KEPT must be a whole number of at least 0"),
        ("GC_GEN0_THRESHOLD", "1e4", "GC_GEN0_THRESHOLD must be a whole number of at least 1"),
        ("GC_FREEZE", "maybe", "GC_FREEZE must be 1 or 0"),
        ("EVENT_LOOP", "trio", "EVENT_LOOP must be one of uvloop, asyncio, not 'trio'"),
    ],
)
def test_a_worker_setting_it_cannot_use_stops_the_start_with_one_line(
    monkeypatch,  # noqa: ANN001
    capsys,  # noqa: ANN001
    name: str,
    raw: str,
    says: str,
) -> None:
    """Read before any worker starts: a bare int() in each worker was a traceback from each."""
    monkeypatch.setenv(name, raw)
    assert serve.main(["--port", "0"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"The settings cannot be used: {says}") and err.count("\n") == 1, err


@pytest.mark.parametrize("raw", ["http", "-1", "65536"])
def test_a_port_that_is_no_port_is_refused(monkeypatch, capsys, raw: str) -> None:  # noqa: ANN001
    """--port by argparse; PORT as every other setting, by name (argparse named --port)."""
    with pytest.raises(SystemExit) as stopped:
        serve.main(["--port", raw])
    assert stopped.value.code == 2
    assert f"argument --port: a port is a number from 0 to 65535, not '{raw}'" in (
        capsys.readouterr().err
    )
    monkeypatch.setenv("PORT", raw)
    assert serve.main([]) == 2
    assert capsys.readouterr().err == (
        f"The settings cannot be used: PORT must be a port number from 0 to 65535, not '{raw}'\n"
    )
