"""Start real daphne processes for tests that talk over real sockets."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from contextlib import AbstractContextManager, ExitStack
from pathlib import Path

import pytest
from websockets.sync.client import connect

ROOT = Path(__file__).resolve().parent.parent


def parse_frames(data: bytes) -> list:
    """The server frames in `data`, read by another implementation (the websockets library's,
    as a client reads them: unmasked); a frame cut short at the end is left out."""
    from websockets.frames import Frame
    from websockets.streams import StreamReader

    reader = StreamReader()
    reader.feed_data(data)
    reader.feed_eof()
    frames = []
    while reader.buffer:
        parser = Frame.parse(reader.read_exact, mask=False)
        try:
            while True:
                next(parser)
        except StopIteration as done:
            frames.append(done.value)
        except EOFError:
            break
    return frames


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def server_env(sqlite_path: Path, **extra: str) -> dict[str, str]:
    """The subprocess runs on its own SQLite file; REDIS_URL is kept when set. Without
    DJANGO_SETTINGS_MODULE, as `make run` starts it: the server finds its settings itself (a
    test run that set it for the server hid a worker that could not start without it)."""
    env = {
        k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "DJANGO_SETTINGS_MODULE"}
    }
    env.update(
        SQLITE_PATH=str(sqlite_path),
        PYTHONUNBUFFERED="1",
        DAILY_PREPARE_AT_START="0",  # no certification at start: the tests' CPU is the tests'
        **extra,
    )
    return env


def run_python(code: str, **env: str) -> subprocess.CompletedProcess:
    """`python -c code` in the project folder, in a fresh interpreter that sees only PATH and
    `env`: what the server does at import or start with a setting, with none of this process's
    environment (DATABASE_URL, a test's settings) leaking in."""
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={"PATH": "/usr/bin:/bin", **env},
        capture_output=True,
        text=True,
    )


def run_django(code: str, **env: str) -> subprocess.CompletedProcess:
    """run_python on the server's settings, with a key and a SQLite file of no use elsewhere
    unless `env` names its own."""
    defaults = {
        "DJANGO_SETTINGS_MODULE": "server.settings",
        "SECRET_KEY": "x" * 50,
        "SQLITE_PATH": "/tmp/unused.sqlite3",
    }
    return run_python(code, **{**defaults, **env})


