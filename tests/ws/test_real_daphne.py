"""Real daphne processes over real sockets: what a client written from PROTOCOL.md sees."""

from __future__ import annotations

import itertools
import json
import os
import re
import sqlite3
import threading
import time
from contextlib import ExitStack, contextmanager, suppress

import pytest
from websockets.exceptions import ConnectionClosed

from tests.live_server import (
    Daphne,
    crash_and_start_again,
    migrate,
    parse_frames,
    play_first_moves,
    recv,
    register,
    server_env,
    stop_while_a_move_is_written,
    ws,
)


@pytest.fixture(scope="module")
def shared_env(tmp_path_factory):  # noqa: ANN001, ANN201
    # A fast hash: each sign-up's PBKDF2 took 0.3–0.7 s of the suite's CPU.
    env = server_env(tmp_path_factory.mktemp("daphne") / "db.sqlite3", FAST_PASSWORD_HASH="1")
    migrate(env)
    return env


@pytest.fixture(scope="module")
def server(shared_env, tmp_path_factory):  # noqa: ANN001, ANN201
    proc = Daphne(shared_env, tmp_path_factory.mktemp("logs") / "daphne-a.log")
    yield proc
    proc.stop()


def play_watched(owner, watchers, moves: int = 3) -> None:  # noqa: ANN001
    """The owner plays its first legal move `moves` times; every watcher hears each state."""
    state = recv(owner)
    for i in range(moves):
        move = state["d"]["legal_moves"][0]
        owner.send(json.dumps({"t": "move", "d": {"move": move, "v": state["v"]}}))
        assert recv(owner)["t"] == "ack"
        state = recv(owner)
        assert state["v"] == i + 1 and all(recv(w) == state for w in watchers)


def test_play_a_game_over_a_real_socket(server):  # noqa: ANN001
    token = register(server, "realsock")
    status, game = server.call("POST", "/api/games", {"variant": "spanish", "deal": 11}, token)
    assert status == 201
    with ws(server, f"/ws/games/{game['id']}", token) as sock:
        play_first_moves(sock, 5)
        sock.send("{broken")
        assert recv(sock)["d"]["code"] == "bad_message"
        sock.send(json.dumps({"t": "ping"}))
        assert recv(sock) == {"t": "pong"}
    status, history = server.call("GET", f"/api/games/{game['id']}/moves", token=token)
    assert status == 200 and [h["n"] for h in history] == [1, 2, 3, 4, 5]


def test_a_worker_on_asyncios_own_loop_plays_the_same(shared_env, tmp_path):  # noqa: ANN001
    """The workers run on uvloop unless EVENT_LOOP=asyncio (server.worker); the other loop
    serves the same game."""
    server = Daphne({**shared_env, "EVENT_LOOP": "asyncio"}, tmp_path / "daphne-asyncio.log")
    try:
        token = register(server, "asyncioloop")
        status, game = server.call("POST", "/api/games", {"variant": "spanish", "deal": 12}, token)
        assert status == 201
        with ws(server, f"/ws/games/{game['id']}", token) as sock:
            play_first_moves(sock, 2)
    finally:
        server.stop()


def test_a_server_that_stops_closes_its_sockets_with_1001_going_away(shared_env, tmp_path):  # noqa: ANN001
    """A server told to stop (SIGTERM, as a restart or `make run`'s Ctrl-C sends) ends each
    open socket with a close frame, 1001 and a reason, not a connection cut without one (a
    client saw 1006, which reads as a network failure): a game socket, a leaderboard socket
    and the echo alike. Then the server exits."""
    server = Daphne(shared_env, tmp_path / "daphne-stop.log")
    try:
        token = register(server, "goingaway")
        status, game = server.call("POST", "/api/games", {"variant": "spanish", "deal": 12}, token)
        assert status == 201
        with ExitStack() as stack:
            game_sock = stack.enter_context(ws(server, f"/ws/games/{game['id']}", token))
            # A day with no challenge: the socket stays open, and says why (no day is made).
            board = stack.enter_context(ws(server, "/ws/leaderboards/2026-01-01/spanish", None))
            echo = stack.enter_context(ws(server, "/ws/echo", token))
            play_first_moves(game_sock, 1)
            assert recv(board)["t"] == "error"
            echo.send('{"t":"ping"}')
            assert echo.recv(timeout=10) == '{"t":"ping"}'
            server.proc.terminate()
            for sock in (game_sock, board, echo):
                with pytest.raises(ConnectionClosed) as info:
                    sock.recv(timeout=10)
                assert info.value.rcvd is not None, "closed without a close frame"
                assert info.value.rcvd.code == 1001
                assert info.value.rcvd.reason == "The server is restarting: connect again."
        assert server.proc.wait(30) == 0
    finally:
        server.stop()


