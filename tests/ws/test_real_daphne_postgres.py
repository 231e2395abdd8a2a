"""A real daphne on PostgreSQL, as `make run` serves it there: socket moves are played in the
worker's move process (games.move_process), and a client over a real socket cannot tell."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from django.db import connection
from websockets.sync.client import connect

from tests.live_server import Daphne, server_env

pytestmark = [
    pytest.mark.skipif(not os.environ.get("DATABASE_URL"), reason="DATABASE_URL not set"),
    pytest.mark.postgres,
    pytest.mark.django_db(transaction=True),
]


def _test_database_url() -> str:
    """The URL of the database this test run made (a daphne of its own plays on it)."""
    s = connection.settings_dict
    password = f":{s['PASSWORD']}" if s.get("PASSWORD") else ""
    return f"postgres://{s['USER']}{password}@{s['HOST']}:{s['PORT'] or 5432}/{s['NAME']}"


def _children(pid: int) -> list[int]:
    return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def _command_line(pid: int) -> str:
    return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs Linux /proc")
def test_moves_over_a_real_socket_are_played_in_the_workers_move_process(tmp_path):  # noqa: ANN001
    env = server_env(tmp_path / "unused.sqlite3", DATABASE_URL=_test_database_url())
    env.pop("GAME_MOVE_PROCESS", None)  # the default, as `make run` serves
    server = Daphne(env, tmp_path / "daphne.log")
    movers: list[int] = []
    try:
        status, body = server.call(
            "POST", "/api/auth/register", {"username": "pgsock", "password": "correct-horse-9"}
        )
        assert status == 201, body
        token = body["token"]
        status, game = server.call("POST", "/api/games", {"variant": "spanish", "deal": 7}, token)
        assert status == 201, game
        headers = {"Authorization": f"Token {token}"}
        with connect(f"{server.ws}/ws/games/{game['id']}", additional_headers=headers) as sock:
            state = json.loads(sock.recv(timeout=10))
            for i in range(5):
                move = state["d"]["legal_moves"][0]
                sock.send(json.dumps({"t": "move", "d": {"move": move, "v": state["v"], "id": i}}))
                assert json.loads(sock.recv(timeout=10)) == {"t": "ack", "d": {"id": i}}
                state = json.loads(sock.recv(timeout=10))
                assert state["t"] == "state" and state["v"] == i + 1
                assert state["d"]["last_move"] == move
            stale = {"t": "move", "d": {"move": move, "v": 0, "id": "old"}}
            sock.send(json.dumps(stale))
            error = json.loads(sock.recv(timeout=10))
            assert error["d"]["code"] == "stale_version" and error["d"]["v"] == 5
        [worker] = _children(server.proc.pid)
        movers += [c for c in _children(worker) if "games.move_process" in _command_line(c)]
        assert len(movers) == 1
        status, history = server.call("GET", f"/api/games/{game['id']}/moves", None, token)
        assert status == 200 and [m["n"] for m in history] == [1, 2, 3, 4, 5]
    finally:
        server.stop()
    assert _gone(movers[0])  # the worker's end closed its stdin, so it left too


def _gone(pid: int, seconds: float = 10) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z":
                return True  # exited; its parent has not reaped it yet
        except OSError:
            return True
        time.sleep(0.1)
    return False
