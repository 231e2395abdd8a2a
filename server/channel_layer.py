"""The embedded channel layer: channels' in-memory layer with cheaper housekeeping.

`InMemoryChannelLayer` sweeps every channel and every group for expired entries on each
`receive` and `group_send`, and fans a group send out through one task per member. With a
hundred sockets open, each move paid for two full sweeps and a task, which made the layer a
tenth of the server's work. Here the sweep runs at most once per `clean_interval` (messages
expire after a minute, so being a second late to drop one changes nothing), and a group send
puts the message on each member's queue directly: `send` never waits, so nothing is lost.
A group message may name one channel to leave out (`"exclude"`, the socket that already has
the frame); other layers deliver it there too, and the consumer drops it.
Used only when REDIS_URL is unset (one process); production uses `RedisLayer` below.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import time
import uuid
from typing import Any

from channels.exceptions import ChannelFull
from channels.layers import InMemoryChannelLayer
from channels_redis.core import RedisChannelLayer
from redis.exceptions import ConnectionError as RedisConnectionError

from server.stores import STORE_ERRORS, log_away

logger = logging.getLogger(__name__)
# What a connection Redis dropped (a restart) raises when next used.
_LOST = (RedisConnectionError, ConnectionError)


class InProcessChannelLayer(InMemoryChannelLayer):
    clean_interval = 1.0

    def __init__(self, *args, **kwargs) -> None:  # noqa: ANN002, ANN003
        super().__init__(*args, **kwargs)
        self._cleaned_at = float("-inf")

    def _clean_expired(self) -> None:
        now = time.monotonic()
        if now - self._cleaned_at < self.clean_interval:
            return
        self._cleaned_at = now
        super()._clean_expired()

    def reaches_others(self, group: str, exclude: str | None) -> bool:
        """Whether a group send leaving `exclude` out would reach anyone: this layer knows its
        groups, so a sender can tell without building and awaiting a send (games.broadcast)."""
        members = self.groups.get(group)
        return bool(members) and not (len(members) == 1 and exclude in members)

    async def group_send(self, group: str, message: dict) -> None:
        assert isinstance(message, dict), "Message is not a dict"
        skip = message.get("exclude")
        members = self.groups.get(group)
        if not members:
            self.require_valid_group_name(group)  # no group_add has checked this name
            return
        if skip is not None and len(members) == 1 and skip in members:
            return  # no one else to tell: most games are played with nobody watching
        self._clean_expired()
        for channel in list(members):
            if channel == skip:
                continue  # already answered (see games.broadcast); it would only drop it
            # As in the base layer, a full channel misses this message.
            with contextlib.suppress(ChannelFull):
                await self.send(channel, message)


class _LoopInboxes:
    """One event loop's side of `RedisLayer`: the inboxes of the channels read on that loop,
    and the tasks that fill them from Redis (one per process-wide Redis key)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, capacity: int) -> None:
        self.loop = loop
        self.capacity = capacity
        self.queues: dict[str, asyncio.Queue] = {}
        self.owned: set[str] = set()  # opened by a socket, closed by it (open_inbox)
        # Inboxes no one is reading: messages that came before their reader, or after it left;
        # dropped once idle for the layer's expiry.
        self.idle_since: dict[str, float] = {}
        self.readers: dict[str, asyncio.Task] = {}
        # The groups each channel read here has joined (RedisLayer.group_add), so they can be
        # joined again when Redis comes back without them (a restart without persistence).
        self.joined: dict[str, set[str]] = {}
        self.rejoining = False
        # A socket's join failed or timed out with no failed read to follow (Redis hung for
        # less than the read timeout): the reader's next good read joins them all again.
        self.rejoin_wanted = False

    def queue(self, channel: str) -> asyncio.Queue:
        """`channel`'s inbox, made if need be; a new one counts as idle until it is read."""
        inbox = self.queues.get(channel)
        if inbox is None:
            inbox = self.queues[channel] = asyncio.Queue(maxsize=self.capacity)
            self.idle_since[channel] = time.monotonic()
        return inbox