def test_a_crash_loses_no_move_the_server_acknowledged(shared_env, tmp_path):  # noqa: ANN001
    """Killed mid-play (SIGKILL: nothing drained), the server has kept every move it
    acknowledged, as a move is answered only once it is written. Started again on the same
    database, each game holds its acknowledged moves and at most the one in flight, its
    stored state is their replay, and it plays on."""
    crash_and_start_again(shared_env, tmp_path, "crashed")


@contextmanager
def _a_server_to_stop(shared_env, tmp_path):  # noqa: ANN001, ANN202
    """A server of its own, which the test stops, and a connection to its SQLite file (whose
    write lock the test may hold, so that the server's writes wait across the signal)."""
    server = Daphne(shared_env, tmp_path / "daphne-drain.log")
    db = sqlite3.connect(shared_env["SQLITE_PATH"], isolation_level=None, timeout=20)
    try:
        yield server, db
    finally:
        db.close()
        server.stop()


def test_a_stopping_server_answers_a_move_it_is_writing_before_it_closes(shared_env, tmp_path):  # noqa: ANN001
    """A move whose batch is being written when the server is told to stop is committed and
    answered, `ack` then `state`, before the socket's 1001: the client knows its move stands
    without connecting again. Here the test holds SQLite's write lock meanwhile."""
    with _a_server_to_stop(shared_env, tmp_path) as (server, db):

        @contextmanager
        def holding_writes(game_id: int):  # noqa: ANN202
            db.execute("BEGIN IMMEDIATE")
            yield lambda: time.sleep(1.0)  # SQLite shows no waiting writer: time to wait
            db.execute("ROLLBACK")

        token = register(server, "drained")
        game_id, _ = stop_while_a_move_is_written(server, token, holding_writes)
        moves = db.execute("SELECT n FROM games_move WHERE game_id = ?", [game_id]).fetchall()
        assert moves == [(1,)]


def test_a_stopping_server_answers_a_request_it_is_writing(shared_env, tmp_path):  # noqa: ANN001
    """A REST move being written when the server is told to stop gets its answer: it was
    cut without one, though its write went on and committed."""
    with _a_server_to_stop(shared_env, tmp_path) as (server, db):
        token = register(server, "drainedrest")
        status, game = server.call("POST", "/api/games", {"variant": "spanish", "deal": 13}, token)
        move = game["state"]["legal_moves"][0]
        answers = []
        body = {"move": move, "v": 0}
        path = f"/api/games/{game['id']}/moves"
        request = threading.Thread(
            target=lambda: answers.append(server.call("POST", path, body, token))
        )
        db.execute("BEGIN IMMEDIATE")
        request.start()
        time.sleep(1.0)  # the request waits for the lock
        server.proc.terminate()
        time.sleep(0.3)
        db.execute("ROLLBACK")
        request.join(30)
        assert answers and answers[0][0] == 200 and answers[0][1]["v"] == 1
        assert server.proc.wait(30) == 0


def test_a_socket_that_opens_as_the_server_stops_is_closed_with_the_others(shared_env, tmp_path):  # noqa: ANN001
    """A socket whose handshake the server is answering when it is told to stop opens, is
    not read, and gets its `state` and then 1001 with the others; it was cut without a close
    frame. Its handshake waits for the database (SQLite's one thread, behind a move's write
    held by the test's lock), so it ends during the drain."""
    with _a_server_to_stop(shared_env, tmp_path) as (server, db):
        token, game_id = _new_player_and_game(server, "early")
        latecomer = _new_player_and_game(server, "latecomer")
        with ws(server, f"/ws/games/{game_id}", token) as sock:
            move = recv(sock)["d"]["legal_moves"][0]
            db.execute("BEGIN IMMEDIATE")
            sock.send(json.dumps({"t": "move", "d": {"move": move, "v": 0, "id": 1}}))
            time.sleep(0.5)
            late = _raw_handshake(server, *latecomer)
            time.sleep(0.5)  # its handshake waits behind the write
            server.proc.terminate()
            time.sleep(0.3)
            db.execute("ROLLBACK")
            # The latecomer first: the server waits a second for the answer to its close
            # (autobahn's close handshake timeout) and resets the connection after that, which
            # a loaded machine could reach while the test still handled the other socket.
            with late:
                data, frames = b"", []
                while not frames or frames[-1].opcode.name != "CLOSE":
                    chunk = late.recv(65536)
                    assert chunk, data[:300]
                    data += chunk
                    frames = (
                        parse_frames(data.split(b"\r\n\r\n", 1)[1]) if b"\r\n\r\n" in data else []
                    )
                assert data.startswith(b"HTTP/1.1 101 "), data[:200]
                assert json.loads(frames[0].data)["t"] == "state"
                assert int.from_bytes(frames[-1].data[:2], "big") == 1001
                # Answered, the close ends the connection cleanly: end of stream, not a reset.
                late.sendall(bytes((0x88, 0x82)) + b"\0\0\0\0" + (1001).to_bytes(2, "big"))
                assert late.recv(65536) == b""
            assert recv(sock) == {"t": "ack", "d": {"id": 1}}
        assert server.proc.wait(30) == 0


