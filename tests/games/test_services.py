"""The real services: these run whenever their URL is set, and fail loudly if unreachable.

Without the URL they are skipped (the embedded default has no such service to test).
"""

from __future__ import annotations

import asyncio
import os
import time
import uuid

import pytest
from asgiref.sync import async_to_sync
from channels_redis.core import RedisChannelLayer
from django.conf import settings
from django.db import connection

needs_pg = pytest.mark.skipif(not os.environ.get("DATABASE_URL"), reason="DATABASE_URL not set")
needs_redis = pytest.mark.skipif(not os.environ.get("REDIS_URL"), reason="REDIS_URL not set")


@needs_pg
@pytest.mark.postgres
@pytest.mark.django_db
def test_database_url_selects_postgresql():
    assert connection.vendor == "postgresql"
    with connection.cursor() as cursor:
        cursor.execute("SELECT version()")
        assert "PostgreSQL" in cursor.fetchone()[0]


@needs_redis
@pytest.mark.redis
async def test_redis_url_selects_a_working_redis_channel_layer():
    from channels.layers import get_channel_layer

    layer = get_channel_layer()
    assert isinstance(layer, RedisChannelLayer)
    channel = await layer.new_channel()
    await layer.group_add("svc-test", channel)
    await layer.group_send("svc-test", {"type": "x", "n": 1})
    message = await asyncio.wait_for(layer.receive(channel), timeout=5)
    assert message["n"] == 1
    await layer.group_discard("svc-test", channel)


@needs_redis
@pytest.mark.redis
async def test_redis_layer_survives_an_idle_receive_longer_than_its_socket_timeout(caplog):  # noqa: ANN001
    """A socket with nothing to hear waits, its process's reader in BZPOPMIN round after
    round; redis-py 8's default read timeout of 5 s cut channels_redis' 5 s rounds short with
    a TimeoutError, closing every idle socket (1011). A layer whose reads time out after one
    second stays idle for two, then hears its message at once, its reader never having failed
    a read: its rounds fit in the timeout. The server's own timeout leaves more room."""
    from django.conf import settings

    from server.channel_layer import RedisLayer

    layer = _own_redis_layer(hosts=[{"address": os.environ["REDIS_URL"], "socket_timeout": 1}])
    channel = await layer.new_channel()
    inbox = layer.open_inbox(channel)
    with caplog.at_level("WARNING", logger="server.channel_layer"):
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(inbox.get(), timeout=2)
        await layer.send(channel, {"type": "x", "n": 2})
        assert (await asyncio.wait_for(inbox.get(), timeout=0.5))["n"] == 2
    await _close_own_layer(layer, [channel])
    assert [r.getMessage() for r in caplog.records if r.name == "server.channel_layer"] == []
    assert RedisLayer.read_wait <= settings.REDIS_SOCKET_TIMEOUT / 4


@needs_redis
@pytest.mark.redis
async def test_redis_layer_takes_hundreds_of_operations_at_once():
    """Each operation in flight holds a pooled connection; redis-py's pool raises past its
    bound (100 by default) instead of waiting, so a busy process closed sockets with 1011."""
    from channels.layers import get_channel_layer

    layer = get_channel_layer()
    channels = [await layer.new_channel() for _ in range(300)]
    await asyncio.gather(*(layer.group_add("svc-many", ch) for ch in channels))
    await asyncio.gather(*(layer.send(ch, {"type": "x", "n": i}) for i, ch in enumerate(channels)))
    got = await asyncio.gather(*(layer.receive(ch) for ch in channels))
    assert [m["n"] for m in got] == list(range(300))
    await asyncio.gather(*(layer.group_discard("svc-many", ch) for ch in channels))


