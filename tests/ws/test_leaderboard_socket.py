"""The issue's "done when": today's daily won through the API with the stored winning line
(read from the database, never the API); the player is first; a board socket hears it."""

from __future__ import annotations

import pytest
from channels.db import database_sync_to_async

from games import clock, daily
from games.models import DailyChallenge
from tests.conftest import client_for, play_line
from tests.ws.helpers import WAIT, connect, recv, send

pytestmark = pytest.mark.django_db(transaction=True)


async def test_daily_win_tops_the_board_and_the_socket_hears_it(user, other_user):  # noqa: ANN001
    date = clock.today().isoformat()
    api = client_for(user)

    game = (await database_sync_to_async(api.post)(f"/api/daily/{date}/portuguese/play")).json()
    watcher = await connect(f"/ws/leaderboards/{date}/portuguese", other_user)
    first = await recv(watcher)
    assert first["t"] == "leaderboard" and first["d"]["entries"] == []

    line = await database_sync_to_async(
        lambda: DailyChallenge.objects.get(date=clock.today(), variant="portuguese").line
    )()

    final = await database_sync_to_async(play_line)(api, game["id"], line)
    assert final["status"] == "won"

    pushed = await recv(watcher, timeout=5)
    assert pushed["t"] == "leaderboard"
    top = pushed["d"]["entries"][0]
    assert (top["rank"], top["username"], top["status"]) == (1, "alice", "won")
    assert pushed["d"]["total"] == 1

    board = (
        await database_sync_to_async(api.get)(f"/api/daily/{date}/portuguese/leaderboard")
    ).json()
    assert board["entries"][0]["username"] == "alice" and board["me"]["rank"] == 1

    await send(watcher, "sync")
    assert (await recv(watcher))["d"]["entries"][0]["username"] == "alice"
    await watcher.disconnect()


async def test_ws_result_frame_carries_the_rank(user):  # noqa: ANN001
    """A bot plays the whole certified line as fast as the server answers, on the default
    rate limit: it waits for each answer, so none of its frames is charged."""
    challenge = await database_sync_to_async(daily.ensure_daily)(clock.today(), "portuguese")
    game, _ = await database_sync_to_async(daily.play_daily)(user, challenge)
    comm = await connect(f"/ws/games/{game.pk}", user)
    await recv(comm)
    v = 0
    for move in challenge.line:
        await send(comm, "move", {"move": move, "v": v, "id": v})
        assert (await recv(comm))["t"] == "ack"
        state = await recv(comm)
        v = state["v"]
    result = await recv(comm)
    assert result["t"] == "result"
    assert result["d"]["status"] == "won" and result["d"]["rank"] == 1
    assert result["d"]["moves"] == len(challenge.line)
    await comm.disconnect()


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("/ws/leaderboards/not-a-date/portuguese", "bad_date"),
        # A day is YYYY-MM-DD (the schema's `date`), not an ISO week date, junk after it or not.
        ("/ws/leaderboards/2026W487xx/portuguese", "bad_date"),
        ("/ws/leaderboards/2026-W48-7/portuguese", "bad_date"),
        ("/ws/leaderboards/2026-11-22/klondike", "unknown_variant"),
        # Not a name a group may have: refused before any group is named by it.
        ("/ws/leaderboards/2026-01-01!/portuguese", "bad_date"),
        ("/ws/leaderboards/2026-01-01%20x/portuguese", "bad_date"),
        (f"/ws/leaderboards/{'9' * 120}/portuguese", "bad_date"),
        ("/ws/leaderboards/2026-11-22/" + "x" * 120, "unknown_variant"),
    ],
)
async def test_board_socket_for_a_bad_date_or_variant_is_refused(user, path, reason):  # noqa: ANN001
    comm = await connect(path, user)
    err = await recv(comm)
    assert err["t"] == "error"
    assert (err["d"]["code"], err["d"]["reason"]) == ("bad_message", reason)  # websocket.md
    await send(comm, "sync")  # asks again, and hears the same; the socket stays open
    assert (await recv(comm))["d"]["reason"] == reason
    assert await comm.receive_nothing(timeout=0.3)