class RedisLayer(RedisChannelLayer):
    """channels_redis' layer, with one reader of Redis per process and group sends that skip
    Redis where they can.

    **One reader.** Every socket of a process has a channel of the form `specific.P!X`, and
    channels_redis keeps all of a process's messages under one Redis key, `specific.P!`. Its
    `receive` has whichever socket's call holds a lock pop that key for everyone; when that
    socket closed (its consumer cancels the call) between Redis popping a message and the
    message being handed on, the message was gone, and some other socket missed it: a soak
    with two processes saw watchers miss states as sockets came and went. Here one task per
    event loop pops the key and puts each message in its channel's inbox; a socket only waits
    on its own inbox, so a socket that goes cancels nothing but that wait. A message for a
    channel with no inbox yet (a `send` before the first `receive`) is kept in one until the
    layer's expiry. A Redis error stops nothing: the reader logs it and reads again a second
    later (channels_redis' `receive` raised it into one socket, which closed with 1011).

    **Group sends.** Most games are played with nobody watching: the only member of the
    game's group is the mover's own socket, which already has its frame. channels_redis spends
    four round trips on a group send (expire, list, trim, deliver), and then the mover's
    process pops the message only to drop it: measured, a move cost the server 1.1-1.2 ms of
    CPU on Redis against 0.5 ms on the in-process layer. Here a send reads the group's members
    in one round trip (`group_send`) and stops if there is no one but the channel it names to
    leave out (`"exclude"`). No watcher is missed for it: a game socket joins the group before it
    loads the state it starts from (games.consumers), and the move's send starts after its
    commit, so a socket that this read misses joined after the commit and loads the move with
    its first state.

    When others do hear it, the excluded channel is left out, and this process's own sockets
    get the message straight into their inboxes; only other processes' members go through
    Redis. Before, every copy went out to Redis and back, the mover's included, and all of a
    process's sockets share one key there, bounded by `capacity`: channels_redis drops a group
    message for a key that is full without a word, and a busy process's watchers silently
    missed states (an audit saw 250 of 700 go missing at about 1,000 moves a second).
    """

    # The longest the reader waits in one BZPOPMIN: an idle process asks Redis four times a
    # second, and a loop that is closing waits at most this long for its reader (see `_read`).
    read_wait = 0.25
    # The most messages the reader takes from Redis in one round trip (see `_read`).
    read_batch = 100
    # How long a socket's group join or leave may wait for Redis (see `group_add`).
    join_seconds = 1.0

    def __init__(self, *args, **kwargs) -> None:  # noqa: ANN002, ANN003
        super().__init__(*args, **kwargs)
        self._loops: dict[asyncio.AbstractEventLoop, _LoopInboxes] = {}
        self._over_logged: dict[str, tuple[float, int]] = {}  # group -> (logged at, held since)

    def _here(self) -> _LoopInboxes:
        """The running loop's inboxes. One loop reads a process's channels at a time, as
        channels_redis requires of `receive`; a closed loop's (a finished test's) give way."""
        loop = asyncio.get_running_loop()
        here = self._loops.get(loop)
        if here is None:
            for old in [other for other in self._loops if other.is_closed()]:
                del self._loops[old]
            if self._loops:
                raise RuntimeError("Two event loops are trying to receive() on one channel layer")
            here = self._loops[loop] = _LoopInboxes(loop, self.capacity)
        return here

    def _inbox(self, here: _LoopInboxes, channel: str) -> asyncio.Queue:
        """`channel`'s inbox on this loop, made if need be, with a reader filling it."""
        real = self.non_local_name(channel)
        reader = here.readers.get(real)
        if reader is None or reader.done():
            here.readers[real] = here.loop.create_task(self._read(here, real))
        inbox = here.queue(channel)
        here.idle_since.pop(channel, None)
        return inbox

    def open_inbox(self, channel: str) -> asyncio.Queue:
        """The queue that every message for `channel` reaches; close it when done."""
        here = self._here()
        here.owned.add(channel)
        return self._inbox(here, channel)

    def close_inbox(self, channel: str) -> None:
        here = self._loops.get(asyncio.get_running_loop())
        if here is not None:
            here.owned.discard(channel)
            here.queues.pop(channel, None)
            here.joined.pop(channel, None)

    def _joined_here(self, channel: str) -> set[str] | None:
        """The groups `channel` has joined, if it is a socket's channel read on this loop."""
        try:
            here = self._loops.get(asyncio.get_running_loop())
        except RuntimeError:
            return None
        if here is None or channel not in here.owned:
            return None
        return here.joined.setdefault(channel, set())

    async def group_add(self, group: str, channel: str) -> None:
        """As channels_redis', and remembered for this process's own sockets, so that a Redis
        that comes back empty (restarted without persistence) gets them again (`_rejoin`).
        Remembered first: a join that fails because Redis is away, or does not answer within
        `join_seconds`, is made once it is back (the reader's next good read), instead of
        failing the handshake (1011) or holding it for the read timeout (15 s)."""
        joined = self._joined_here(channel)
        if joined is not None:
            joined.add(group)
        if not await self._socket_group_change(super().group_add, group, channel, joined):
            self._here().rejoin_wanted = True

    async def group_discard(self, group: str, channel: str) -> None:
        """As channels_redis'; a socket's leave that fails is let go: its channel stays in the
        group until the group expires, and sends to it are dropped (as for a process killed
        with its sockets open)."""
        joined = self._joined_here(channel)
        if joined is not None:
            joined.discard(group)
        await self._socket_group_change(super().group_discard, group, channel, joined)

    async def _socket_group_change(
        self, change: Any, group: str, channel: str, joined: set[str] | None
    ) -> bool:
        """Whether `change` (a join or leave) was made. A socket's of this process (`joined`
        not None) waits at most `join_seconds`, and its failure is logged, not raised; any
        other channel's is raised, as channels_redis raises it."""
        if joined is None:
            await self._once_more(change, group, channel)
            return True
        try:
            async with asyncio.timeout(self.join_seconds):
                await self._once_more(change, group, channel)
        except STORE_ERRORS as exc:
            log_away(f"Channel layer: a socket's {change.__name__}", exc, logger)
            return False
        return True

    async def send(self, channel: str, message: dict) -> None:
        await self._once_more(super().send, channel, message)

    async def _once_more(self, operation: Any, *args: Any) -> Any:
        """`operation`, tried once more on a lost connection. A Redis that restarted leaves
        every idle connection of the pool dead, and each failed the next operation that took it
        (a watcher missed the first move made after a restart, and a board its next push): the
        idle ones are dropped, and a fresh one tried (which fails as fast if Redis is away). A
        group send's local copies may then go twice; a socket drops a state it has."""
        try:
            return await operation(*args)
        except _LOST:
            await self._drop_idle_connections()
            return await operation(*args)

    async def _drop_idle_connections(self) -> None:
        loop_layer = self._layers.get(asyncio.get_running_loop())
        for client in list(getattr(loop_layer, "_connections", {}).values()):
            await client.connection_pool.disconnect(inuse_connections=False)

    async def _rejoin(self, here: _LoopInboxes) -> None:
        """After Redis was unreachable: join every open socket's groups again (Redis may have
        come back without them: every later group send would have missed those sockets, for
        good, and a revoked token would not have closed them), and tell each socket, which
        sends its client what it missed (`layer.reconnected`). Joining twice is harmless."""
        if here.rejoining:
            return
        here.rejoining = True
        try:
            for channel, groups in list(here.joined.items()):
                for group in list(groups):
                    if channel in here.owned:
                        await super().group_add(group, channel)
            for channel in list(here.owned):
                inbox = here.queues.get(channel)
                if inbox is not None:
                    put_dropping_oldest(inbox, {"type": "layer.reconnected"})
            logger.warning(
                "Channel layer: Redis is back; %d sockets joined their groups again",
                len(here.joined),
            )
        finally:
            here.rejoining = False

    async def receive(self, channel: str) -> dict:
        """A process channel's next message, from its inbox (see the class's docstring); other
        channels (the health probe's) are read from Redis as channels_redis reads them."""
        if "!" not in channel:
            return await super().receive(channel)
        assert self.require_valid_channel_name(channel)
        here = self._here()
        inbox = self._inbox(here, channel)
        try:
            return await inbox.get()
        finally:
            if channel not in here.owned and inbox.empty():
                here.idle_since[channel] = time.monotonic()

    async def _read(self, here: _LoopInboxes, real: str) -> None:
        """Pop the process-wide key `real` for as long as the loop runs, and hand each message
        to the inboxes it names.

        Messages waiting are taken up to `read_batch` at a time, in one round trip (`_TAKE`):
        channels_redis' `receive` spent four on each message (put back its backup, pop one,
        back it up, clear the backup), and a process's reader managed about 1,300 messages a
        second, at some 600 µs of the process's CPU each (bench/redis_layer.py). With nothing
        waiting, it blocks in BZPOPMIN for the next one.

        What `_TAKE` takes waits in the key's backup, under a token naming the batch, until
        the next `_TAKE` says which batch was last handed on: the backup is cleared if it is
        that one, else put back in the key. So a read whose answer was lost (its batch is
        read again), one that never reached Redis, and one that redis-py sent twice all lose
        and repeat nothing. What BZPOPMIN pops is handed on at once; its answer lost on the way
        (the connection dropped just then) loses that message, as with channels_redis."""
        connection = self.connection(self.consistent_hash(real))
        take = connection.register_script(_TAKE)
        key = self.prefix + real
        backup = self._backup_channel_name(key)
        keys = [key, backup, backup + "$batch"]
        swept = time.monotonic()
        me = asyncio.current_task()
        reader, batches = uuid.uuid4().hex, itertools.count()
        handed = ""  # the token of the last batch handed on
        failed = False  # Redis failed a read since the last one that worked
        while True:
            try:
                token = f"{reader}:{next(batches)}"
                args = [handed, self.read_batch, token, self.expiry]
                taken = await take(keys=keys, args=args)
                if failed or here.rejoin_wanted:
                    failed = here.rejoin_wanted = False
                    await self._rejoin(here)
                if taken:
                    self._hand_on_all(here, real, taken[::2])
                    handed = token
                elif me.cancelling():
                    raise asyncio.CancelledError  # lost in `take`: not a second's wait first
                else:
                    popped = await connection.bzpopmin(key, timeout=self.read_wait)
                    if popped is not None:
                        self._hand_on_all(here, real, [popped[1]])
            except Exception as exc:  # Redis away: the sockets wait, and hear once it is back
                if not me.cancelling():
                    if not failed:  # one line an outage, not a traceback a second
                        logger.warning(
                            "Channel layer: reading %s from Redis failed (%s: %s); "
                            "retrying every second",
                            key,
                            type(exc).__name__,
                            exc,
                        )
                    failed = True
                    await asyncio.sleep(1)
            # redis-py 8 can lose a cancel that comes while it connects, and go on to block in
            # the read (a bare redis-py client shows it: the call returns None when the wait is
            # over), and so can BZPOPMIN, more rarely; so a cancel is looked for after each
            # read, which is why reads are short, and before BZPOPMIN blocks (the first `take`
            # connects: a socket closed at once left its reader blocked for a whole wait).
            if me.cancelling():
                raise asyncio.CancelledError
            if time.monotonic() - swept > self.expiry:
                swept = time.monotonic()
                self._sweep(here, swept)

    def _hand_on_all(self, here: _LoopInboxes, real: str, contents: list[bytes]) -> None:
        """Hand each message on; one that is not a message of this layer's is logged and
        dropped (raised, it would fail the batch, which would then be read again for ever)."""
        for content in contents:
            try:
                self._hand_on(here, real, content)
            except Exception:  # noqa: BLE001 - logged; the others go on
                logger.exception("Channel layer: a message on %s could not be read; dropped", real)

    def _hand_on(self, here: _LoopInboxes, real: str, content: bytes) -> None:
        message = self.deserialize(content)
        channels = message.pop("__asgi_channel__", real)
        if isinstance(channels, str):
            channels = [channels]
        for i, channel in enumerate(channels):
            put_dropping_oldest(
                here.queue(channel), message if i == len(channels) - 1 else dict(message)
            )

    def _sweep(self, here: _LoopInboxes, now: float) -> None:
        """Drop the inboxes no one has read for the layer's expiry: their messages have
        expired, and their channels are gone (a socket closed while a message was on its way)."""
        for channel, since in list(here.idle_since.items()):
            if now - since > self.expiry:
                del here.idle_since[channel]
                here.queues.pop(channel, None)

    async def group_send(self, group: str, message: dict) -> None:
        await self._once_more(self._group_send, group, message)

    async def _group_send(self, group: str, message: dict) -> None:
        """channels_redis' group send in one round trip, or two when members on other
        processes must be written to: it spent three (drop expired members, list them; four
        with the look for anyone but the mover this layer added) and two more for those
        members (drop expired messages, write). Members are read and expired in one script
        (`_MEMBERS`), this process's are handed their copy here (`_deliver_here`), and the
        others' keys are trimmed and written in another (`_DELIVER`), as channels_redis'."""
        assert self.require_valid_group_name(group), "Group name not valid"
        connection = self.connection(self.consistent_hash(group))
        now = time.time()
        members = [
            member.decode()
            for member in await connection.eval(
                _MEMBERS, 1, self._group_key(group), int(now) - self.group_expiry
            )
        ]
        skip = message.get("exclude")
        if all(member == skip for member in members):
            return
        others = self._deliver_here(members, message)  # only Redis reaches the rest
        by_connection, messages, capacities = self._map_channel_keys_to_connection(others, message)
        for index, keys in by_connection.items():
            args = [messages[k] for k in keys] + [capacities[k] for k in keys]
            args += [now, self.expiry, int(now) - int(self.expiry)]
            over = await self.connection(index).eval(_DELIVER, len(keys), *keys, *args)
            if over:
                self._log_over_capacity(group, over, len(keys), now)

    # A group's "over capacity" lines, at most one a minute: a process killed without closing
    # its sockets leaves their channels in their games' groups until the group expiry (a day),
    # and every later move on those games found the dead inbox full: an audit's 30 games logged
    # 5,631 lines in 12 s. Each line says how many sends it stands for.
    over_log_seconds = 60.0

    def _log_over_capacity(self, group: str, over: int, members: int, now: float) -> None:
        logged = self._over_logged
        last, held = logged.get(group, (0.0, 0))
        if now - last < self.over_log_seconds:
            logged[group] = (last, held + 1)
            return
        if len(logged) > 10_000:  # groups come and go: forget the old ones, not grow for ever
            logged.clear()
        logged[group] = (now, 0)
        more = f" (and in {held} sends before it, not logged)" if held else ""
        logger.info("%s of %s channels over capacity in group %s%s", over, members, group, more)

    def _deliver_here(self, channel_names: list, message: dict) -> list:
        """Put the message in the open inboxes of this process's members; return the others.

        Only on the loop the inboxes belong to: a send from another thread (a REST view's
        `async_to_sync`) goes through Redis as before. Each member gets its own (shallow) copy,
        as from Redis, and a full inbox loses its oldest message, as channels_redis' buffers do.
        """
        skip = message.get("exclude")
        try:
            here = self._loops.get(asyncio.get_running_loop())
        except RuntimeError:
            here = None
        others = []
        for channel in channel_names:
            if channel == skip:
                continue
            inbox = here.queues.get(channel) if here is not None else None
            if inbox is None:
                others.append(channel)
                continue
            put_dropping_oldest(inbox, dict(message))
        return others


