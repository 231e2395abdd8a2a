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

    async def group_send(self, group: str, message: dict) -> None:
        assert isinstance(message, dict), "Message is not a dict"
        self.require_valid_group_name(group)
        self._clean_expired()
        skip = message.get("exclude")
        for channel in list(self.groups.get(group, ())):
            if channel == skip:
                continue  # already answered (see games.broadcast); it would only drop it
            # As in the base layer, a full channel misses this message.
            with contextlib.suppress(ChannelFull):
                await self.send(channel, message)


class RedisLayer(RedisChannelLayer):
    """channels_redis' layer, minus the group send that nobody else would hear.

    Most games are played with nobody watching: the only member of the game's group is the
    mover's own socket, which already has its frame. channels_redis spends four round trips on
    a group send (expire, list, trim, deliver), and then the mover's process pops the message
    only to drop it: measured, a move cost the server 1.1-1.2 ms of CPU on Redis against 0.5 ms
    on the in-process layer. Here a send that names a channel to leave out (`"exclude"`) first
    reads at most two members, one round trip, and stops if there is no one else.

    No watcher is missed for it: a game socket joins the group before it loads the state it
    starts from (games.consumers), and the move's send starts after its commit, so a socket
    that this read misses joined after the commit and loads the move with its first state.
    """

    async def group_send(self, group: str, message: dict) -> None:
        skip = message.get("exclude")
        if skip is not None:
            connection = self.connection(self.consistent_hash(group))
            members = await connection.zrange(self._group_key(group), 0, 1)
            if all(member.decode() == skip for member in members):
                return
        await super().group_send(group, message)
