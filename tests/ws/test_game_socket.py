"""The game socket: play, watch, and every bad frame a client may send."""

from __future__ import annotations

import json

import orjson
import pytest
from channels.db import database_sync_to_async
from django.db import OperationalError

from games import services
from games.models import Game, Move
from server.lean_consumer import TOO_MANY_REFUSED
from tests.conftest import layer_down
from tests.ws.helpers import CLOSED_4401, WAIT, connect, recv, recv_until, send

pytestmark = pytest.mark.django_db(transaction=True)


@database_sync_to_async
def practice(user, variant="portuguese", deal=1) -> Game:  # noqa: ANN001
    return services.start_practice(user, variant, deal)


@database_sync_to_async
def version_and_moves(game_id: int) -> tuple[int, int]:
    return Game.objects.get(pk=game_id).version, Move.objects.filter(game_id=game_id).count()


async def test_connect_sends_state(user):  # noqa: ANN001
    game = await practice(user)
    comm = await connect(f"/ws/games/{game.pk}", user)
    frame = await recv(comm)
    assert frame["t"] == "state" and frame["v"] == 0
    assert frame["d"]["tableau"][0] == ["JD", "QC", "TS", "7D"]
    assert frame["d"]["last_move"] is None
    await comm.disconnect()


async def test_move_gets_ack_then_state_and_watcher_sees_it(user, other_user):  # noqa: ANN001
    game = await practice(user)
    owner = await connect(f"/ws/games/{game.pk}", user)
    watcher = await connect(f"/ws/games/{game.pk}", other_user)
    first = await recv(owner)
    await recv(watcher)
    move = first["d"]["legal_moves"][0]
    await send(owner, "move", {"move": move, "v": 0, "id": "m-1"})
    assert await recv(owner) == {"t": "ack", "d": {"id": "m-1"}}
    state = await recv(owner)
    assert state["t"] == "state" and state["v"] == 1 and state["d"]["last_move"] == move
    watched = await recv_until(watcher, "state")
    assert watched == state
    assert await version_and_moves(game.pk) == (1, 1)
    await owner.disconnect()
    await watcher.disconnect()


async def test_another_player_watches_todays_ranked_attempt_as_it_is_played(user, other_user):  # noqa: ANN001
    """PROTOCOL.md: other signed-in users may watch, read only, a daily attempt as any game;
    the watcher has no attempt of its own at that challenge, and sees what the owner sees."""
    from games import clock
    from tests.conftest import client_for

    date = clock.today().isoformat()
    api = client_for(user)
    game = (await database_sync_to_async(api.post)(f"/api/daily/{date}/countess/play")).json()
    owner = await connect(f"/ws/games/{game['id']}", user)
    watcher = await connect(f"/ws/games/{game['id']}", other_user)
    first = await recv(owner)
    assert await recv(watcher) == first
    await send(watcher, "move", {"move": first["d"]["legal_moves"][0], "v": 0, "id": "w"})
    assert (await recv(watcher))["d"]["code"] == "forbidden"
    await send(owner, "move", {"move": first["d"]["legal_moves"][0], "v": 0, "id": "m"})
    state = await recv_until(owner, "state")
    assert await recv_until(watcher, "state") == state
    await owner.disconnect()
    await watcher.disconnect()


async def test_on_a_server_offering_send_many_the_ack_and_state_go_in_one_message(user):  # noqa: ANN001
    """server.daphne_server offers the extension in the scope; it reaches the consumer through
    the middleware and router, and a move's two frames go to the server as one message."""
    from server.lean_consumer import SEND_MANY

    game = await practice(user)
    comm = await connect(f"/ws/games/{game.pk}", user, extensions={SEND_MANY: {}})
    first = await recv(comm)
    move = first["d"]["legal_moves"][0]
    await send(comm, "move", {"move": move, "v": 0, "id": "m-1"})
    message = await comm.receive_output(WAIT)
    assert message["type"] == SEND_MANY
    ack, state = (json.loads(text) for text in message["texts"])
    assert ack == {"t": "ack", "d": {"id": "m-1"}}
    assert state["t"] == "state" and state["v"] == 1 and state["d"]["last_move"] == move
    await comm.disconnect()


async def test_the_owners_socket_caches_its_game_for_the_moves_to_come(user, other_user):  # noqa: ANN001
    """A watcher's socket caches nothing (it never moves); the owner's caches the game at the
    version it sent, and its moves carry the entry on. A finished game is not cached."""
    from games import state_cache

    game = await practice(user, "spanish", 4)
    watcher = await connect(f"/ws/games/{game.pk}", other_user)
    await recv(watcher)
    assert state_cache.states.entries_for([game.pk]) == {}
    owner = await connect(f"/ws/games/{game.pk}", user)
    first = await recv(owner)
    [(version, state, _, row)] = state_cache.states.entries_for([game.pk]).values()
    assert version == row.version == 0 and state.legal_moves() == first["d"]["legal_moves"]
    await send(owner, "move", {"move": first["d"]["legal_moves"][0], "v": 0, "id": 1})
    await recv_until(owner, "state")
    assert state_cache.states.entries_for([game.pk])[game.pk][0] == 1
    await send(owner, "resign", {"id": 2})
    await recv_until(owner, "state")
    state_cache.states.entries.clear()
    again = await connect(f"/ws/games/{game.pk}", user)
    assert (await recv(again))["d"]["status"] == "resigned"
    assert state_cache.states.entries_for([game.pk]) == {}
    for comm in (watcher, owner, again):
        await comm.disconnect()