def manage(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    """`manage.py *args` in the project folder, with `env` its whole environment."""
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def migrate(env: dict[str, str]) -> None:
    done = manage(env, "migrate", "--noinput", "-v", "0")
    assert done.returncode == 0, done.stdout + done.stderr


def daphne_command(port: int, workers: int = 1) -> list[str]:
    """The server as `make run` starts it (server.serve), on 127.0.0.1:`port`."""
    return [
        sys.executable,
        "-m",
        "server.serve",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--workers",
        str(workers),
    ]


class Daphne:
    def __init__(
        self,
        env: dict[str, str],
        log: Path,
        workers: int = 1,
        command: Callable[[int], list[str]] | None = None,
        ready_timeout: float = 30,
    ) -> None:
        """Start the server as `make run` does, or as `command(port)` says (the benches' counted
        workers), and wait until it answers."""
        self.port = free_port()
        self.log = log
        self.proc = subprocess.Popen(
            command(self.port) if command else daphne_command(self.port, workers),
            cwd=ROOT,
            env=env,
            stdout=log.open("wb"),
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: stop() reaches every worker
        )
        self.wait_ready(ready_timeout)

    @property
    def http(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws(self) -> str:
        return f"ws://127.0.0.1:{self.port}"

    def wait_ready(self, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"daphne exited: {self.log.read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(self.http + "/api/health", timeout=2) as res:
                    if res.status == 200:
                        return
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                time.sleep(0.2)
        raise RuntimeError(f"daphne not ready: {self.log.read_text()[-2000:]}")

    def stop(self, grace: float = 30) -> None:
        """SIGTERM, and SIGKILL to the whole group if it has not stopped within `grace` seconds.
        A worker on the Redis layer was once seen to take over 10 s to stop, on a loaded host
        in the full suite (its sockets' receives are cancelled in turn)."""
        self.proc.terminate()
        try:
            self.proc.wait(grace)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def pids(self) -> list[int]:
        """The supervisor and every process under it: the daphne workers and any process of
        theirs, such as the daily certification pool (Linux /proc; the supervisor alone
        elsewhere)."""
        pids, i = [self.proc.pid], 0
        while i < len(pids):
            pid = pids[i]
            try:
                children = Path(f"/proc/{pid}/task/{pid}/children").read_text()
            except OSError:
                children = ""
            pids += map(int, children.split())
            i += 1
        return pids

    @staticmethod
    def running(pid: int) -> bool:
        """Whether `pid` is a live process: a killed worker whose parent died before reaping it
        stays in /proc as a zombie until init reaps it, and it runs nothing."""
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            return False
        return stat.rsplit(")", 1)[1].split()[0] != "Z"

    def call(self, method: str, path: str, body: dict | None = None, token: str | None = None):  # noqa: ANN201
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.http + path, data=data, method=method)
        req.add_header("Content-Type", "application/json")
        if token:
            req.add_header("Authorization", f"Token {token}")
        try:
            with urllib.request.urlopen(req, timeout=30) as res:
                return res.status, json.loads(res.read() or b"null")
        except urllib.error.HTTPError as err:
            return err.code, json.loads(err.read() or b"null")


def register(server: Daphne, name: str) -> str:
    """A new user's API token, signed up over HTTP."""
    status, body = server.call(
        "POST", "/api/auth/register", {"username": name, "password": "correct-horse-9"}
    )
    assert status == 201, body
    return body["token"]


def ws(server: Daphne, path: str, token: str | None):  # noqa: ANN201
    """A real client socket on `path`, signed in with `token` if one is given."""
    headers = {"Authorization": f"Token {token}"} if token else {}
    return connect(server.ws + path, additional_headers=headers, open_timeout=10)


def recv(sock) -> dict:  # noqa: ANN001
    return json.loads(sock.recv(timeout=10))


def play_first_moves(sock, moves: int) -> dict:  # noqa: ANN001
    """Read a new game's first state, then play its first legal move `moves` times, each with
    its number as `id`: every move is acknowledged, then answered with the next version's
    state naming it. Returns the last state."""
    state = recv(sock)
    assert state["t"] == "state" and state["v"] == 0
    for i in range(moves):
        move = state["d"]["legal_moves"][0]
        sock.send(json.dumps({"t": "move", "d": {"move": move, "v": state["v"], "id": i}}))
        assert recv(sock) == {"t": "ack", "d": {"id": i}}
        state = recv(sock)
        assert state["t"] == "state" and state["v"] == i + 1
        assert state["d"]["last_move"] == move
    return state


def stop_while_a_move_is_written(
    server: Daphne, token: str, holding_writes: Callable[[int], AbstractContextManager]
) -> tuple[int, str]:
    """Send a new game's first move while `holding_writes(game_id)` keeps the database from
    writing it, tell the server to stop, then let the write go: the move is acknowledged and
    its state sent before the socket's 1001, and the server exits. Returns the game and move.
    `holding_writes` gives a function that returns once the server's write waits (or, where
    that cannot be seen, once it surely does)."""
    status, game = server.call("POST", "/api/games", {"variant": "spanish", "deal": 13}, token)
    assert status == 201, game
    with ws(server, f"/ws/games/{game['id']}", token) as sock:
        move = recv(sock)["d"]["legal_moves"][0]
        with holding_writes(game["id"]) as until_the_write_waits:
            sock.send(json.dumps({"t": "move", "d": {"move": move, "v": 0, "id": "m-1"}}))
            until_the_write_waits()  # the move is read, and its batch waits for the database
            server.proc.terminate()
            time.sleep(0.3)  # the server is stopping
            with pytest.raises(ConnectionRefusedError):  # and takes no new connection
                socket.create_connection(("127.0.0.1", server.port), timeout=5).close()
        assert recv(sock) == {"t": "ack", "d": {"id": "m-1"}}
        state = recv(sock)
        assert (state["t"], state["v"], state["d"]["last_move"]) == ("state", 1, move)
        from websockets.exceptions import ConnectionClosed

        try:
            sock.recv(timeout=10)
        except ConnectionClosed as closed:
            assert closed.rcvd is not None and closed.rcvd.code == 1001
        else:
            raise AssertionError("the socket stayed open")
    assert server.proc.wait(30) == 0
    return game["id"], move


def crash_mid_play(server: Daphne, token: str, games: int = 4, rounds: int = 20) -> list[dict]:
    """Play `games` new games at once over sockets of their own, a move on each at a time,
    then, with a move sent on every socket and only half of those answered, kill the server's
    processes (SIGKILL: a crash, nothing drained). Returns per game its id, the moves it
    acknowledged, in order, and the one still in flight when the server died."""
    plays: list[dict] = []
    socks: list = []
    with ExitStack() as stack:
        for _ in range(games):
            status, game = server.call(
                "POST", "/api/games", {"variant": "spanish", "deal": 21}, token
            )
            assert status == 201, game
            sock = stack.enter_context(ws(server, f"/ws/games/{game['id']}", token))
            socks.append(sock)
            plays.append({"id": game["id"], "acked": [], "in_flight": None, "state": recv(sock)})

        def send(play: dict, sock) -> None:  # noqa: ANN001
            state = play["state"]
            move = state["d"]["legal_moves"][0]
            sock.send(json.dumps({"t": "move", "d": {"move": move, "v": state["v"]}}))
            play["in_flight"] = move

        def answer(play: dict, sock) -> None:  # noqa: ANN001
            assert recv(sock)["t"] == "ack"
            play["state"] = recv(sock)
            play["acked"].append(play["in_flight"])
            play["in_flight"] = None

        for _ in range(rounds):
            for play, sock in zip(plays, socks, strict=True):
                send(play, sock)
            for play, sock in zip(plays, socks, strict=True):
                answer(play, sock)
        for play, sock in zip(plays, socks, strict=True):
            send(play, sock)
        for play, sock in list(zip(plays, socks, strict=True))[: games // 2]:
            answer(play, sock)
        for pid in reversed(server.pids()):
            os.kill(pid, signal.SIGKILL)
        server.proc.wait(10)
    return plays


def crash_and_start_again(env: dict[str, str], logs: Path, name: str) -> None:
    """A server on `env`'s database killed mid-play (crash_mid_play), then one started again
    on it: every acknowledged move is there (assert_acknowledged_moves_kept), and
    `manage.py replay_verify` finds every game's stored state to be its moves' replay."""
    server = Daphne(env, logs / "crashed.log")
    try:
        token = register(server, name)
        plays = crash_mid_play(server, token)
    finally:
        server.stop()
    again = Daphne(env, logs / "again.log")
    try:
        assert_acknowledged_moves_kept(again, token, plays)
    finally:
        again.stop()
    done = manage(env, "replay_verify")
    assert done.returncode == 0, done.stdout + done.stderr


def assert_acknowledged_moves_kept(server: Daphne, token: str, plays: list[dict]) -> None:
    """After a crash, on a server started again on the same database: every game holds every
    move it acknowledged, in order, and at most the one move that was in flight; its stored
    state is its moves' replay (the version says as much), and it plays on from there."""
    for play in plays:
        status, history = server.call("GET", f"/api/games/{play['id']}/moves", token=token)
        assert status == 200, history
        kept = [m["move"] for m in history]
        acked = play["acked"]
        assert kept in (acked, [*acked, play["in_flight"]]), (
            f"game {play['id']}: {len(kept)} moves kept of {len(acked)} acknowledged"
        )
        status, game = server.call("GET", f"/api/games/{play['id']}", token=token)
        assert game["v"] == len(kept), game["v"]
        with ws(server, f"/ws/games/{play['id']}", token) as sock:
            state = recv(sock)
            assert state["v"] == len(kept)
            move = state["d"]["legal_moves"][0]
            sock.send(json.dumps({"t": "move", "d": {"move": move, "v": state["v"]}}))
            assert recv(sock)["t"] == "ack" and recv(sock)["v"] == len(kept) + 1