@needs_redis
@pytest.mark.redis
async def test_redis_layer_skips_a_group_send_that_only_the_excluded_channel_would_hear():
    from channels.layers import get_channel_layer

    layer = get_channel_layer()
    mover, watcher = await layer.new_channel(), await layer.new_channel()
    await layer.group_add("svc-skip", mover)
    await layer.group_send("svc-skip", {"type": "x", "n": 1, "exclude": mover})
    await layer.group_send("svc-skip", {"type": "x", "n": 2})  # no exclusion: sent
    assert (await asyncio.wait_for(layer.receive(mover), timeout=5))["n"] == 2
    await layer.group_add("svc-skip", watcher)
    await layer.group_send("svc-skip", {"type": "x", "n": 3, "exclude": mover})
    assert (await asyncio.wait_for(layer.receive(watcher), timeout=5))["n"] == 3
    with pytest.raises(TimeoutError):  # left out, not sent for it to drop
        await asyncio.wait_for(layer.receive(mover), timeout=0.5)
    for channel in (mover, watcher):
        await layer.group_discard("svc-skip", channel)


@needs_redis
@pytest.mark.redis
async def test_redis_layer_hands_this_process_its_own_group_messages_without_redis(
    monkeypatch,  # noqa: ANN001
):
    """Members in this process get a group message straight into their queues; only other
    processes' members are written to Redis. A busy process's shared inbox in Redis filled up
    with its own traffic, and channels_redis drops group messages for a full inbox silently."""
    from channels.layers import get_channel_layer

    layer = get_channel_layer()
    crossed = []  # what this process's reader took from Redis
    hand_on = layer._hand_on
    monkeypatch.setattr(layer, "_hand_on", lambda *args: crossed.append(args[-1]) or hand_on(*args))
    mover, watcher = await layer.new_channel(), await layer.new_channel()
    elsewhere = "specific.another-process!" + "0" * 32  # a socket of another daphne process
    for channel in (mover, watcher, elsewhere):
        await layer.group_add("svc-local", channel)
    connection = layer.connection(0)
    remote_inbox = layer.prefix + layer.non_local_name(elsewhere)
    await connection.delete(remote_inbox)

    inbox = layer.open_inbox(watcher)  # as each socket of this process does
    try:
        await layer.group_send("svc-local", {"type": "x", "n": 1, "exclude": mover})
        assert (await asyncio.wait_for(inbox.get(), timeout=5))["n"] == 1
        await asyncio.sleep(0.3)  # a copy that went through Redis would be back by now
        assert crossed == [] and inbox.empty()  # nothing for this process crossed Redis
        assert await connection.zcard(remote_inbox) == 1  # the other process's copy did
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(layer.receive(mover), timeout=0.5)
        # A send from another thread (a REST view) goes through Redis, and arrives.
        await asyncio.to_thread(
            async_to_sync(layer.group_send), "svc-local", {"type": "x", "n": 2, "exclude": mover}
        )
        assert (await asyncio.wait_for(layer.receive(watcher), timeout=5))["n"] == 2
    finally:
        layer.close_inbox(watcher)
        for channel in (mover, watcher, elsewhere):
            await layer.group_discard("svc-local", channel)
        await connection.delete(remote_inbox)