async def test_watcher_cannot_move(user, other_user):  # noqa: ANN001
    game = await practice(user)
    watcher = await connect(f"/ws/games/{game.pk}", other_user)
    first = await recv(watcher)
    await send(watcher, "move", {"move": first["d"]["legal_moves"][0], "v": 0, "id": 7})
    err = await recv(watcher)
    assert err["t"] == "error" and err["d"]["code"] == "forbidden" and err["d"]["id"] == 7
    for action in ("undo", "resign"):
        await send(watcher, action, {"v": 0, "id": "x"})
        assert (await recv(watcher))["d"]["code"] == "forbidden"
    assert await version_and_moves(game.pk) == (0, 0)
    await watcher.disconnect()


async def test_illegal_move_is_an_error_and_socket_stays_open(user):  # noqa: ANN001
    game = await practice(user)
    comm = await connect(f"/ws/games/{game.pk}", user)
    await recv(comm)
    await send(comm, "move", {"move": "t0-f0", "v": 0, "id": "m-1"})
    err = await recv(comm)
    assert err["t"] == "error"
    assert err["d"]["code"] == "illegal_move" and err["d"]["id"] == "m-1" and err["d"]["v"] == 0
    await send(comm, "move", {"move": "t42-f0", "v": 0, "id": "m-2"})
    assert (await recv(comm))["d"]["code"] == "illegal_move"
    await send(comm, "ping")
    assert await recv(comm) == {"t": "pong"}
    assert await version_and_moves(game.pk) == (0, 0)
    await comm.disconnect()


async def test_stale_version_is_refused_with_the_current_version(user):  # noqa: ANN001
    game = await practice(user)
    comm = await connect(f"/ws/games/{game.pk}", user)
    first = await recv(comm)
    move = first["d"]["legal_moves"][0]
    await send(comm, "move", {"move": move, "v": 0, "id": "a"})
    await recv_until(comm, "state")
    await send(comm, "move", {"move": move, "v": 0, "id": "b"})
    err = await recv(comm)
    assert err["d"]["code"] == "stale_version" and err["d"]["v"] == 1 and err["d"]["id"] == "b"
    assert await version_and_moves(game.pk) == (1, 1)
    await comm.disconnect()


async def test_a_stale_version_error_leaves_the_states_in_between_to_come(user):  # noqa: ANN001
    """Another socket's moves fan out through the group and may reach this socket after it was
    told (in a `stale_version` error) that the game has moved on: it still gets each of them,
    in order. The error names the current version; it does not say this socket has seen it."""
    from games import engine, events
    from games.broadcast import send_to_game, wire

    game = await practice(user)
    comm = await connect(f"/ws/games/{game.pk}", user)
    first = await recv(comm)

    @database_sync_to_async
    def two_moves_elsewhere() -> list:
        frames = []
        for v in (0, 1):
            state = engine.State.from_dict(Game.objects.get(pk=game.pk).state)
            move = state.legal_moves()[0]
            frames.append(wire(events.state_frame(services.play_move(game.pk, user, move, v))))
        return frames

    frames = await two_moves_elsewhere()  # committed; their fan-out is still on its way
    await send(comm, "move", {"move": first["d"]["legal_moves"][0], "v": 0, "id": "late"})
    err = await recv(comm)
    assert err["d"]["code"] == "stale_version" and err["d"]["v"] == 2
    for frame in frames:
        await send_to_game(game.pk, frame)
    assert [(await recv(comm))["v"] for _ in frames] == [1, 2]
    await comm.disconnect()


@pytest.mark.parametrize(
    "raw",
    [
        "{not json",
        "[1, 2]",
        '"just a string"',
        '{"d": {}}',
        '{"t": 5}',
        '{"t": "fly"}',
        '{"t": "connect", "d": {"id": "x-1"}}',  # a handler's name, but no message type
        '{"t": "move"}',
        '{"t": "move", "d": {"v": 0}}',
        '{"t": "move", "d": {"move": "t0-t2"}}',
        '{"t": "move", "d": {"move": "t0-t2", "v": "0"}}',
        '{"t": "move", "d": {"move": "t0-t2", "v": true}}',
        '{"t": "move", "d": [1]}',
        '{"t": "undo", "d": {}}',
    ],
)
async def test_malformed_frames_are_bad_message_and_change_nothing(user, raw):  # noqa: ANN001
    game = await practice(user)
    comm = await connect(f"/ws/games/{game.pk}", user)
    await recv(comm)
    await comm.send_to(text_data=raw)
    err = await recv(comm)
    assert err["t"] == "error" and err["d"]["code"] == "bad_message", err
    await send(comm, "sync")
    assert (await recv(comm))["t"] == "state"
    assert await version_and_moves(game.pk) == (0, 0)
    await comm.disconnect()


@pytest.mark.parametrize(
    "v, says",
    [
        ("3", '"3"'),
        (-1, "-1"),
        (2**63, str(2**63)),
        (2**64 - 1, str(2**64 - 1)),
        (2**64, "a number that large"),
        (10**23, "a number that large"),
        (True, "true"),
        (1.5, "1.5"),
    ],
)
async def test_a_version_that_is_not_one_is_named_in_the_refusal(user, v, says):  # noqa: ANN001
    """A `v` that is there but is no version: the refusal says what was read (a number past
    64 bits arrives as a fraction, so it is not echoed: `1e+23` for the digits sent), not that
    it is missing. Past 2^63 - 1 it is no version
    either, as over REST (`invalid`), where it was stale here."""
    game = await practice(user)
    comm = await connect(f"/ws/games/{game.pk}", user)
    await recv(comm)
    raw = '{"t":"move","d":{"move":"draw","id":"x-1","v":%s}}' % (
        str(v).lower() if isinstance(v, bool | int) else orjson.dumps(v).decode()
    )
    await comm.send_to(text_data=raw)
    err = (await recv(comm))["d"]
    assert err["code"] == "bad_message" and err["detail"].endswith(f"not {says}."), err
    assert await version_and_moves(game.pk) == (0, 0)
    await comm.disconnect()


