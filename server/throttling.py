"""Request limits that let requests through while the cache that counts them is away.

The limits' counts live in the cache: Redis, with REDIS_URL. Redis away for a moment (a
restart) made every limited request fail with 500, whatever else it needed: signing up and in,
starting a game, a hint. A limit is a guard against abuse over minutes, so while its counts
cannot be read it lets the request through, and says so in the log once a minute, not once a
request (server.stores.log_away); the database, which holds everything that matters, is not
involved.
"""

from __future__ import annotations

import logging
from typing import Any

from server.stores import STORE_ERRORS, log_away

log = logging.getLogger(__name__)


class OpenWhileCacheAway:
    """A DRF throttle's mixin: its limit lapses while its counts cannot be read or kept."""

    scope: str

    def allow_request(self, request: Any, view: Any) -> bool:
        try:
            return super().allow_request(request, view)  # type: ignore[misc]
        except STORE_ERRORS as exc:
            log_away(f"The {self.scope} limit (requests let through)", exc, log)
            return True