def test_real_socket_without_auth_is_closed_4401(server):  # noqa: ANN001
    with ws(server, "/ws/echo", None) as sock, pytest.raises(ConnectionClosed) as info:
        sock.recv(timeout=10)
    assert info.value.rcvd.code == 4401
    assert info.value.rcvd.reason == "Not signed in, or the sign-in has ended: sign in again."


def test_real_echo_socket(server):  # noqa: ANN001
    token = register(server, "echoer")
    with ws(server, "/ws/echo", token) as sock:
        sock.send('{"t":"ping"}')
        assert sock.recv(timeout=10) == '{"t":"ping"}'


def test_oversized_frames_get_an_error_or_a_close_code_never_a_dropped_socket(server):  # noqa: ANN001
    """Over 64 KiB: `bad_message`, and the socket stays open. Over daphne's 1 MiB read limit:
    the closing handshake with 4429 (abuse, in PROTOCOL.md's words; autobahn's own code, 1009,
    is not one of its codes), not a TCP connection cut mid-air."""
    token = register(server, "bigframes")
    status, game = server.call("POST", "/api/games", {"variant": "spanish", "deal": 12}, token)
    assert status == 201
    with ws(server, f"/ws/games/{game['id']}", token) as sock:
        assert recv(sock)["t"] == "state"
        sock.send(json.dumps({"t": "ping", "d": {"pad": "x" * 100_000}}))
        assert recv(sock)["d"]["code"] == "bad_message"
        sock.send(json.dumps({"t": "ping"}))
        assert recv(sock) == {"t": "pong"}
        sock.send("x" * (1024 * 1024 + 1))
        with pytest.raises(ConnectionClosed) as info:
            sock.recv(timeout=10)
    assert info.value.rcvd is not None
    assert (info.value.rcvd.code, info.value.rcvd.reason) == (
        4429,
        "Frame too large: over 1048576 bytes.",
    )


@pytest.mark.redis
@pytest.mark.skipif(not os.environ.get("REDIS_URL"), reason="REDIS_URL not set")
def test_watcher_on_another_process_sees_moves_through_redis(server, shared_env, tmp_path):  # noqa: ANN001
    other = Daphne(shared_env, tmp_path / "daphne-b.log")
    try:
        owner_token = register(server, "redisowner")
        watcher_token = register(other, "rediswatch")
        status, game = server.call(
            "POST", "/api/games", {"variant": "portuguese", "deal": 4}, owner_token
        )
        assert status == 201
        with (
            ws(other, f"/ws/games/{game['id']}", watcher_token) as watcher,
            ws(server, f"/ws/games/{game['id']}", owner_token) as owner,
        ):
            assert recv(watcher)["v"] == 0
            play_watched(owner, [watcher])
    finally:
        other.stop()


@pytest.mark.redis
@pytest.mark.skipif(not os.environ.get("REDIS_URL"), reason="REDIS_URL not set")
def test_two_workers_share_one_port_and_every_socket_hears_the_moves(shared_env, tmp_path):  # noqa: ANN001
    """`server.serve --workers 2`: two daphne processes on one port (SO_REUSEPORT). Sockets land
    on either; a watcher hears every move whichever process its socket and the player's are on."""
    server = Daphne(shared_env, tmp_path / "daphne-2w.log", workers=2)
    try:
        assert len(server.pids()) == 3  # the supervisor and two workers
        owner_token = register(server, "twoworkers")
        watcher_token = register(server, "twowatcher")
        status, game = server.call(
            "POST", "/api/games", {"variant": "spanish", "deal": 5}, owner_token
        )
        assert status == 201
        path = f"/ws/games/{game['id']}"
        with ExitStack() as stack:
            watchers = [stack.enter_context(ws(server, path, watcher_token)) for _ in range(6)]
            for watcher in watchers:
                assert recv(watcher)["v"] == 0
            play_watched(stack.enter_context(ws(server, path, owner_token)), watchers)
        workers = server.pids()[1:]
    finally:
        server.stop()
    assert len(workers) == 2 and not any(Daphne.running(pid) for pid in workers)


