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
import time

from channels.exceptions import ChannelFull
from channels.layers import InMemoryChannelLayer
from channels_redis.core import RedisChannelLayer


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


class RedisLayer(RedisChannelLayer):
    """channels_redis' layer, minus the group sends that need not cross Redis.

    Most games are played with nobody watching: the only member of the game's group is the
    mover's own socket, which already has its frame. channels_redis spends four round trips on
    a group send (expire, list, trim, deliver), and then the mover's process pops the message
    only to drop it: measured, a move cost the server 1.1-1.2 ms of CPU on Redis against 0.5 ms
    on the in-process layer. Here a send that names a channel to leave out (`"exclude"`) first
    reads at most two members, one round trip, and stops if there is no one else.

    No watcher is missed for it: a game socket joins the group before it loads the state it
    starts from (games.consumers), and the move's send starts after its commit, so a socket
    that this read misses joined after the commit and loads the move with its first state.

    When others do hear it, the excluded channel is left out, and this process's own sockets
    get the message straight into an inbox of their own (`open_inbox`, read beside the layer
    by `server.lean_consumer`); only other processes' members go through Redis. Before, every
    copy went out to Redis and back, the mover's included: all of a process's sockets share
    one inbox there, bounded by `capacity`, and channels_redis drops a group message for an
    inbox that is full without a word. A busy process fell behind reading it, and its own
    watchers silently missed states (an audit saw 250 of 700 go missing at about 1,000 moves
    a second; watchers on the other process missed none).

    The inbox is separate from channels_redis' per-channel buffers on purpose: one socket at a
    time reads Redis for the whole process, blocked there, and would not notice a message put
    in its buffer until something came from Redis.
    """

    def __init__(self, *args, **kwargs) -> None:  # noqa: ANN002, ANN003
        super().__init__(*args, **kwargs)
        self._inboxes: dict[str, asyncio.Queue] = {}
        self._inbox_loop: asyncio.AbstractEventLoop | None = None

    def open_inbox(self, channel: str) -> asyncio.Queue:
        """The queue this process's group sends fill for `channel`; close it when done."""
        self._inbox_loop = asyncio.get_running_loop()
        inbox = self._inboxes[channel] = asyncio.Queue(maxsize=self.capacity)
        return inbox

    def close_inbox(self, channel: str) -> None:
        self._inboxes.pop(channel, None)

    async def group_send(self, group: str, message: dict) -> None:
        skip = message.get("exclude")
        if skip is not None:
            connection = self.connection(self.consistent_hash(group))
            members = await connection.zrange(self._group_key(group), 0, 1)
            if all(member.decode() == skip for member in members):
                return
        await super().group_send(group, message)

    def _map_channel_keys_to_connection(self, channel_names: list, message: dict) -> tuple:
        """channels_redis' group send hands every member here to plan the Redis writes: it
        plans them for the members that only Redis can reach."""
        return super()._map_channel_keys_to_connection(
            self._deliver_here(channel_names, message), message
        )

    def _deliver_here(self, channel_names: list, message: dict) -> list:
        """Put the message in the inboxes of this process's members; return the others.

        Only on the loop the inboxes belong to: a send from another thread (a REST view's
        `async_to_sync`) goes through Redis as before. Each member gets its own (shallow) copy,
        as from Redis, and a full inbox loses its oldest message, as channels_redis' buffers do.
        """
        skip = message.get("exclude")
        try:
            here = asyncio.get_running_loop() is self._inbox_loop
        except RuntimeError:
            here = False
        others = []
        for channel in channel_names:
            if channel == skip:
                continue
            inbox = self._inboxes.get(channel) if here else None
            if inbox is None:
                others.append(channel)
                continue
            if inbox.full():
                inbox.get_nowait()
            inbox.put_nowait(dict(message))
        return others