# One round trip of the reader (RedisLayer._read). KEYS: the process key, its backup, the
# token of the batch in the backup. ARGV: the token of the last batch handed on, how many to
# take, this batch's token, the layer's expiry. The backup is put back in the key unless it is
# the batch last handed on (as channels_redis' receive puts its backup back); then up to
# ARGV[2] of the oldest messages move from the key to the backup, under this batch's token,
# and are returned oldest first, each followed by its score.
_TAKE = """
local held = redis.call('GET', KEYS[3])
if held and held ~= ARGV[1] then
    local backed_up = redis.call('ZRANGE', KEYS[2], 0, -1, 'WITHSCORES')
    for i = #backed_up, 1, -2 do
        redis.call('ZADD', KEYS[1], backed_up[i], backed_up[i - 1])
    end
    if #backed_up > 0 then
        redis.call('EXPIRE', KEYS[1], ARGV[4])
    end
end
redis.call('DEL', KEYS[2], KEYS[3])
local taken = redis.call('ZPOPMIN', KEYS[1], ARGV[2])
if #taken > 0 then
    for i = 1, #taken, 2 do
        redis.call('ZADD', KEYS[2], taken[i + 1], taken[i])
    end
    redis.call('EXPIRE', KEYS[2], ARGV[4])
    redis.call('SET', KEYS[3], ARGV[3], 'EX', ARGV[4])
end
return taken
"""