@pytest.mark.parametrize(
    "raw, says",
    [
        ('{"d": {"id": "x-1"}}', 'A frame needs "t", its message type'),
        ('{"t": 5, "d": {"id": "x-1"}}', '"t" is a message type, a string, not 5.'),
        ('{"t": ["move"], "d": {"id": "x-1"}}', '"t" is a message type, a string, not ["move"].'),
        ('{"t": "move", "d": {"id": "x-1", "v": 0}}', 'A move frame needs "d": {"move"'),
        ('{"t": "move", "d": {"id": "x-1", "move": 5, "v": 0}}', '"move" is a string, not 5.'),
        # Quoted up to 32 bytes: a cut through a character's bytes is no error of the server's.
        ('{"t": ["a' + "é" * 20 + '"], "d": {"id": "x-1"}}', '"t" is a message type'),
        ('{"t": "move", "d": {"id": "x-1", "move": ["a' + "é" * 20 + '"], "v": 0}}', "not ["),
    ],
)
async def test_a_frame_refused_for_its_type_or_move_says_which_and_keeps_its_id(user, raw, says):  # noqa: ANN001
    """The frame is an object: what is wrong is its `t` or its `move`, and the refusal says so,
    with the id the frame gave, as for any other refusal."""
    game = await practice(user)
    comm = await connect(f"/ws/games/{game.pk}", user)
    await recv(comm)
    await comm.send_to(text_data=raw)
    err = (await recv(comm))["d"]
    assert err["code"] == "bad_message" and err["id"] == "x-1" and says in err["detail"], err
    assert await version_and_moves(game.pk) == (0, 0)
    await comm.disconnect()


async def test_the_largest_version_is_an_ordinary_stale_one(user):  # noqa: ANN001
    game = await practice(user)
    comm = await connect(f"/ws/games/{game.pk}", user)
    await recv(comm)
    await send(comm, "move", {"move": "draw", "id": "x-1", "v": 2**63 - 1})
    err = (await recv(comm))["d"]
    assert err["code"] == "stale_version" and err["id"] == "x-1", err
    await comm.disconnect()


@pytest.mark.parametrize("action, says", [("move", "A move frame"), ("undo", "An undo frame")])
async def test_a_write_with_no_version_says_what_it_needs(user, action, says):  # noqa: ANN001
    game = await practice(user)
    comm = await connect(f"/ws/games/{game.pk}", user)
    await recv(comm)
    await send(comm, action, {"move": "draw", "id": "x-1"})
    err = (await recv(comm))["d"]
    assert (
        err["code"] == "bad_message" and err["detail"].startswith(says) and '"v"' in err["detail"]
    )
    await comm.disconnect()


async def test_a_frame_that_is_not_json_is_told_where_it_fails(user):  # noqa: ANN001
    """NaN is not JSON: the refusal says so and where, not only that frames are objects."""
    game = await practice(user)
    comm = await connect(f"/ws/games/{game.pk}", user)
    await recv(comm)
    await comm.send_to(text_data='{"t": "move", "d": {"move": "t0-t2", "v": NaN}}')
    err = (await recv(comm))["d"]
    assert err["code"] == "bad_message" and "line 1 column 43" in err["detail"], err
    await comm.disconnect()


@pytest.mark.parametrize(
    "raw, key",
    [
        ('{"t": "move", "t": "undo", "d": {"v": 0}}', "t"),
        ('{"t": "move", "d": {"move": "t0-t2", "v": 0, "v": 1, "id": "x-1"}}', "v"),
        ('{"t": "move", "d": {"move": "t0-t2", "move": "t1-t2", "v": 0, "id": "x-1"}}', "move"),
        ('{"t": "move", "d": {"move": "t0-t2", "v": 0}, "d": {"move": "t1-t2", "v": 0}}', "d"),
        ('{"t": "move", "d": {"move": "t0-t2", "v": 0, "x": {"a": ":", "a": 2}}}', "a"),
    ],
)
async def test_a_frame_naming_a_key_twice_is_bad_message_and_plays_nothing(user, raw, key):  # noqa: ANN001
    """JSON parsers disagree on which of two values counts: the frame is refused, whichever
    object repeats the key, and the error carries the move's id when it has one."""
    game = await practice(user)
    comm = await connect(f"/ws/games/{game.pk}", user)
    await recv(comm)
    await comm.send_to(text_data=raw)
    err = (await recv(comm))["d"]
    assert err["code"] == "bad_message" and f'the key "{key}" appears twice' in err["detail"]
    assert err.get("id") == ("x-1" if '"id"' in raw else None), err
    assert await version_and_moves(game.pk) == (0, 0)
    await comm.disconnect()


async def test_a_colon_inside_a_string_is_not_taken_for_a_repeated_key(user):  # noqa: ANN001
    """Frames with more colons than keys are read a second time to look for a repeat: one
    that has none plays as any other."""
    game = await practice(user)
    comm = await connect(f"/ws/games/{game.pk}", user)
    move = (await recv(comm))["d"]["legal_moves"][0]
    frame = {"t": "move", "d": {"move": move, "v": 0, "id": "a:b"}}
    await comm.send_to(text_data=orjson.dumps(frame).decode())
    assert await recv(comm) == {"t": "ack", "d": {"id": "a:b"}}
    assert (await recv(comm))["v"] == 1
    await comm.disconnect()


async def test_oversized_frame_is_refused(user):  # noqa: ANN001
    game = await practice(user)
    comm = await connect(f"/ws/games/{game.pk}", user)
    await recv(comm)
    await comm.send_to(text_data=json.dumps({"t": "move", "d": {"move": "x" * 70_000, "v": 0}}))
    err = await recv(comm)
    assert err["d"]["code"] == "bad_message" and "too large" in err["d"]["detail"]
    await send(comm, "ping")
    assert await recv(comm) == {"t": "pong"}
    await comm.disconnect()