def test_default_rate_limit_spares_a_fast_bot_and_closes_a_flood_4429(server):  # noqa: ANN001
    """With the default limits (30 a second, bursts of 60): 150 frames, each sent once the one
    before was answered, are all served; 400 sent at once get `rate_limited` and then 4429."""
    token = register(server, "fastbot")
    status, game = server.call("POST", "/api/games", {"variant": "spanish", "deal": 13}, token)
    assert status == 201
    with ws(server, f"/ws/games/{game['id']}", token) as sock:
        play_first_moves(sock, 5)
        for i in range(150):
            sock.send(json.dumps({"t": "ping", "d": {"id": i}}))
            assert recv(sock) == {"t": "pong"}
        # On a fast host the server may close before the flood is all sent: the frames it
        # answered first are still read below, then the close.
        with suppress(ConnectionClosed):
            for i in range(400):
                sock.send(json.dumps({"t": "ping", "d": {"id": f"flood-{i}"}}))
        codes = []
        with pytest.raises(ConnectionClosed) as info:
            while True:
                frame = recv(sock)
                codes.append(frame["d"]["code"] if frame["t"] == "error" else frame["t"])
    assert info.value.rcvd is not None and info.value.rcvd.code == 4429
    assert info.value.rcvd.reason == "Too many frames refused for their rate: slow down."
    assert "pong" in codes and "rate_limited" in codes


def _json_post(length: int, path: str = "/api/games", extra: str = "") -> str:
    """The head of a JSON POST announcing a body of `length` bytes (`extra`: more headers)."""
    return (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Content-Length: {length}\r\n{extra}\r\n"
    )


def _raw_request(  # noqa: ANN001
    server, head: str, body: bytes = b"", hold: bool = False
) -> tuple[bytes, float]:
    """Send a request's head (and what body is given) on a raw socket; the whole answer, and
    how long it took to come.

    Once the answer is in (its head and its Content-Length of body, none to a HEAD), the
    client stops sending, as a real one would, and the server must then close: a refused
    request's connection is not kept. Reading on to the server's own close would wait out the
    time it lingers for a body still coming (LINGER_SECONDS) on every such test; `hold`
    does, and says how long that took instead.
    """
    import socket
    import time

    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(head.encode("ascii") + body)
        answer = b""
        while not _answer_complete(answer, head_only=head.startswith("HEAD ")):
            chunk = sock.recv(65536)
            if not chunk:
                return answer, time.monotonic() - started
            answer += chunk
        took = time.monotonic() - started
        if hold:
            after = sock.recv(65536)
            return answer + after, time.monotonic() - started
        sock.shutdown(socket.SHUT_WR)
        after = sock.recv(65536)
        assert after == b"", f"more after the answer: {after[:200]!r}"
    return answer, took


def _answer_complete(answer: bytes, head_only: bool) -> bool:
    head, sep, body = answer.partition(b"\r\n\r\n")
    if not sep:
        return False
    length = re.search(rb"\r\ncontent-length: *(\d+)", head, re.IGNORECASE)
    return head_only or (length is not None and len(body) >= int(length.group(1)))


@pytest.mark.parametrize("path", ["/api/games", "/api/auth/register", "/"])
def test_a_body_over_the_limit_is_refused_from_its_headers(server, path):  # noqa: ANN001
    """A Content-Length of a gigabyte with no body behind it: answered at once with the API's
    413, the connection closed, not held until the client has sent (or given up on) it all."""
    head = _json_post(1_000_000_000, path)
    answer, took = _raw_request(server, head, b"{" * 1000)
    status_line, _, rest = answer.partition(b"\r\n")
    assert status_line == b"HTTP/1.1 413 Content Too Large", answer[:200]
    # Readable by an API client's page on another site (server.cors), as Django's answers are.
    assert b"\r\naccess-control-allow-origin: *\r\n" in rest.split(b"\r\n\r\n", 1)[0] + b"\r\n"
    body = json.loads(rest.split(b"\r\n\r\n", 1)[1])
    assert body == {
        "code": "too_large",
        "detail": "Request body is 1000000000 bytes; the limit is 65536.",
    }
    assert took < 5


def test_a_refused_body_that_never_comes_is_closed_once_the_linger_is_up(server):  # noqa: ANN001
    """A client that neither sends the body it announced nor closes is not held on to: the
    server closes its end LINGER_SECONDS after its answer."""
    from server.daphne_server import LINGER_SECONDS

    answer, took = _raw_request(server, _json_post(1_000_000_000), hold=True)
    assert answer.startswith(b"HTTP/1.1 413 "), answer[:200]
    assert LINGER_SECONDS - 0.5 < took < LINGER_SECONDS + 3