# A group's members (KEYS[1]), those that joined longer ago than the group's expiry dropped
# first (ARGV[1]: the cut-off time), as channels_redis' group send does in two round trips.
_MEMBERS = """
redis.call('ZREMRANGEBYSCORE', KEYS[1], 0, ARGV[1])
return redis.call('ZRANGE', KEYS[1], 0, -1)
"""

# A group message into each process key in KEYS (its message ARGV[i], its capacity
# ARGV[#KEYS + i]), each key's expired messages dropped first; the time, the expiry and the
# cut-off come last. A full key misses it, as in channels_redis; returns how many did.
_DELIVER = """
local n = #KEYS
local now, expiry, cutoff = ARGV[2 * n + 1], ARGV[2 * n + 2], ARGV[2 * n + 3]
local over = 0
for i = 1, n do
    redis.call('ZREMRANGEBYSCORE', KEYS[i], 0, cutoff)
    if redis.call('ZCOUNT', KEYS[i], '-inf', '+inf') < tonumber(ARGV[n + i]) then
        redis.call('ZADD', KEYS[i], now, ARGV[i])
        redis.call('EXPIRE', KEYS[i], expiry)
    else
        over = over + 1
    end
end
return over
"""


def put_dropping_oldest(inbox: asyncio.Queue, message: dict) -> None:
    """Queue a message; a full inbox loses its oldest, as channels_redis' buffers do."""
    if inbox.full():
        inbox.get_nowait()
    inbox.put_nowait(message)