async def test_a_frame_of_exactly_the_limit_is_read_and_one_byte_more_is_not(user, settings):  # noqa: ANN001
    game = await practice(user)
    comm = await connect(f"/ws/games/{game.pk}", user)
    await recv(comm)
    frame = '{"t":"ping","pad":"%s"}'
    at_limit = frame % ("x" * (settings.MAX_WS_FRAME_BYTES - len(frame % "")))
    assert len(at_limit.encode()) == settings.MAX_WS_FRAME_BYTES
    await comm.send_to(text_data=at_limit)
    assert await recv(comm) == {"t": "pong"}
    await comm.send_to(text_data=at_limit.replace('"pad":"', '"pad":"x'))
    err = await recv(comm)
    assert err["d"]["code"] == "bad_message" and "too large" in err["d"]["detail"]
    await comm.disconnect()


async def test_the_frame_limit_counts_bytes_not_characters(user):  # noqa: ANN001
    """30,000 euro signs are 90,000 bytes on the wire: over the 64 KiB limit, though fewer
    characters than it. Just under it in bytes, a frame of them is read."""
    game = await practice(user)
    comm = await connect(f"/ws/games/{game.pk}", user)
    await recv(comm)
    await comm.send_to(text_data=json.dumps({"t": "ping", "pad": "€" * 30_000}, ensure_ascii=False))
    err = await recv(comm)
    assert err["d"]["code"] == "bad_message" and "too large" in err["d"]["detail"]
    fits = json.dumps({"t": "ping", "pad": "€" * 21_800}, ensure_ascii=False)
    assert len(fits.encode()) <= 65_536
    await comm.send_to(text_data=fits)
    assert await recv(comm) == {"t": "pong"}
    await comm.disconnect()


async def test_binary_frame_is_refused(user):  # noqa: ANN001
    game = await practice(user)
    comm = await connect(f"/ws/games/{game.pk}", user)
    await recv(comm)
    await comm.send_to(bytes_data=b"\x00\x01")
    assert (await recv(comm))["d"]["code"] == "bad_message"
    await comm.disconnect()


async def test_flood_gets_rate_limited_then_closed_with_4429(user):  # noqa: ANN001
    game = await practice(user)
    comm = await connect(f"/ws/games/{game.pk}", user)
    await recv(comm)
    codes, refused_ids = [], []
    for i in range(200):
        await send(comm, "ping", {"id": f"p-{i}"})
    while True:
        out = await comm.receive_output(WAIT)
        if out["type"] == "websocket.close":
            assert out["code"] == 4429 and out["reason"] == TOO_MANY_REFUSED
            break
        frame = json.loads(out["text"])
        codes.append(frame.get("d", {}).get("code") if frame["t"] == "error" else frame["t"])
        if frame["t"] == "error":
            refused_ids.append(frame["d"]["id"])
    assert "pong" in codes and "rate_limited" in codes
    # Each refusal names the frame it refused, as every error does.
    assert refused_ids and all(i is not None and i.startswith("p-") for i in refused_ids)
    # The frames still queued when the server closed the socket are dropped, not answered.
    assert await comm.receive_nothing(timeout=0.5)


async def test_a_client_that_waits_for_each_answer_is_never_rate_limited(user, settings):  # noqa: ANN001
    """Only frames sent before the earlier ones were answered are charged: a bot replaying a
    long line as fast as the server answers is not a flood; the same frames sent at once are."""
    settings.WS_RATE_PER_SECOND, settings.WS_RATE_BURST = 0.001, 3
    game = await practice(user, "chinese_freecell")
    comm = await connect(f"/ws/games/{game.pk}", user)
    state = await recv(comm)
    for i in range(12):
        await send(comm, "move", {"move": state["d"]["legal_moves"][0], "v": i, "id": i})
        assert await recv(comm) == {"t": "ack", "d": {"id": i}}
        state = await recv(comm)
        assert state["v"] == i + 1
    for i in range(20):
        await send(comm, "ping", {"id": i})
        assert await recv(comm) == {"t": "pong"}
    for i in range(8):
        await send(comm, "ping", {"id": f"burst-{i}"})
    answers = [await recv(comm) for _ in range(8)]
    refused = [a["d"]["id"] for a in answers if a["t"] == "error"]
    assert [a["d"]["code"] for a in answers if a["t"] == "error"] == ["rate_limited"] * 4
    assert refused == [f"burst-{i}" for i in range(3, 7)]  # the last one had nothing behind it
    assert await version_and_moves(game.pk) == (12, 12)
    await comm.disconnect()


async def test_the_abuse_close_comes_at_the_refusal_that_reaches_the_limit(user, settings):  # noqa: ANN001
    """WS_ABUSE_REFUSALS refusals close the socket: the last of them is the close itself, so a
    limit of 3 is two `rate_limited` errors, then 4429."""
    settings.WS_RATE_PER_SECOND, settings.WS_RATE_BURST, settings.WS_ABUSE_REFUSALS = 0.001, 1, 3
    game = await practice(user)
    comm = await connect(f"/ws/games/{game.pk}", user)
    await recv(comm)
    for i in range(10):
        await send(comm, "ping", {"id": i})
    heard = []
    while (out := await comm.receive_output(WAIT))["type"] != "websocket.close":
        frame = json.loads(out["text"])
        heard.append(frame["d"]["code"] if frame["t"] == "error" else frame["t"])
    assert (out["code"], heard) == (4429, ["pong", "rate_limited", "rate_limited"])


async def test_a_send_to_a_socket_that_is_gone_is_dropped_quietly():
    """autobahn raises Disconnected on a send to a closed socket (the client dropped it
    mid-move): the consumer died of it before its disconnect() left the game's group."""
    from autobahn.exception import Disconnected

    from server.lean_consumer import LeanWebsocketConsumer

    consumer = LeanWebsocketConsumer()
    sent = []

    async def gone(message: dict) -> None:
        sent.append(message)
        raise Disconnected("Attempt to send on a closed protocol")

    consumer.base_send = gone
    await consumer.send(text_data='{"t":"state"}')  # no exception
    await consumer.send(text_data='{"t":"state"}')
    await consumer.close(code=4429)
    assert len(sent) == 1 and consumer.closing