async def test_a_board_delivered_after_a_newer_one_is_not_shown(user):  # noqa: ANN001
    """Two writers read their boards in one order and deliver them in the other: the socket
    keeps the newer (a board only gains entries), and a board no older is shown."""
    from channels.layers import get_channel_layer

    from games import leaderboards

    date = clock.today().isoformat()
    await database_sync_to_async(daily.ensure_daily)(clock.today(), "portuguese")
    watcher = await connect(f"/ws/leaderboards/{date}/portuguese", user)
    assert (await recv(watcher))["d"]["total"] == 0
    group = leaderboards.board_group(date, "portuguese")

    def board(total: int) -> dict:
        frame = {"date": date, "variant": "portuguese", "total": total, "entries": [total]}
        return {"type": "board.frame", "frame": {"t": "leaderboard", "d": frame}}

    layer = get_channel_layer()
    for total in (2, 1, 2, 3):
        await layer.group_send(group, board(total))
    assert [(await recv(watcher))["d"]["total"] for _ in range(3)] == [2, 2, 3]
    assert await watcher.receive_nothing(timeout=0.2)
    await watcher.disconnect()


async def test_a_board_pushed_while_a_refused_socket_loaded_is_not_shown(user, monkeypatch):  # noqa: ANN001
    """The socket joins the board's group before it loads, so a board pushed during the load
    waits for it; a socket the load refuses (here: a past day with no challenge) drops it."""
    import datetime as dt

    from asgiref.sync import async_to_sync
    from channels.layers import get_channel_layer

    from games import leaderboards, socket_calls

    date = (clock.today() - dt.timedelta(days=3)).isoformat()
    load = socket_calls.load_board
    layer = get_channel_layer()

    def pushed_meanwhile(day: str, variant: str):  # noqa: ANN202
        frame = {"date": day, "variant": variant, "total": 1, "entries": []}
        async_to_sync(layer.group_send)(
            leaderboards.board_group(day, variant),
            {"type": "board.frame", "frame": {"t": "leaderboard", "d": frame}},
        )
        return load(day, variant)

    monkeypatch.setattr(socket_calls, "load_board", pushed_meanwhile)
    comm = await connect(f"/ws/leaderboards/{date}/portuguese", user)
    err = await recv(comm)
    assert (err["t"], err["d"]["reason"]) == ("error", "not_found")
    assert await comm.receive_nothing(timeout=0.3)
    await comm.disconnect()


@pytest.mark.usefixtures("close_sockets_left_open")
async def test_a_board_socket_certifying_today_holds_up_no_game_socket(user, monkeypatch, settings):  # noqa: ANN001
    """The first board socket of a day may certify its challenge (5-30 s). It did so on the
    game sockets' threads (on SQLite the one every socket's sign-in and reads share): a game
    socket opened meanwhile waited for the certification. The boards have threads of their
    own; as many board sockets as the game sockets have threads still hold none of them."""
    import asyncio
    import threading

    from games import services

    game = await database_sync_to_async(services.start_practice)(user, "portuguese", 1)
    started, release = threading.Event(), threading.Event()
    real = daily.certify

    def slow_certify(date, variant, budget=None):  # noqa: ANN001, ANN202
        started.set()
        release.wait(15)
        return real(date, variant, budget)

    monkeypatch.setattr(daily, "certify", slow_certify)
    today = clock.today().isoformat()
    boards = [
        asyncio.create_task(connect(f"/ws/leaderboards/{today}/portuguese"))
        for _ in range(settings.GAME_DB_THREADS)
    ]
    try:
        for _ in range(int(WAIT * 100)):  # a board socket that never certifies fails, not hangs
            if started.is_set():
                break
            await asyncio.sleep(0.01)
        assert started.is_set(), "no board socket began to certify today's challenge"
        game_socket = await asyncio.wait_for(connect(f"/ws/games/{game.pk}", user), timeout=3)
        assert (await recv(game_socket))["t"] == "state"
    finally:
        release.set()
        sockets = await asyncio.gather(*boards)
    assert all([(await recv(board))["t"] == "leaderboard" for board in sockets])


@pytest.mark.usefixtures("close_sockets_left_open")
async def test_a_certification_that_fails_is_an_error_frame_and_a_sync_asks_again(monkeypatch):  # noqa: ANN001
    """Today's challenge made on a board socket's load, and its certification fails (its
    process died twice): the socket hears why and stays open, as after any error; the
    consumer used to die of it. A `sync` once certification may be tried again (the failure's
    wait is over: the undone patch) brings the board."""
    from tests.ws.helpers import recv_until

    def process_died(date, variant, budget=None):  # noqa: ANN001, ANN202
        raise RuntimeError("A process in the process pool was terminated abruptly")

    monkeypatch.setattr(daily, "certify", process_died)
    monkeypatch.setattr(daily, "_failed_until", {})
    sock = await connect(f"/ws/leaderboards/{clock.today().isoformat()}/portuguese")
    error = await recv(sock)
    assert (error["t"], error["d"]["code"], error["d"]["reason"]) == (
        "error",
        "forbidden",
        "unavailable",
    ), error
    await send(sock, "ping")
    assert (await recv(sock))["t"] == "pong"
    monkeypatch.undo()
    await send(sock, "sync")
    assert (await recv_until(sock, "leaderboard"))["d"]["entries"] == []


