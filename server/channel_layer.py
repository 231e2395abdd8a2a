"""The embedded channel layer: channels' in-memory layer with cheaper housekeeping.

`InMemoryChannelLayer` sweeps every channel and every group for expired entries on each
`receive` and `group_send`, and fans a group send out through one task per member. With a
hundred sockets open, each move paid for two full sweeps and a task, which made the layer a
tenth of the server's work. Here the sweep runs at most once per `clean_interval` (messages
expire after a minute, so being a second late to drop one changes nothing), and a group send
puts the message on each member's queue directly: `send` never waits, so nothing is lost.
A group message may name one channel to leave out (`"exclude"`, the socket that already has
the frame); other layers deliver it there too, and the consumer drops it.
Used only when REDIS_URL is unset (one process); production uses channels_redis.
"""

from __future__ import annotations

import contextlib
import time

from channels.exceptions import ChannelFull
from channels.layers import InMemoryChannelLayer


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