async def test_unknown_game_says_so_and_the_socket_stays_open(user):  # noqa: ANN001
    """PROTOCOL.md: an error closes a socket only for auth failure (4401) and abuse (4429)."""
    comm = await connect("/ws/games/987654", user)
    err = await recv(comm)
    assert err["t"] == "error"
    assert (err["d"]["code"], err["d"]["reason"]) == ("forbidden", "not_found")  # websocket.md
    await send(comm, "move", {"move": "t0-f0", "v": 0, "id": "m-1"})
    err = await recv(comm)
    assert (err["d"]["id"], err["d"]["code"], err["d"]["detail"]) == (
        "m-1",
        "forbidden",
        "No game 987654.",
    )
    await send(comm, "sync", {"id": "s-1"})  # asks again: still no such game
    err = await recv(comm)
    assert (err["d"]["id"], err["d"]["reason"]) == ("s-1", "not_found")
    await send(comm, "ping")
    assert await recv(comm) == {"t": "pong"}
    assert await comm.receive_nothing(timeout=0.3)


@pytest.mark.parametrize("path", ["/ws/games/abc", "/ws/nothing"])
async def test_a_path_with_no_socket_says_so_and_closes_with_4404(path):  # noqa: ANN001
    """Not a socket of PROTOCOL.md (whose sockets an error never closes): nothing to keep."""
    comm = await connect(path)
    err = await recv(comm)
    assert err["t"] == "error" and err["d"]["code"] == err["d"]["reason"] == "bad_message"
    assert (await comm.receive_output(WAIT))["code"] == 4404


async def test_missing_auth_closes_with_4401(user):  # noqa: ANN001
    game = await practice(user)
    comm = await connect(f"/ws/games/{game.pk}")
    assert await comm.receive_output(WAIT) == CLOSED_4401


@pytest.mark.parametrize("frame", ['{"t":"resign"}', '{"t":"resign","d":null}'])
async def test_a_resign_needs_no_data_and_a_move_or_undo_does(user, frame):  # noqa: ANN001
    """As docs/websocket.md says: `d` may be left out where it carries nothing the server
    needs (a resign's is only its `id`); a move or an undo without it is refused."""
    game = await practice(user)
    comm = await connect(f"/ws/games/{game.pk}", user)
    await recv(comm)
    for action in ("move", "undo"):
        await comm.send_to(text_data=json.dumps({"t": action}))
        assert (await recv(comm))["d"]["code"] == "bad_message"
    assert await version_and_moves(game.pk) == (0, 0)
    await comm.send_to(text_data=frame)
    assert await recv(comm) == {"t": "ack", "d": {"id": None}}
    assert (await recv(comm))["d"]["status"] == "resigned"
    assert (await recv(comm))["t"] == "result"
    await comm.disconnect()


async def test_undo_and_resign_over_the_socket(user):  # noqa: ANN001
    game = await practice(user)
    comm = await connect(f"/ws/games/{game.pk}", user)
    first = await recv(comm)
    await send(comm, "move", {"move": first["d"]["legal_moves"][0], "v": 0, "id": "m"})
    await recv_until(comm, "state")
    await send(comm, "undo", {"v": 1, "id": "u-1"})
    assert await recv(comm) == {"t": "ack", "d": {"id": "u-1"}}
    state = await recv(comm)
    assert state["v"] == 2 and state["d"]["tableau"] == first["d"]["tableau"]
    await send(comm, "resign", {"id": "r-1"})
    assert await recv(comm) == {"t": "ack", "d": {"id": "r-1"}}
    assert (await recv(comm))["d"]["status"] == "resigned"
    result = await recv(comm)
    assert result["t"] == "result" and result["d"]["status"] == "resigned"
    assert result["d"]["moves"] == 2 and result["d"]["rank"] is None
    await send(comm, "move", {"move": first["d"]["legal_moves"][0], "v": 2, "id": "late"})
    assert (await recv(comm))["d"]["code"] == "game_over"
    await comm.disconnect()


async def test_undo_steps_back_as_many_moves_as_were_played(user):  # noqa: ANN001
    """Undo is not one level deep: each undo takes back the move before the last one undone."""
    game = await practice(user)
    comm = await connect(f"/ws/games/{game.pk}", user)
    states = [(await recv(comm))["d"]]
    for v in (0, 1):
        await send(comm, "move", {"move": states[-1]["legal_moves"][0], "v": v, "id": f"m{v}"})
        states.append((await recv_until(comm, "state"))["d"])
    for v, back_to in ((2, states[1]), (3, states[0])):
        await send(comm, "undo", {"v": v, "id": f"u{v}"})
        state = (await recv_until(comm, "state"))["d"]
        assert state["tableau"] == back_to["tableau"] and state["moves"] == v + 1
    await send(comm, "undo", {"v": 4, "id": "u4"})
    assert (await recv(comm))["d"]["code"] == "illegal_move"  # back at the deal
    await comm.disconnect()


async def test_rest_move_reaches_the_socket(user):  # noqa: ANN001
    from rest_framework.test import APIClient

    game = await practice(user)
    comm = await connect(f"/ws/games/{game.pk}", user)
    first = await recv(comm)
    client = APIClient()
    client.force_authenticate(user)
    move = first["d"]["legal_moves"][0]
    res = await database_sync_to_async(client.post)(
        f"/api/games/{game.pk}/moves", {"move": move, "v": 0}, format="json"
    )
    assert res.status_code == 200
    pushed = await recv(comm)
    assert pushed["t"] == "state" and pushed["v"] == 1 and pushed["d"]["last_move"] == move
    await comm.disconnect()