@needs_redis
@pytest.mark.redis
async def test_a_socket_that_goes_while_redis_is_read_costs_no_other_socket_its_message(
    monkeypatch,  # noqa: ANN001
):
    """All of a process's channels share one Redis key. channels_redis let whichever
    `receive` held its lock pop that key for everyone; a socket that closed (its consumer
    cancels that call) after Redis had popped a message for another socket, and before handing
    it on, lost it for good. Here Redis takes a while to answer, and the socket that was first
    to read goes in that while; the other socket still gets its message."""
    from channels.layers import get_channel_layer

    layer = get_channel_layer()
    connection = layer.connection(0)
    popped = asyncio.Event()
    real_bzpopmin = connection.bzpopmin

    async def slow_answer(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        result = await real_bzpopmin(*args, **kwargs)
        if result is not None:
            popped.set()
            await asyncio.sleep(0.2)  # the answer on its way back
        return result

    monkeypatch.setattr(connection, "bzpopmin", slow_answer)
    going, staying = await layer.new_channel(), await layer.new_channel()
    first = asyncio.ensure_future(layer.receive(going))  # first in: it reads for the process
    await asyncio.sleep(0.05)
    waiting = asyncio.ensure_future(layer.receive(staying))
    await asyncio.sleep(0.05)
    await layer.send(staying, {"type": "x", "n": 1})
    await asyncio.wait_for(popped.wait(), timeout=5)
    first.cancel()  # the socket reading goes, while its answer is on the way
    assert (await asyncio.wait_for(waiting, timeout=5))["n"] == 1


@needs_redis
@pytest.mark.redis
async def test_redis_layer_keeps_a_message_sent_before_its_channel_is_read():
    from channels.layers import get_channel_layer

    layer = get_channel_layer()
    early = await layer.new_channel()
    await layer.send(early, {"type": "x", "n": 1})
    await asyncio.sleep(0.2)  # the process's reader has popped it by now
    assert (await asyncio.wait_for(layer.receive(early), timeout=5))["n"] == 1


def _own_redis_layer(read_batch: int = 100, **config):  # noqa: ANN003, ANN202
    """A layer of its own (a process of its own), so its reader starts in the test."""
    from server.channel_layer import RedisLayer

    config.setdefault("hosts", [{"address": os.environ["REDIS_URL"]}])
    layer = RedisLayer(prefix=f"layer-test-{uuid.uuid4().hex}:", **config)
    layer.read_batch = read_batch
    return layer


async def _received(layer, channels: list[str], n: int) -> list[list[int]]:  # noqa: ANN001
    """The `n` of the first n messages each channel gets, past the notice a read that failed
    is followed by (`layer.reconnected`)."""
    inboxes = [layer.open_inbox(c) for c in channels]

    async def message(inbox: asyncio.Queue) -> dict:
        got = await asyncio.wait_for(inbox.get(), timeout=10)
        return await message(inbox) if got["type"] == "layer.reconnected" else got

    got = [[(await message(i))["n"] for _ in range(n)] for i in inboxes]
    assert all(i.empty() for i in inboxes)
    await _close_own_layer(layer, channels)
    return got


async def _close_own_layer(layer, channels: list[str]) -> None:  # noqa: ANN001
    """Close the inboxes, stop the reader and delete the layer's keys."""
    for channel in channels:
        layer.close_inbox(channel)
    for task in layer._here().readers.values():
        task.cancel()
    await layer.flush()


@needs_redis
@pytest.mark.redis
async def test_redis_layer_hands_on_a_backlog_in_batches_whole_and_in_order():
    """The reader takes up to `read_batch` waiting messages in one round trip (channels_redis
    spent four on each): a backlog over several batches reaches each socket whole, in order."""
    layer = _own_redis_layer(read_batch=7)
    channels = [await layer.new_channel() for _ in range(2)]
    for n in range(40):
        for channel in channels:
            await layer.send(channel, {"type": "x", "n": n})
    assert await _received(layer, channels, 40) == [list(range(40))] * 2


def _second_read_goes_wrong(connection, how: str) -> tuple:  # noqa: ANN001
    """Make the reader's second batch read go wrong `how`; returns the batches it read."""
    register = connection.register_script
    reads: list = []

    def wrapped(script: str):  # noqa: ANN202
        take = register(script)

        async def call(**kwargs):  # noqa: ANN003, ANN202
            second = len(reads) == 1
            if second and how == "never sent":
                reads.append("never sent")
                raise ConnectionError("the connection was refused")
            taken = await take(**kwargs)
            if taken:
                reads.append(taken)
            if second and how == "answer lost":
                raise ConnectionError("the answer was lost on the way")
            if second and how == "sent twice":  # as redis-py's retries would, answer lost
                taken = await take(**kwargs)
            return taken

        return call

    return reads, wrapped


@needs_redis
@pytest.mark.redis
@pytest.mark.parametrize("how", ["answer lost", "never sent", "sent twice"])
async def test_redis_layer_loses_and_repeats_nothing_when_a_batch_read_goes_wrong(
    monkeypatch,  # noqa: ANN001
    how: str,
):
    """A batch waits in the key's backup, under its token, until the next read says it was
    handed on: a read whose answer was lost is read again, and one that never reached Redis or
    ran twice repeats nothing that was handed on before it."""
    layer = _own_redis_layer(read_batch=3)
    connection = layer.connection(0)
    reads, wrapped = _second_read_goes_wrong(connection, how)
    monkeypatch.setattr(connection, "register_script", wrapped)
    channel = await layer.new_channel()
    for n in range(8):
        await layer.send(channel, {"type": "x", "n": n})
    assert await _received(layer, [channel], 8) == [list(range(8))]
    assert len(reads) >= 3


@needs_redis
@pytest.mark.redis
async def test_redis_layer_drops_a_malformed_message_and_hands_on_the_rest_once():
    layer = _own_redis_layer(read_batch=10)
    channel = await layer.new_channel()
    await layer.send(channel, {"type": "x", "n": 0})
    key = layer.prefix + layer.non_local_name(channel)
    await layer.connection(0).zadd(key, {layer.serialize(["not", "a", "dict"]): time.time()})
    await layer.send(channel, {"type": "x", "n": 2})
    inbox = layer.open_inbox(channel)
    got = [(await asyncio.wait_for(inbox.get(), timeout=5))["n"] for _ in range(2)]
    await asyncio.sleep(1.5)  # a batch that failed would be read again after a second
    assert got == [0, 2] and inbox.empty()
    await _close_own_layer(layer, [channel])


@needs_redis
@pytest.mark.redis
async def test_redis_layer_batch_backup_expires_with_the_layer():
    """A process that dies between two reads leaves its last batch in the backup: it expires,
    as every other key of the layer does."""
    from server.channel_layer import _TAKE

    layer = _own_redis_layer(expiry=30)
    channel = await layer.new_channel()
    for n in range(3):
        await layer.send(channel, {"type": "x", "n": n})
    connection = layer.connection(0)
    key = layer.prefix + layer.non_local_name(channel)
    backup = layer._backup_channel_name(key)
    taken = await connection.eval(_TAKE, 3, key, backup, backup + "$batch", "", 10, "t1", 30)
    assert len(taken) == 6
    assert 0 < await connection.ttl(backup) <= 30
    assert 0 < await connection.ttl(backup + "$batch") <= 30
    await layer.flush()


@needs_redis
@pytest.mark.redis
async def test_redis_group_send_takes_one_round_trip_and_one_more_for_other_processes(
    monkeypatch,  # noqa: ANN001
):
    """channels_redis spent three round trips on a group send before writing to other
    processes (four with the look for a watcher), and two more to write. Expired members are
    still dropped, a full process key still misses the message, and expired messages are
    still trimmed from the keys written to."""
    layer = _own_redis_layer(capacity=2, group_expiry=60)
    connection = layer.connection(0)
    calls = []
    execute = connection.execute_command

    async def counted(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        calls.append(args[0])
        return await execute(*args, **kwargs)

    mine = await layer.new_channel()
    inbox = layer.open_inbox(mine)
    others = [f"specific.other{i}!" + "0" * 32 for i in range(3)]
    gone = "specific.gone!" + "0" * 32  # joined longer ago than the group's expiry
    for channel in [mine, *others]:
        await layer.group_add("g", channel)
    await connection.zadd(layer._group_key("g"), {gone: time.time() - 120})
    other_keys = [layer.prefix + layer.non_local_name(c) for c in others]
    await connection.zadd(other_keys[1], {b"stale": time.time() - 120})  # past the expiry
    await connection.zadd(other_keys[2], {b"a": time.time(), b"b": time.time() + 1})  # full
    monkeypatch.setattr(connection, "execute_command", counted)
    try:
        await layer.group_send("g", {"type": "x", "n": 1, "exclude": others[0]})
        assert len(calls) == 2, calls
        assert (await asyncio.wait_for(inbox.get(), timeout=5))["n"] == 1
        assert await connection.zcard(other_keys[0]) == 0  # left out
        [new] = await connection.zrange(other_keys[1], 0, -1)  # the stale one trimmed
        assert layer.deserialize(new)["n"] == 1
        assert await connection.zrange(other_keys[2], 0, -1) == [b"a", b"b"]  # full: missed
        assert gone.encode() not in await connection.zrange(layer._group_key("g"), 0, -1)

        for channel in others:
            await layer.group_discard("g", channel)
        calls.clear()
        await layer.group_send("g", {"type": "x", "n": 2})  # this process's member only
        assert len(calls) == 1, calls
        assert (await asyncio.wait_for(inbox.get(), timeout=5))["n"] == 2
        calls.clear()
        await layer.group_send("g", {"type": "x", "n": 3, "exclude": mine})  # no one else
        assert len(calls) == 1 and inbox.empty()
    finally:
        monkeypatch.undo()
        await _close_own_layer(layer, [mine])


def test_embedded_default_without_urls():
    if os.environ.get("DATABASE_URL") or os.environ.get("REDIS_URL"):
        pytest.skip("service URLs are set")
    assert settings.DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3"
    assert settings.CHANNEL_LAYERS["default"]["BACKEND"].endswith("InProcessChannelLayer")


@needs_redis
@pytest.mark.redis
@pytest.mark.django_db(transaction=True)
async def test_health_sees_redis_while_sockets_are_reading_from_it(user):  # noqa: ANN001
    """A process's sockets share one reader of the layer's process channel: a health probe
    that waited on that reader timed out (503) whenever a socket was open, so a load balancer
    would have dropped every busy worker. The probe reads a channel of its own."""
    from asgiref.sync import sync_to_async
    from django.test import Client

    from games import services
    from tests.ws.helpers import connect, recv

    game = await sync_to_async(services.start_practice)(user, "portuguese", 1)
    sockets = [await connect(f"/ws/games/{game.pk}", user) for _ in range(3)]
    for comm in sockets:
        assert (await recv(comm))["t"] == "state"
    res = await sync_to_async(Client().get)("/api/health")
    assert res.status_code == 200, res.json()
    assert res.json()["channel_layer"]["ok"] is True
    for comm in sockets:
        await comm.disconnect()


@needs_redis
@pytest.mark.redis
async def test_redis_layer_reader_stops_at_once_when_cancelled_as_it_starts():
    """A reader cancelled in its first loop passes (its socket closed at connect, or the loop
    ended) stops at once, or within one BZPOPMIN at worst. redis-py can lose a cancel that
    comes while it connects, and the reader then blocked in BZPOPMIN for a whole wait (a
    second, then) before it looked again: every test whose socket closed at connect took a
    second more to end on Redis. It now looks before it blocks, and the wait is a quarter of a
    second (a cancel lost in BZPOPMIN itself, seen on a loaded machine, costs no more). Cancelled
    after each number of passes up to 30, as the connection is made, every reader stops within
    half a second."""
    slow = []
    for passes in range(30):
        layer = _own_redis_layer()
        channel = await layer.new_channel()
        layer.open_inbox(channel)
        for _ in range(passes):
            await asyncio.sleep(0)
        reader = next(iter(layer._here().readers.values()))
        reader.cancel()
        started = time.monotonic()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(reader, timeout=5)
        if time.monotonic() - started > 0.5:
            slow.append(passes)
        await _close_own_layer(layer, [channel])
    assert slow == [], f"cancelled after these many passes, the reader went on reading: {slow}"


class _ReadFailsOnce:
    """A Redis client whose first BZPOPMIN fails, as the reader's does when Redis restarts."""

    def __init__(self, client, failures: list) -> None:  # noqa: ANN001
        self.client, self.failures = client, failures

    def __getattr__(self, name: str):  # noqa: ANN204
        return getattr(self.client, name)

    async def bzpopmin(self, *args: object, **kwargs: object):  # noqa: ANN201
        if self.failures:
            self.failures.pop()
            await asyncio.sleep(0.3)
            raise ConnectionError("Connection closed by server.")
        return await self.client.bzpopmin(*args, **kwargs)


@needs_redis
@pytest.mark.redis
async def test_a_redis_back_without_its_groups_gets_them_again_and_the_sockets_hear(
    monkeypatch,  # noqa: ANN001
    caplog,  # noqa: ANN001
):
    """Redis restarted (it keeps nothing on disk) came back without the groups: every open
    socket went deaf for good, to moves and to its sign-in's end. Once a read works again, the
    process joins its sockets' groups again and tells each (`layer.reconnected`)."""
    layer = _own_redis_layer()
    real_connection = layer.connection
    monkeypatch.setattr(layer, "connection", lambda i: _ReadFailsOnce(real_connection(i), [1]))
    channel = await layer.new_channel()
    inbox = layer.open_inbox(channel)  # its reader starts, and its read fails in 0.3 s
    with caplog.at_level("WARNING", logger="server.channel_layer"):
        await layer.group_add("svc-rejoin", channel)
        await real_connection(0).delete(layer._group_key("svc-rejoin"))  # lost with Redis
        assert await asyncio.wait_for(inbox.get(), timeout=5) == {"type": "layer.reconnected"}
        await layer.group_send("svc-rejoin", {"type": "x", "n": 1})
        assert (await asyncio.wait_for(inbox.get(), timeout=5))["n"] == 1
    await _close_own_layer(layer, [channel])
    lines = [r.getMessage() for r in caplog.records if r.name == "server.channel_layer"]
    assert len(lines) == 2 and "failed" in lines[0] and "back" in lines[1], lines
    assert all(r.exc_info is None for r in caplog.records)


@needs_redis
@pytest.mark.redis
async def test_a_socket_opened_while_redis_is_away_joins_its_groups_once_it_is_back(
    monkeypatch,  # noqa: ANN001
):
    """Its join failed and the handshake closed with 1011; now it is made when Redis is back.
    A channel that is not a socket's of this process still hears the failure."""
    from redis.exceptions import ConnectionError as RedisDown

    layer = _own_redis_layer()
    socket_channel, other = await layer.new_channel(), await layer.new_channel()
    inbox = layer.open_inbox(socket_channel)

    async def away(*args: object) -> None:
        raise RedisDown("Error 111 connecting to redis:6379. Connection refused.")

    monkeypatch.setattr(RedisChannelLayer, "group_add", away)
    await layer.group_add("svc-later", socket_channel)  # no error: remembered
    with pytest.raises(RedisDown):
        await layer.group_add("svc-later", other)
    monkeypatch.undo()
    await layer._rejoin(layer._here())
    assert await asyncio.wait_for(inbox.get(), timeout=5) == {"type": "layer.reconnected"}
    await layer.group_send("svc-later", {"type": "x", "n": 2})
    assert (await asyncio.wait_for(inbox.get(), timeout=5))["n"] == 2
    await _close_own_layer(layer, [socket_channel])


@needs_redis
@pytest.mark.redis
async def test_a_pooled_connection_redis_dropped_costs_no_send():
    """A Redis that restarted left the pool's idle connections dead, and each failed the next
    operation that took it: a watcher missed the first move after the restart. The idle ones
    are dropped on the first such failure and the operation is tried once more."""
    import redis.asyncio as redis

    layer = _own_redis_layer()
    client = layer.connection(0)
    victim = await client.client_id()  # the one idle connection of the pool, from now on
    channel = await layer.new_channel()
    inbox = layer.open_inbox(channel)
    await layer.group_add("svc-dropped", channel)
    for _ in range(3):  # the reader holds its own connection: find ours idle again
        if await client.client_id() == victim:
            break
    admin = redis.Redis.from_url(os.environ["REDIS_URL"])
    try:
        assert await admin.client_kill_filter(_id=victim) == 1
    finally:
        await admin.aclose()
    await layer.group_send("svc-dropped", {"type": "x", "n": 1})
    assert (await asyncio.wait_for(inbox.get(), timeout=5))["n"] == 1
    await _close_own_layer(layer, [channel])


@needs_redis
@pytest.mark.redis
async def test_a_socket_whose_join_redis_does_not_answer_is_joined_at_the_next_good_read(
    monkeypatch,  # noqa: ANN001
):
    """A Redis that hung held a new socket's handshake for the read timeout (15 s); now the
    join waits `join_seconds`, and the reader's next good read makes it (with no failed read
    of its own to set it off: Redis hung for less than the read timeout)."""
    import time

    layer = _own_redis_layer()
    layer.join_seconds = 0.2
    channel = await layer.new_channel()
    inbox = layer.open_inbox(channel)

    async def hang(*args: object) -> None:
        await asyncio.Event().wait()

    monkeypatch.setattr(RedisChannelLayer, "group_add", hang)
    started = time.monotonic()
    await layer.group_add("svc-hung", channel)
    assert time.monotonic() - started < 1
    monkeypatch.undo()
    assert await asyncio.wait_for(inbox.get(), timeout=5) == {"type": "layer.reconnected"}
    await layer.group_send("svc-hung", {"type": "x", "n": 3})
    assert (await asyncio.wait_for(inbox.get(), timeout=5))["n"] == 3
    await _close_own_layer(layer, [channel])
