"""No payload ever contains a face-down card: whole games of Countess and Barricade A are
walked through REST and the socket, and every payload's cards are checked against what is
face up in the full (server-side) position."""

from __future__ import annotations

import json
import random
import re
from collections import Counter

import pytest
from channels.db import database_sync_to_async
from django.core.management import call_command

from games.models import Game
from tests.conftest import client_for
from tests.ws.helpers import connect, recv, recv_until, send

CARD = re.compile(r"^[A2-9TJQK][CDHS]$")


def cards_in(payload) -> Counter:  # noqa: ANN001
    found: Counter = Counter()

    def walk(node) -> None:  # noqa: ANN001
        if isinstance(node, dict):
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)
        elif isinstance(node, str) and CARD.match(node):
            found[node] += 1

    walk(payload)
    return found


def face_up(full: dict) -> Counter:
    """Every card of the full position that a player may see."""
    seen: Counter = Counter()
    for pile in full["tableau"] + full["foundations"] + [full["waste"]]:
        seen.update(pile)
    seen.update(c for c in full["cells"] if c)
    if full["variant"] == "barricade" and full["stock"]:
        seen[full["stock"][-1]] += 1  # B1: the top of the stock is face up
    return seen


def assert_no_hidden(payload, game_id: int) -> None:  # noqa: ANN001
    full = Game.objects.get(pk=game_id).state
    shown = cards_in(payload)
    visible = face_up(full)
    assert not (shown - visible), f"face-down cards sent: {shown - visible}"


@pytest.mark.django_db
@pytest.mark.parametrize("variant", ["countess", "barricade"])
@pytest.mark.parametrize("deal", [1, 2, 3])
def test_whole_games_never_show_a_face_down_card(variant, deal, user, other_user):  # noqa: ANN001
    api, watcher = client_for(user), client_for(other_user)
    rng = random.Random(deal)
    game = api.post("/api/games", {"variant": variant, "deal": deal}, format="json").json()
    gid = game["id"]
    assert_no_hidden(game, gid)
    steps = 0
    while game["status"] == "playing" and steps < 400:
        moves = game["state"]["legal_moves"]
        if steps % 17 == 5 and steps:
            res = api.post(f"/api/games/{gid}/undo", {"v": game["v"]}, format="json")
        else:
            move = rng.choice(moves)
            res = api.post(f"/api/games/{gid}/moves", {"move": move, "v": game["v"]}, format="json")
        assert res.status_code == 200, res.json()
        game = res.json()
        assert_no_hidden(game, gid)
        assert_no_hidden(watcher.get(f"/api/games/{gid}").json(), gid)
        steps += 1
    assert game["status"] != "playing" or steps == 400
    assert_no_hidden(api.get(f"/api/games/{gid}/moves").json(), gid)
    call_command("replay_verify")


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("close_sockets_left_open")
@pytest.mark.parametrize("variant", ["countess", "barricade"])
async def test_socket_frames_never_show_a_face_down_card(variant, user, other_user):  # noqa: ANN001
    from games import services

    game = await database_sync_to_async(services.start_practice)(user, variant, 7)
    owner = await connect(f"/ws/games/{game.pk}", user)
    watcher = await connect(f"/ws/games/{game.pk}", other_user)
    state = await recv(owner)
    await recv(watcher)
    rng = random.Random(7)
    for _ in range(60):
        if state["d"]["status"] != "playing":
            break
        move = rng.choice(state["d"]["legal_moves"])
        await send(owner, "move", {"move": move, "v": state["v"], "id": "m"})
        await recv(owner)  # ack
        state = await recv(owner)
        watched = await recv_until(watcher, "state")
        for frame in (state, watched):
            await database_sync_to_async(assert_no_hidden)(frame, game.pk)
        assert json.dumps(watched) == json.dumps(state)
    await owner.disconnect()
    await watcher.disconnect()


@pytest.mark.django_db
def test_replay_verify_reports_a_corrupted_game(user):  # noqa: ANN001
    from django.core.management.base import CommandError

    api = client_for(user)
    game = api.post("/api/games", {"variant": "spanish", "deal": 5}, format="json").json()
    for _ in range(3):
        move = game["state"]["legal_moves"][0]
        game = api.post(
            f"/api/games/{game['id']}/moves", {"move": move, "v": game["v"]}, format="json"
        ).json()
    call_command("replay_verify")
    row = Game.objects.get(pk=game["id"])
    row.state = Game.objects.get(pk=game["id"]).state | {"tableau": row.state["tableau"][::-1]}
    row.save()
    with pytest.raises(CommandError, match="1 problem"):
        call_command("replay_verify")