async def test_a_socket_refused_at_connect_hears_none_of_the_games_moves(
    user, other_user, settings
):  # noqa: ANN001
    """A game socket joins its group before it loads (so no move falls between the two); one
    refused there, here a watcher of a ranked attempt still running on a server that hides
    those (WATCH_AFTER_OWN_ATTEMPT), must not hear a frame. Once its own attempt has ended, a
    `sync` opens the game to it."""
    settings.WATCH_AFTER_OWN_ATTEMPT = True
    from games import clock
    from tests.conftest import client_for

    api = client_for(user)
    date = clock.today().isoformat()
    game = (await database_sync_to_async(api.post)(f"/api/daily/{date}/portuguese/play")).json()
    refused = await connect(f"/ws/games/{game['id']}", other_user)
    assert (await recv(refused))["d"]["code"] == "forbidden"
    move = game["state"]["legal_moves"][0]
    played = await database_sync_to_async(api.post)(
        f"/api/games/{game['id']}/moves", {"move": move, "v": 0}, format="json"
    )
    assert played.status_code == 200
    assert await refused.receive_nothing(timeout=0.5)
    await send(refused, "sync")
    assert (await recv(refused))["d"]["reason"] == "forbidden"

    own = client_for(other_user)
    mine = (await database_sync_to_async(own.post)(f"/api/daily/{date}/portuguese/play")).json()
    resigned = await database_sync_to_async(own.post)(f"/api/games/{mine['id']}/resign")
    assert resigned.status_code == 200
    await send(refused, "sync")
    state = await recv(refused)
    assert (state["t"], state["v"], state["d"]["last_move"]) == ("state", 1, move)
    move = state["d"]["legal_moves"][0]  # and it hears the moves from now on
    played = await database_sync_to_async(api.post)(
        f"/api/games/{game['id']}/moves", {"move": move, "v": 1}, format="json"
    )
    assert played.status_code == 200
    assert (await recv(refused))["v"] == 2
    await refused.disconnect()


async def test_a_state_of_a_resigned_version_still_playing_is_not_shown_after_the_end(
    user,
    other_user,  # noqa: ANN001
):
    """A resign ends a game at the version it stands at. A move committed just before it, on
    another socket of its owner, fans out when its batch is done, which can be after the
    resign's frames went out: every socket that has the ending drops that older state."""
    from games.broadcast import WireFrame, send_to_game

    game = await practice(user)
    owner = await connect(f"/ws/games/{game.pk}", user)
    watcher = await connect(f"/ws/games/{game.pk}", other_user)
    first = await recv(owner)
    await recv(watcher)
    await send(owner, "move", {"move": first["d"]["legal_moves"][0], "v": 0, "id": 1})
    await recv_until(owner, "state")
    played = await recv_until(watcher, "state")
    await send(owner, "resign", {"id": 2})
    for sock in (owner, watcher):
        ended = await recv_until(sock, "state")
        assert (ended["v"], ended["d"]["status"]) == (1, "resigned")
        assert (await recv(sock))["t"] == "result"

    late = WireFrame("state", 1, json.dumps(played))  # the move's, late
    await send_to_game(game.pk, late)
    assert await owner.receive_nothing(0.3) and await watcher.receive_nothing(0.3)
    await owner.disconnect()
    await watcher.disconnect()


async def test_a_state_the_socket_already_has_is_not_sent_again(user, other_user):  # noqa: ANN001
    """A move committed while a socket loads its first state (or a `sync`'s) is in that state
    and fans out to the socket as well: that copy was sent again, once even after the answer
    to a later `sync` (an outside soak saw it 11 times in 20 minutes). It is dropped now; the
    next state still comes."""
    from games.broadcast import send_to_game

    game = await practice(user)
    owner = await connect(f"/ws/games/{game.pk}", user)
    first = await recv(owner)
    await send(owner, "move", {"move": first["d"]["legal_moves"][0], "v": 0, "id": 1})
    await recv_until(owner, "state")
    watcher = await connect(f"/ws/games/{game.pk}", other_user)
    assert (await recv(watcher))["v"] == 1
    await send(watcher, "sync")
    assert (await recv(watcher))["v"] == 1
    await send_to_game(game.pk, _state(1))  # the move's own fan-out, come late
    assert await watcher.receive_nothing(0.3)
    await send_to_game(game.pk, _state(2))
    assert (await recv(watcher))["v"] == 2
    await owner.disconnect()
    await watcher.disconnect()


async def test_a_fan_out_that_fails_after_a_move_leaves_the_move_and_the_socket(
    user,  # noqa: ANN001
    other_user,  # noqa: ANN001
    monkeypatch,  # noqa: ANN001
):
    """Once a move has committed, its frames for the game's other sockets go through the
    channel layer; if that fails (Redis unreachable for a moment), the mover still gets its
    `ack` and `state`, and its socket stays open. The error used to kill the consumer."""
    from channels.layers import get_channel_layer

    game = await practice(user)
    comm = await connect(f"/ws/games/{game.pk}", user)
    first = await recv(comm)
    watcher = await connect(f"/ws/games/{game.pk}", other_user)
    assert (await recv(watcher))["v"] == 0

    monkeypatch.setattr(get_channel_layer(), "group_send", layer_down)
    await send(comm, "move", {"move": first["d"]["legal_moves"][0], "v": 0, "id": "m-1"})
    assert [(f["t"], f.get("v")) for f in [await recv(comm), await recv(comm)]] == [
        ("ack", None),
        ("state", 1),
    ]
    await send(comm, "ping")
    assert (await recv(comm))["t"] == "pong"
    assert (await database_sync_to_async(Game.objects.get)(pk=game.pk)).version == 1
    await comm.disconnect()
    await watcher.disconnect()


