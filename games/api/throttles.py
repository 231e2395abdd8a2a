"""Per-user request limits of the games API: each guards a request whose work a client could
otherwise ask for without end (DEFAULT_THROTTLE_RATES, server/settings.py)."""

from __future__ import annotations

from rest_framework.throttling import UserRateThrottle

from server.throttling import OpenWhileCacheAway


class NewGameThrottle(OpenWhileCacheAway, UserRateThrottle):
    """Games started per user (a practice game, a daily's practice copy): each is a row kept
    for good, and one user started 1,000 in 8 s, taking every place in the live list."""

    scope = "new_game"


class LiveThrottle(OpenWhileCacheAway, UserRateThrottle):
    """The live list reads up to 20,000 recent moves a request; a lobby asks every 10 s."""

    scope = "live"


class PositionThrottle(OpenWhileCacheAway, UserRateThrottle):
    """A page of positions replays the game from its deal: the work grows with how far into
    the game the page is, so a client may not ask for pages without end."""

    scope = "positions"


class HintThrottle(OpenWhileCacheAway, UserRateThrottle):
    """A hint is a solver run of up to a second of CPU on the event loop's process: without a
    limit a few clients asking in a loop slowed every socket of that worker (ping p95 166 ms)."""

    scope = "hint"