async def test_a_board_that_lost_attempts_is_pushed_and_followed(user, other_user, make_user):  # noqa: ANN001
    """A player deleted in the admin takes their attempts off the board: the board socket is
    pushed the smaller board (it dropped smaller boards as old ones, and showed the deleted
    player until a sync), and the board's later pushes are shown from there."""
    challenge = await database_sync_to_async(daily.ensure_daily)(clock.today(), "portuguese")
    date = clock.today().isoformat()

    async def resign_attempt(player) -> None:  # noqa: ANN001
        game, _ = await database_sync_to_async(daily.play_daily)(player, challenge)
        await database_sync_to_async(client_for(player).post)(f"/api/games/{game.pk}/resign")

    watcher = await connect(f"/ws/leaderboards/{date}/portuguese")
    assert (await recv(watcher))["d"]["total"] == 0
    for player in (user, other_user):
        await resign_attempt(player)
        await recv(watcher, timeout=5)
    await database_sync_to_async(user.delete)()
    shrunk = await recv(watcher, timeout=5)
    assert shrunk["d"]["total"] == 1
    assert [e["username"] for e in shrunk["d"]["entries"]] == [other_user.username]
    await database_sync_to_async(other_user.delete)()
    assert (await recv(watcher, timeout=5))["d"]["total"] == 0
    await resign_attempt(await database_sync_to_async(make_user)())
    assert (await recv(watcher, timeout=5))["d"]["total"] == 1
    await watcher.disconnect()


async def test_a_board_sync_that_fails_is_an_error_frame() -> None:
    """A sync that could not be answered was answered with nothing: its client waited for
    good. It hears why, and its socket stays."""
    from unittest import mock

    date = clock.today().isoformat()
    await database_sync_to_async(daily.ensure_daily)(clock.today(), "portuguese")
    sock = await connect(f"/ws/leaderboards/{date}/portuguese")
    assert (await recv(sock))["t"] == "leaderboard"
    with mock.patch.object(daily, "challenge_for", side_effect=RuntimeError("database gone")):
        await send(sock, "sync", {"id": "s-1"})
        error = await recv(sock)
    assert (error["t"], error["d"]["id"], error["d"]["reason"]) == ("error", "s-1", "unavailable")
    await send(sock, "sync")
    assert (await recv(sock))["t"] == "leaderboard"
    await sock.disconnect()


async def test_a_board_socket_hears_the_board_as_it_stands_once_the_layer_is_back(
    user,  # noqa: ANN001
    monkeypatch,  # noqa: ANN001
):
    """A win pushed while Redis was away never reached the board's sockets; when the layer
    is back (`layer.reconnected`), each reads the board again and shows it."""
    from channels.layers import get_channel_layer

    from games.leaderboards import board_group
    from tests.conftest import layer_down

    date = clock.today().isoformat()
    api = client_for(user)
    game = (await database_sync_to_async(api.post)(f"/api/daily/{date}/portuguese/play")).json()
    board = await connect(f"/ws/leaderboards/{date}/portuguese")
    assert (await recv(board))["d"]["total"] == 0
    line = await database_sync_to_async(
        lambda: DailyChallenge.objects.get(date=clock.today(), variant="portuguese").line
    )()
    layer = get_channel_layer()
    group_send = layer.group_send
    monkeypatch.setattr(layer, "group_send", layer_down)
    await database_sync_to_async(play_line)(api, game["id"], line)  # its pushes are lost
    assert await board.receive_nothing(0.3)
    monkeypatch.setattr(layer, "group_send", group_send)
    # The layer tells each of its sockets; the board's group reaches this one.
    await layer.group_send(board_group(date, "portuguese"), {"type": "layer.reconnected"})
    pushed = await recv(board)
    assert pushed["d"]["total"] == 1 and pushed["d"]["entries"][0]["username"] == "alice"
    await board.disconnect()