def _state(v: int, ended: bool = False):  # noqa: ANN202
    """A state frame of version `v` as the group carries it (its text is all a socket sends)."""
    from games.broadcast import ENDED, PLAYING, WireFrame

    text = json.dumps({"t": "state", "v": v, "d": {"status": "won" if ended else "playing"}})
    return WireFrame("state", v, text, stage=ENDED if ended else PLAYING)


async def test_states_that_reach_a_watcher_out_of_order_are_sent_in_order(user, other_user):  # noqa: ANN001
    """Two writers' states can reach a socket in the other order: moves made on two server
    processes (one fans out through Redis, the other straight to this process's sockets), two
    batches committing back to back. PROTOCOL.md sends a state after every change; the later
    one waits for the one still on its way instead of dropping it as older when it comes."""
    from games.broadcast import WireFrame, send_to_game

    game = await practice(user)
    watcher = await connect(f"/ws/games/{game.pk}", other_user)
    assert (await recv(watcher))["v"] == 0
    await send_to_game(game.pk, _state(2))
    await send_to_game(game.pk, _state(1))
    assert [(await recv(watcher))["v"] for _ in range(2)] == [1, 2]
    # A game's last state and its result wait together behind the state before them.
    await send_to_game(game.pk, _state(4, ended=True))
    await send_to_game(game.pk, WireFrame("result", None, json.dumps({"t": "result", "d": {}})))
    await send_to_game(game.pk, _state(3))
    assert [(f["t"], f.get("v")) for f in [await recv(watcher) for _ in range(3)]] == [
        ("state", 3),
        ("state", 4),
        ("result", None),
    ]
    await watcher.disconnect()


async def test_a_state_whose_predecessor_never_comes_is_sent_after_a_short_wait(user, other_user):  # noqa: ANN001
    """A state lost on the way (the channel layer dropped it) must not hold back the ones after
    it: the next is sent once `gap_wait` has passed, whole position and all."""
    from games.broadcast import send_to_game
    from games.consumers import GameConsumer

    game = await practice(user)
    watcher = await connect(f"/ws/games/{game.pk}", other_user)
    assert (await recv(watcher))["v"] == 0
    await send_to_game(game.pk, _state(2))
    assert await watcher.receive_nothing(GameConsumer.gap_wait / 2)
    assert (await recv(watcher))["v"] == 2
    await send_to_game(game.pk, _state(3))
    assert (await recv(watcher, timeout=GameConsumer.gap_wait / 2))["v"] == 3
    await send_to_game(game.pk, _state(1))  # the lost one, too late: older than what it has
    assert await watcher.receive_nothing(GameConsumer.gap_wait * 2)
    await watcher.disconnect()


def _database_lines(caplog, text: str) -> int:  # noqa: ANN001
    """How many records say `text`; each must be one line with no traceback."""
    records = [r for r in caplog.records if text in r.getMessage()]
    assert all(r.exc_info is None and "\n" not in r.getMessage() for r in records), records
    return len(records)


def database_gone(*args) -> None:  # noqa: ANN002
    """A database call, made while the database is gone for a moment."""
    raise OperationalError("server closed the connection unexpectedly")


async def test_a_write_the_database_fails_is_an_error_frame_and_the_socket_stays(
    user,  # noqa: ANN001
    monkeypatch,  # noqa: ANN001
    caplog,  # noqa: ANN001
) -> None:
    """A move, undo or resign whose write failed even when played again on its own (the
    database gone for a moment) ended the consumer, and its socket closed with 1011; PROTOCOL.md
    closes a socket only for its sign-in or for abuse. It now hears an error that says to sync,
    and the socket plays on once the database is back."""
    from games import socket_calls
    from games.move_batcher import MoveBatcher

    async def gone_async(*args) -> None:  # noqa: ANN002
        database_gone()

    game = await practice(user)
    comm = await connect(f"/ws/games/{game.pk}", user)
    move = (await recv(comm))["d"]["legal_moves"][0]
    monkeypatch.setattr(MoveBatcher, "submit", gone_async)
    monkeypatch.setattr(socket_calls, "resign", database_gone)
    for action, d in (
        ("move", {"move": move, "v": 0, "id": "m-1"}),
        ("undo", {"v": 0, "id": "u-1"}),
        ("resign", {"id": "r-1"}),
    ):
        await send(comm, action, d)
        error = (await recv(comm))["d"]
        assert (error["id"], error["code"], error["reason"], error["v"]) == (
            d["id"],
            "forbidden",
            "unavailable",
            0,
        )
        assert f"could not save your {action}" in error["detail"] and "sync" in error["detail"]
    # A line a minute, not a traceback a message: an outage of 20 s logged a thousand of them.
    assert _database_lines(caplog, "Socket writes") == 1
    monkeypatch.undo()
    await send(comm, "move", {"move": move, "v": 0, "id": "m-2"})
    assert await recv(comm) == {"t": "ack", "d": {"id": "m-2"}}
    assert (await recv(comm))["v"] == 1
    await comm.disconnect()


async def test_a_sync_the_database_cannot_answer_is_an_error_frame_and_the_socket_stays(
    user,  # noqa: ANN001
    monkeypatch,  # noqa: ANN001
    caplog,  # noqa: ANN001
) -> None:
    """The read at connect and at a sync caught only refusals: a database gone for a moment
    ended the consumer (the socket closed with 1011), and a refused sync was answered with
    nothing at all, its client waiting for good. Both now hear why; a later sync answers."""
    from games import selectors

    game = await practice(user)
    viewable_game = selectors.viewable_game

    monkeypatch.setattr(selectors, "viewable_game", database_gone)
    comm = await connect(f"/ws/games/{game.pk}", user)
    refused = await recv(comm)  # at connect
    assert (refused["t"], refused["d"]["code"], refused["d"]["reason"]) == (
        "error",
        "forbidden",
        "unavailable",
    ), refused
    monkeypatch.setattr(selectors, "viewable_game", viewable_game)
    await send(comm, "sync", {"id": "s-1"})
    state = await recv_until(comm, "state")
    assert state["v"] == 0

    monkeypatch.setattr(selectors, "viewable_game", database_gone)
    await send(comm, "sync", {"id": "s-2"})  # at a sync, once connected
    error = await recv(comm)
    assert (error["d"]["id"], error["d"]["reason"], error["d"]["v"]) == ("s-2", "unavailable", 0)
    assert "cannot be loaded just now" in error["d"]["detail"]
    assert _database_lines(caplog, "reads of their games") == 1
    monkeypatch.setattr(selectors, "viewable_game", viewable_game)
    move = state["d"]["legal_moves"][0]
    await send(comm, "move", {"move": move, "v": 0, "id": "m-1"})  # it still plays
    assert (await recv(comm))["t"] == "ack"
    assert (await recv(comm))["v"] == 1
    await comm.disconnect()