@pytest.mark.parametrize("whole", [False, True])
@pytest.mark.parametrize("ctype", ["application/json", "application/x-www-form-urlencoded"])
def test_a_chunked_body_is_refused_from_its_headers(server, whole, ctype):  # noqa: ANN001
    """Refused whether the body is still coming or came whole with the headers (then Twisted
    finishes the request: that broke the connection and the answer with it)."""
    head = (
        f"POST /api/games HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: {ctype}\r\n"
        "Transfer-Encoding: chunked\r\n\r\n"
    )
    body = b"10\r\n" + b"x" * 16 + b"\r\n" + (b"0\r\n\r\n" if whole else b"")
    answer, _ = _raw_request(server, head, body)
    assert answer.startswith(b"HTTP/1.1 411 Length Required\r\n"), answer[:200]
    assert json.loads(answer.split(b"\r\n\r\n", 1)[1])["code"] == "length_required"


@pytest.mark.parametrize("ctype", ["multipart/form-data", "multipart/form-data; boundary=xx"])
def test_a_body_that_is_not_the_multipart_it_says_is_the_apis_415(server, ctype):  # noqa: ANN001
    """The body is the application's to judge: Twisted parsed a form body itself, and one that
    did not parse got a 400 for a malformed head, and its connection closed."""
    token = register(server, f"formbody{len(ctype)}")
    body = b'{"variant": "spanish"}'
    head = (
        f"POST /api/games HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: {ctype}\r\n"
        f"Authorization: Token {token}\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    answer, _ = _raw_request(server, head, body)
    assert answer.startswith(b"HTTP/1.1 415 "), answer[:200]
    assert json.loads(answer.split(b"\r\n\r\n", 1)[1])["code"] == "unsupported_media_type"


def test_a_whole_body_over_the_limit_sent_with_its_headers_gets_its_413(server):  # noqa: ANN001
    body = b"x" * 70_000
    head = _json_post(len(body))
    answer, _ = _raw_request(server, head, body)
    assert answer.startswith(b"HTTP/1.1 413 "), answer[:200]


def test_a_client_still_sending_a_large_body_reads_its_413(server):  # noqa: ANN001
    """urllib sends the whole body before it reads: closed at once, the connection was reset
    under it (a broken pipe) and the 413 lost; the server reads and drops a few MB first."""
    import urllib.error
    import urllib.request

    body = b"x" * (5 * 1024 * 1024)
    request = urllib.request.Request(
        f"{server.http}/api/games", body, {"Content-Type": "application/json"}, method="POST"
    )
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=10)
    assert refused.value.code == 413
    assert json.loads(refused.value.read())["code"] == "too_large"


def test_an_early_refusal_sends_no_100_continue_and_no_body_to_a_head(server):  # noqa: ANN001
    expecting = _json_post(900_000, extra="Expect: 100-continue\r\n")
    answer, _ = _raw_request(server, expecting)
    assert answer.startswith(b"HTTP/1.1 413 ") and b"100 Continue" not in answer, answer
    head = "HEAD /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 900000\r\n\r\n"
    answer, _ = _raw_request(server, head)
    assert answer.startswith(b"HTTP/1.1 413 ") and answer.endswith(b"\r\n\r\n"), answer


HEAD_LINE = "GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\n"


@pytest.mark.parametrize(
    ("head", "status", "detail"),
    [
        (
            f"GET /api/health?q={'a' * 20_000} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
            "414 URI Too Long",
            "The request line is over 16384 bytes.",
        ),
        (
            f"{HEAD_LINE}Cookie: {'c' * 17_000}\r\n\r\n",
            "431 Request Header Fields Too Large",
            "A request header is over 16384 bytes.",
        ),
        (  # a header far longer than the server reads: it still answers before it closes
            f"{HEAD_LINE}Cookie: {'c' * 900_000}\r\n\r\n",
            "431 Request Header Fields Too Large",
            "A request header is over 16384 bytes.",
        ),
        (
            HEAD_LINE + "".join(f"X-Pad-{i}: {'p' * 100}\r\n" for i in range(200)) + "\r\n",
            "431 Request Header Fields Too Large",
            "The request head is over 16384 bytes.",
        ),
        (
            HEAD_LINE + "".join(f"X-{i}: c\r\n" for i in range(500)) + "\r\n",  # 501 in all
            "431 Request Header Fields Too Large",
            "The request has more than 500 header fields.",
        ),
        (
            "NOT A REQUEST LINE AT ALL\r\n\r\n",
            "400 Bad Request",
            "The request's head is malformed.",
        ),
        (
            "GET /api/health HTTP/1.1\r\nAccept: */*\r\n\r\n",
            "400 Bad Request",
            "An HTTP/1.1 request needs a Host header.",
        ),
    ],
)
def test_a_request_head_the_server_will_not_read_gets_a_json_answer(server, head, status, detail):  # noqa: ANN001
    """Twisted reads 16 KB of a head: past that, a line closed the connection with no answer
    and a whole head got a bare 400. Each now gets its status and the API's error body."""
    answer, took = _raw_request(server, head)
    status_line, _, rest = answer.partition(b"\r\n")
    assert status_line == f"HTTP/1.1 {status}".encode(), answer[:200]
    assert json.loads(rest.split(b"\r\n\r\n", 1)[1]) == {"code": "bad_request", "detail": detail}
    assert took < 5
    # The server serves on: a head of a normal size still gets its answer.
    answer, _ = _raw_request(server, HEAD_LINE + "Connection: close\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 200 OK"), answer[:200]


