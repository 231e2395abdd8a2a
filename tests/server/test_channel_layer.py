"""The embedded channel layer keeps the in-memory layer's behaviour at a lower cost."""

from __future__ import annotations

import logging
import time

import pytest

from games.broadcast import may_reach_others
from server.channel_layer import InProcessChannelLayer


async def test_group_send_reaches_every_member_and_skips_a_full_one():
    layer = InProcessChannelLayer(capacity=1)
    a, b, full = [await layer.new_channel() for _ in range(3)]
    for channel in (a, b, full):
        await layer.group_add("g", channel)
    await layer.send(full, {"type": "filler"})
    await layer.group_send("g", {"type": "hello", "n": 1})
    assert (await layer.receive(a))["n"] == 1
    assert (await layer.receive(b))["n"] == 1
    assert (await layer.receive(full))["type"] == "filler"


async def test_a_received_message_is_a_copy():
    layer = InProcessChannelLayer()
    channel = await layer.new_channel()
    await layer.group_add("g", channel)
    message = {"type": "x", "items": [1]}
    await layer.group_send("g", message)
    message["items"].append(2)
    assert (await layer.receive(channel))["items"] == [1]


async def test_expired_messages_are_still_swept(monkeypatch):  # noqa: ANN001
    layer = InProcessChannelLayer(expiry=60)
    stale, live = await layer.new_channel(), await layer.new_channel()
    await layer.group_add("g", stale)
    await layer.group_add("g", live)
    await layer.send(stale, {"type": "old"})
    later = time.time() + 120
    monkeypatch.setattr(time, "time", lambda: later)
    layer._cleaned_at = float("-inf")  # the sweep is due
    await layer.group_send("g", {"type": "new"})
    assert stale not in layer.groups["g"]  # an expired message drops its channel from groups
    assert (await layer.receive(live))["type"] == "new"


async def test_the_excluded_channel_is_left_out():
    layer = InProcessChannelLayer()
    mover, watcher = await layer.new_channel(), await layer.new_channel()
    for channel in (mover, watcher):
        await layer.group_add("g", channel)
    await layer.group_send("g", {"type": "state", "exclude": mover})
    assert (await layer.receive(watcher))["type"] == "state"
    assert mover not in layer.channels  # nothing was queued for it


async def test_a_group_send_with_no_one_but_the_mover_delivers_nothing():
    layer = InProcessChannelLayer()
    mover = await layer.new_channel()
    await layer.group_add("game.1", mover)
    await layer.group_send("game.1", {"type": "game.frame", "exclude": mover})
    await layer.group_send("game.2", {"type": "game.frame", "exclude": mover})  # no group at all
    assert all(queue.empty() for queue in layer.channels.values())
    watcher = await layer.new_channel()
    await layer.group_add("game.1", watcher)
    await layer.group_send("game.1", {"type": "game.frame", "exclude": mover})
    assert (await layer.receive(watcher))["type"] == "game.frame"


async def test_a_group_send_to_an_invalid_name_is_refused_even_with_no_one_in_it():
    layer = InProcessChannelLayer()
    with pytest.raises(TypeError):
        await layer.group_send("not a valid name!", {"type": "game.frame"})


async def test_reaches_others_tells_whether_anyone_but_the_excluded_channel_would_hear():
    layer = InProcessChannelLayer()
    mover, watcher = await layer.new_channel(), await layer.new_channel()
    assert not layer.reaches_others("game.1", mover)  # no group at all
    await layer.group_add("game.1", mover)
    assert not layer.reaches_others("game.1", mover)
    assert layer.reaches_others("game.1", watcher)  # the mover hears what a watcher sends
    await layer.group_add("game.1", watcher)
    assert layer.reaches_others("game.1", mover)
    await layer.group_discard("game.1", watcher)
    assert not layer.reaches_others("game.1", mover)


def test_a_layer_that_cannot_tell_at_once_is_always_sent_to():
    class RemoteLayer:  # a layer without reaches_others, as channels_redis' (RedisLayer)
        pass

    assert may_reach_others(RemoteLayer(), 1, "mover")
    assert not may_reach_others(InProcessChannelLayer(), 1, "mover")


def test_a_groups_over_capacity_lines_are_logged_once_a_minute(caplog):  # noqa: ANN001
    """A killed process leaves its channels in their games' groups for a day, and every move
    on those games logged a line: at most one a minute now, saying how many it stands for."""
    from server.channel_layer import RedisLayer

    layer = RedisLayer(hosts=["redis://127.0.0.1:6379/0"])  # never connects here
    with caplog.at_level(logging.INFO, logger="server.channel_layer"):
        for second in range(100):
            layer._log_over_capacity("game.7", 1, 2, 1000.0 + second / 10)
        layer._log_over_capacity("game.8", 1, 1, 1009.0)  # another group has its own minute
        layer._log_over_capacity("game.7", 1, 2, 1061.0)
    lines = [r.getMessage() for r in caplog.records if "over capacity" in r.getMessage()]
    assert lines == [
        "1 of 2 channels over capacity in group game.7",
        "1 of 1 channels over capacity in group game.8",
        "1 of 2 channels over capacity in group game.7 (and in 99 sends before it, not logged)",
    ]
