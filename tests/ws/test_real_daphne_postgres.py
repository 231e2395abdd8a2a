"""A real daphne on PostgreSQL, as `make run` serves it there: socket moves are written in
batches from the event loop on async connections of its own (games.loop_writer), and a
client over a real socket sees the contract and nothing of how."""

from __future__ import annotations

import json
import os
import time
from contextlib import contextmanager

import psycopg
import pytest
from django.db import connection

from tests.conftest import WAITING_ON_THE_HOLDER
from tests.live_server import (
    Daphne,
    crash_and_start_again,
    play_first_moves,
    recv,
    register,
    server_env,
    stop_while_a_move_is_written,
    ws,
)

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


def test_play_over_a_real_socket_on_postgresql(tmp_path):  # noqa: ANN001
    server = Daphne(
        server_env(tmp_path / "unused.sqlite3", DATABASE_URL=_test_database_url()),
        tmp_path / "daphne.log",
    )
    try:
        token = register(server, "pgsock")
        status, game = server.call("POST", "/api/games", {"variant": "spanish", "deal": 7}, token)
        assert status == 201, game
        with ws(server, f"/ws/games/{game['id']}", token) as sock:
            state = play_first_moves(sock, 5)
            stale = {"t": "move", "d": {"move": state["d"]["last_move"], "v": 0, "id": "old"}}
            sock.send(json.dumps(stale))
            error = recv(sock)
            assert error["d"]["code"] == "stale_version" and error["d"]["v"] == 5
            assert error["d"]["id"] == "old"
        status, history = server.call("GET", f"/api/games/{game['id']}/moves", None, token)
        assert status == 200 and [m["n"] for m in history] == [1, 2, 3, 4, 5]
        status, stored = server.call("GET", f"/api/games/{game['id']}", None, token)
        assert stored["v"] == 5 and stored["state"]["tableau"] == state["d"]["tableau"]
    finally:
        server.stop()


def test_a_stopping_server_answers_a_move_its_loop_is_writing_before_it_closes(tmp_path):  # noqa: ANN001
    """As on SQLite (test_real_daphne), with the batch on the event loop's own connection: the
    test holds the game's row lock, so the batch's write waits until after the signal."""
    url = _test_database_url()
    server = Daphne(server_env(tmp_path / "unused.sqlite3", DATABASE_URL=url), tmp_path / "d.log")

    @contextmanager
    def holding_writes(game_id: int):  # noqa: ANN202
        with psycopg.connect(url) as holder, psycopg.connect(url, autocommit=True) as watcher:
            holder.execute("SELECT 1 FROM games_game WHERE id = %s FOR UPDATE", [game_id])

            def until_the_write_waits() -> None:
                for _ in range(200):
                    waiting = watcher.execute(WAITING_ON_THE_HOLDER, [holder.info.backend_pid])
                    if waiting.fetchone()[0]:
                        return
                    time.sleep(0.05)
                raise AssertionError("the server's write never waited for the row lock")

            yield until_the_write_waits
            holder.rollback()

    try:
        token = register(server, "pgdrained")
        game_id, move = stop_while_a_move_is_written(server, token, holding_writes)
        with connection.cursor() as cursor:
            cursor.execute("SELECT n, move FROM games_move WHERE game_id = %s", [game_id])
            assert cursor.fetchall() == [(1, move)]
    finally:
        server.stop()


def test_a_crash_loses_no_move_the_loop_writer_acknowledged(tmp_path):  # noqa: ANN001
    """As on SQLite (test_real_daphne), with the batches written from the event loop: killed
    mid-play, the server has kept every move it acknowledged, and no more than the ones in
    flight."""
    env = server_env(tmp_path / "unused.sqlite3", DATABASE_URL=_test_database_url())
    crash_and_start_again(env, tmp_path, "pgcrashed")