def test_a_body_at_the_limit_still_reaches_the_api(server):  # noqa: ANN001
    """65,536 bytes is read and answered by the API itself (here: not signed in)."""
    body = b'{"variant": "spanish", "pad": "' + b"x" * (65536 - 33) + b'"}'
    assert len(body) == 65536
    head = _json_post(len(body), extra="Connection: close\r\n")
    answer, _ = _raw_request(server, head, body)
    assert answer.startswith(b"HTTP/1.1 401 "), answer[:200]


def _raw_game_socket(server, name: str):  # noqa: ANN001, ANN202
    """A game socket opened on a raw TCP socket by a new user `name`: the socket, and what
    came after the handshake's answer."""
    sock = _raw_handshake(server, *_new_player_and_game(server, name))
    answer = b""
    while b"\r\n\r\n" not in answer:
        answer += sock.recv(65536)
    assert answer.startswith(b"HTTP/1.1 101 "), answer[:200]
    return sock, answer.split(b"\r\n\r\n", 1)[1]


def _new_player_and_game(server, name: str) -> tuple[str, int]:  # noqa: ANN001
    token = register(server, name)
    status, game = server.call("POST", "/api/games", {"variant": "spanish", "deal": 13}, token)
    assert status == 201
    return token, game["id"]


def _raw_handshake(server, token: str, game_id: int):  # noqa: ANN001, ANN202
    """A raw TCP socket that has sent a game socket's handshake; its answer is not read."""
    import base64
    import socket

    key = base64.b64encode(os.urandom(16)).decode()
    head = (
        f"GET /ws/games/{game_id} HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n"
        "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
        f"Sec-WebSocket-Key: {key}\r\nAuthorization: Token {token}\r\n\r\n"
    )
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=20)
    sock.sendall(head.encode())
    return sock


@pytest.mark.parametrize(
    ("payload", "code"),
    [
        (b"\x03", 1002),  # one byte: half a close code
        ((999).to_bytes(2, "big"), 1002),  # a code no endpoint may send
        ((1000).to_bytes(2, "big") + b"\xff\xfe", 1007),  # a reason that is not UTF-8
    ],
)
def test_a_malformed_close_frame_is_answered_with_its_close_code(server, payload, code):  # noqa: ANN001
    """The server fails the connection with 1002 or 1007 and says so in a close frame before
    closing: it used to reset the connection, the close frame thrown away (autobahn took the
    malformed close for the answer to its own)."""
    from websockets.frames import Close, Opcode

    sock, received = _raw_game_socket(server, f"closer{code}{len(payload)}")
    with sock:
        sock.sendall(bytes((0x88, 0x80 | len(payload))) + b"\0\0\0\0" + payload)
        while chunk := sock.recv(65536):  # a reset raises: the test fails on it
            received += chunk
    closes = [Close.parse(f.data) for f in parse_frames(received) if f.opcode == Opcode.CLOSE]
    assert [c.code for c in closes] == [code]


def test_a_flood_of_frames_is_closed_with_4429_before_it_is_worked_through(server):  # noqa: ANN001
    """Frames written thousands at a time are not queued without end behind the socket's
    rate limit: past WS_MAX_WAITING_FRAMES waiting, the server closes with 4429 at once.

    A raw socket, not a WebSocket library's: a library answers the server's close from its own
    thread, and that answer could land in the middle of the flood being written."""
    import contextlib

    from websockets.frames import Close, Opcode

    ping = b'{"t":"ping"}'
    frame = bytes((0x81, 0x80 | len(ping))) + b"\0\0\0\0" + ping  # masked with a zero key
    sock, received = _raw_game_socket(server, "flooder")
    with sock:
        # In one write, so the server reads them together; then a close, as a client that is
        # done says goodbye (without it the server's close would time out into a reset, which
        # throws away what this side has not read yet, the close frame too, on a busy host).
        goodbye = b"\x88\x82\0\0\0\0" + (1000).to_bytes(2, "big")
        sock.sendall(frame * 5000 + goodbye)
        port = sock.getsockname()[1]
        # Until the server closes the connection. It may reset it (it stops reading the
        # flood): on a busy host the reset can throw away frames this side had not read yet,
        # the close among them, so the server's log says what it did.
        with contextlib.suppress(ConnectionResetError):
            while chunk := sock.recv(65536):
                received += chunk
    frames = parse_frames(received)
    closes = [Close.parse(f.data) for f in frames if f.opcode == Opcode.CLOSE]
    assert all((c.code, c.reason) == (4429, "Too many frames waiting: slow down.") for c in closes)
    assert len(frames) < 1024  # the backlog was dropped, not worked through
    assert server.call("GET", "/api/health")[0] == 200
    logged = server.log.read_text()
    assert f"127.0.0.1:{port} with 4429: " in logged, logged[-2000:]