async def watched_game(owner, watcher_user):  # noqa: ANN001, ANN201
    """A practice game, its owner's socket (and the state it opened with) and a watcher's."""
    game = await practice(owner)
    comm = await connect(f"/ws/games/{game.pk}", owner)
    state = await recv(comm)
    watcher = await connect(f"/ws/games/{game.pk}", watcher_user)
    await recv(watcher)
    return game, comm, state, watcher


async def test_a_fan_out_that_hangs_holds_the_movers_socket_a_second_at_most_then_rests(
    user,  # noqa: ANN001
    other_user,  # noqa: ANN001
    monkeypatch,  # noqa: ANN001
    caplog,  # noqa: ANN001
):
    """A socket handles its next frame once its last move's fan-out is done. A Redis that hung
    held each of them for REDIS_SOCKET_TIMEOUT (15 s): a move every 15 s. Now a group send
    gives up after SEND_SECONDS, and the fan-outs after it are skipped for BREAK_SECONDS,
    logged in a line each way."""
    import asyncio
    import time

    from channels.layers import get_channel_layer

    from games import broadcast

    game, comm, state, watcher = await watched_game(user, other_user)
    sends = []
    layer = get_channel_layer()
    real_send = layer.group_send

    async def hang(*args: object) -> None:
        sends.append(args)
        await asyncio.Event().wait()

    monkeypatch.setattr(broadcast, "SEND_SECONDS", 0.2)
    monkeypatch.setattr(layer, "group_send", hang)
    for v in range(3):
        await send(comm, "move", {"move": state["d"]["legal_moves"][0], "v": v, "id": v})
        assert (await recv(comm))["t"] == "ack"  # each within WAIT: no 15 s, no for ever
        state = await recv(comm)
    await send(comm, "ping")
    assert (await recv(comm))["t"] == "pong"
    assert len(sends) == 1  # the first gave up; the two after it were skipped
    monkeypatch.setattr(layer, "group_send", real_send)
    monkeypatch.setattr(broadcast, "_broken_until", time.monotonic() - 1)  # the rest is over
    await send(comm, "move", {"move": state["d"]["legal_moves"][0], "v": 3, "id": 3})
    await recv(comm)
    await recv(comm)
    assert (await recv_until(watcher, "state"))["v"] == 4  # it hears again
    lines = [r.getMessage() for r in caplog.records if r.name == "games.broadcast"]
    assert len(lines) == 2 and "TimeoutError" in lines[0] and "2 were skipped" in lines[1]


async def test_a_layer_that_refuses_costs_no_rest_and_logs_a_line_a_minute(
    user,  # noqa: ANN001
    other_user,  # noqa: ANN001
    monkeypatch,  # noqa: ANN001
    caplog,  # noqa: ANN001
):
    """A Redis that refuses fails at once: each fan-out is tried (a restarted Redis is heard
    at the next move, not after a rest), and the outage logs one line, not one a move."""
    from channels.layers import get_channel_layer

    game, comm, state, watcher = await watched_game(user, other_user)
    layer = get_channel_layer()
    real_send = layer.group_send
    monkeypatch.setattr(layer, "group_send", layer_down)
    for v in range(3):
        await send(comm, "move", {"move": state["d"]["legal_moves"][0], "v": v, "id": v})
        assert (await recv(comm))["t"] == "ack"
        state = await recv(comm)
    monkeypatch.setattr(layer, "group_send", real_send)
    await send(comm, "move", {"move": state["d"]["legal_moves"][0], "v": 3, "id": 3})
    await recv(comm)
    await recv(comm)
    assert (await recv_until(watcher, "state"))["v"] == 4  # the next move after it is heard
    lines = [r for r in caplog.records if r.name == "games.broadcast"]
    assert len(lines) == 1 and lines[0].exc_info is None
    assert "Connection refused" in lines[0].getMessage()


async def test_the_sockets_hear_the_game_as_it_stands_once_the_layer_is_back(
    user,  # noqa: ANN001
    other_user,  # noqa: ANN001
):
    """A channel layer away for a while (Redis restarted) lost the states fanned out meanwhile:
    the layer tells each socket it is back (server.channel_layer.RedisLayer._rejoin), and a
    socket behind is sent the game as it stands; one that is not hears nothing."""
    from asgiref.sync import sync_to_async
    from channels.layers import get_channel_layer

    from games.broadcast import game_group

    game, comm, state, watcher = await watched_game(user, other_user)
    layer = get_channel_layer()
    # A move no socket heard of (as if its fan-out was lost with Redis).
    await sync_to_async(services.play_move)(game.pk, user, state["d"]["legal_moves"][0], 0)
    # The layer tells each of its sockets; the game's group reaches these two.
    back = {"type": "layer.reconnected"}
    await layer.group_send(game_group(game.pk), back)
    assert (await recv(watcher))["v"] == 1
    assert (await recv(comm))["v"] == 1
    await layer.group_send(game_group(game.pk), back)
    assert await watcher.receive_nothing(0.3) and await comm.receive_nothing(0.1)