@pytest.fixture(scope="module")
def strict_server(shared_env, tmp_path_factory):  # noqa: ANN001, ANN201
    """A server with small limits on slow heads and connections per address."""
    env = {
        **shared_env,
        "HTTP_MAX_CONNECTIONS_PER_ADDRESS": "4",
        "HTTP_REQUEST_SECONDS": "1",
        "WS_MAX_SOCKETS_PER_USER": "3",
        "HTTP_REQUESTS_PER_CLIENT": "4",
    }
    proc = Daphne(env, tmp_path_factory.mktemp("logs") / "daphne-strict.log")
    yield proc
    proc.stop()


def _trickle(server, head: str, pieces) -> tuple[bytes, float]:  # noqa: ANN001
    """Send `head`, then a piece every 0.1 s while the server listens (40 at most): the
    answer read meanwhile, and the seconds it took."""
    import socket
    import time

    started = time.monotonic()
    answer = b""
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(head.encode())
        for piece in itertools.islice(pieces, 40):
            try:
                sock.sendall(piece)
            except OSError:
                break
            sock.settimeout(0.1)
            try:
                chunk = sock.recv(65536)
            except TimeoutError:
                continue
            answer += chunk
            if not chunk or b"\r\n\r\n" in answer:
                break
    return answer, time.monotonic() - started


def test_a_head_that_trickles_in_is_answered_408_once_its_time_is_up(strict_server):  # noqa: ANN001
    """Each header line restarted Twisted's idle timeout: a client that sent one every few
    seconds held its connection for over an hour (and 20,000 such, every file of the process)."""
    lines = (f"X-Slow-{i}: 1\r\n".encode() for i in itertools.count())
    answer, took = _trickle(strict_server, HEAD_LINE, lines)
    assert answer.startswith(b"HTTP/1.1 408 Request Timeout"), answer[:200]
    assert b"request head took over 1 s to arrive" in answer and 0.9 < took < 3.5
    answer, _ = _raw_request(strict_server, HEAD_LINE + "Connection: close\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 200 OK"), answer[:200]


def test_a_request_line_that_trickles_in_is_answered_408_once_its_time_is_up(strict_server):  # noqa: ANN001
    """The time started with the first whole line: a request line sent a byte at a time, and
    never ended, held its connection with no limit (each byte restarted the idle timeout)."""
    answer, took = _trickle(strict_server, "G", itertools.repeat(b"a"))
    assert answer.startswith(b"HTTP/1.1 408 Request Timeout"), answer[:200]
    assert b"request head took over 1 s to arrive" in answer and 0.9 < took < 3.5


def test_a_body_that_trickles_in_is_answered_408_once_its_time_is_up(strict_server):  # noqa: ANN001
    """A body under the size limit, sent a few bytes at a time after a prompt head, held its
    connection for as long as the client liked: the request's time covers its body too."""
    head = (
        f"POST /api/auth/token HTTP/1.1\r\nHost: 127.0.0.1:{strict_server.port}\r\n"
        "Content-Type: application/json\r\nContent-Length: 60000\r\n\r\n"
    )
    answer, took = _trickle(strict_server, head, itertools.repeat(b'{"a": 1 '))
    assert answer.startswith(b"HTTP/1.1 408 Request Timeout"), answer[:200]
    assert b"request body took over 1 s to arrive" in answer and 0.9 < took < 3.5, answer


def test_connections_from_one_address_past_the_limit_are_closed_as_they_open(strict_server):  # noqa: ANN001
    """A WebSocket counts as the connection it was upgraded from, until it closes."""
    import socket

    token = register(strict_server, "manysockets")
    with ExitStack() as stack:
        socks = [stack.enter_context(ws(strict_server, "/ws/echo", token)) for _ in range(3)]
        held = stack.enter_context(socket.create_connection(("127.0.0.1", strict_server.port)))
        held.sendall(b"GET /api/health HTTP/1.1\r\n")  # a head begun: the fourth connection
        with socket.create_connection(("127.0.0.1", strict_server.port), timeout=5) as extra:
            extra.sendall(f"{HEAD_LINE}Connection: close\r\n\r\n".encode())
            with suppress(ConnectionResetError):  # closed with no answer
                assert extra.recv(65536) == b""
        socks[0].send("still here")
        assert socks[0].recv(timeout=5) == "still here"  # the open ones are served
        socks[0].close()
    # Every one closed: room again.
    answer, _ = _raw_request(strict_server, HEAD_LINE + "Connection: close\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 200 OK"), answer[:200]


def test_a_users_socket_past_its_limit_is_closed_4429_with_the_reason(strict_server):  # noqa: ANN001
    """The close an application sends keeps its reason on the wire: daphne alone sent the
    code and an empty reason (docs/websocket.md, 4429)."""
    token = register(strict_server, "toomanysockets")
    with ExitStack() as stack:
        for _ in range(3):  # WS_MAX_SOCKETS_PER_USER
            stack.enter_context(ws(strict_server, "/ws/echo", token))
        with ws(strict_server, "/ws/echo", token) as extra, pytest.raises(ConnectionClosed) as info:
            extra.recv(timeout=10)
    assert info.value.rcvd is not None
    assert (info.value.rcvd.code, info.value.rcvd.reason) == (
        4429,
        "Too many sockets open: close some first.",
    )


@pytest.mark.parametrize(
    ("head", "status", "says"),
    [
        # The URL's authority is the Host (RFC 9112 3.2.2); the header beside it is ignored.
        ("GET http://127.0.0.1/api/health HTTP/1.1\r\nHost: evil.example\r\n", "200 OK", b'"ok"'),
        (
            "GET http://evil.example/x HTTP/1.1\r\nHost: 127.0.0.1\r\n",
            "400 Bad Request",
            b"ALLOWED",
        ),
        ("OPTIONS * HTTP/1.1\r\nHost: 127.0.0.1\r\n", "400 Bad Request", b"must be a path"),
    ],
)
def test_a_request_target_that_is_not_a_path_is_read_as_the_rfc_says(server, head, status, says):  # noqa: ANN001
    """An absolute URL went on to Django as the path: no route matched it, and with DEBUG on
    the answer was Django's debug page, not the API's JSON."""
    answer, _ = _raw_request(server, head + "Connection: close\r\n\r\n")
    assert answer.startswith(f"HTTP/1.1 {status}".encode()), answer[:300]
    assert says in answer and b"<html" not in answer.lower()


def test_a_flood_of_requests_from_one_user_is_refused_past_its_share_not_queued(server):  # noqa: ANN001
    """200 requests of one user at once: past its 16 in progress it gets 429s at once, and
    another user's request is not queued behind the flood (it waited 2.2 s for 1,000 before)."""
    import socket

    flooder, game_id = _new_player_and_game(server, "requestflooder")
    other = register(server, "notflooding")
    head = (
        f"GET /api/games/{game_id} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Authorization: Token {flooder}\r\nConnection: close\r\n\r\n"
    ).encode()
    with ExitStack() as stack:
        socks = [
            stack.enter_context(socket.create_connection(("127.0.0.1", server.port), timeout=20))
            for _ in range(200)
        ]
        for sock in socks:  # all sent before any is read: the server has them all at once
            sock.sendall(head)
        status, me = server.call("GET", "/api/me", token=other)
        assert status == 200 and me["username"] == "notflooding"
        answers = []
        for sock in socks:
            answer = b""
            while chunk := sock.recv(65536):
                answer += chunk
            answers.append(answer)
    statuses = [int(answer.split(b" ", 2)[1]) for answer in answers]
    assert set(statuses) == {200, 429} and statuses.count(200) >= 16, statuses
    refusal = answers[statuses.index(429)]
    head_part, _, body = refusal.partition(b"\r\n\r\n")
    assert b"\r\nretry-after: 1\r\n" in head_part.lower()
    assert json.loads(body)["code"] == "rate_limited"
    assert server.call("GET", f"/api/games/{game_id}", token=flooder)[0] == 200  # served again


def test_a_client_that_waits_for_each_answer_is_never_refused_on_as_many_connections(
    strict_server,
):  # noqa: ANN001
    """As many keep-alive connections as its share, each sending its next request once its
    answer is in: a request counted until Django had finished with it (after the answer) got
    hundreds of 429s in 5 s (a helper's audit)."""
    import http.client

    token = register(strict_server, "steadyclient")
    statuses: list[int] = []

    def client() -> None:
        conn = http.client.HTTPConnection("127.0.0.1", strict_server.port, timeout=20)
        for _ in range(60):
            conn.request("GET", "/api/me", headers={"Authorization": f"Token {token}"})
            answer = conn.getresponse()
            answer.read()
            statuses.append(answer.status)
        conn.close()

    threads = [threading.Thread(target=client) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert len(statuses) == 240 and set(statuses) == {200}, sorted(set(statuses))
