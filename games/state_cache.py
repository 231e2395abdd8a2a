"""The engine states of recently played games, kept between moves in this process.

A move needs its game's engine `State`; building one from the stored JSON (decode, then
`State.from_dict`) was a fifth of a move's CPU. States here are keyed by game *and version*:
a version is written once and never reused (an undo makes a new version), so an entry whose
version matches the locked row is that row's state, whatever other processes have done. An
entry is put only after its transaction commits, never for a version that was rolled back, or
from a committed row read outside a write (services.remember: a game its owner opens a socket on).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.conf import settings

from games import engine

# version, engine state, state as stored, and the game row as it stood at that version
Entry = tuple[int, engine.State, dict[str, Any], Any]


class StateCache:
    """A bounded map game id -> (version, engine state, state as stored, game row).

    The row (a `Game` nobody changes: writers copy it) lets a batch whose every game is here
    skip the lock query and write with a version check instead (services.play_moves_async).

    An entry takes about 11 KB of a process's resident size (bench/soak.py: a worker grows
    about 55 MB while the 5,000 games of the default bound fill it, then levels off); a process
    rarely has more games in play at once, and a miss costs a decode and the lock query. The
    server's bound is GAME_STATE_CACHE.
    """

    def __init__(self, size: int = 5_000) -> None:
        self.size = size
        self.entries: dict[int, Entry] = {}

    def entries_for(self, game_ids: Iterable[int]) -> dict[int, Entry]:
        """The entries of these games as they are now: a writer that locks the games asks
        the database for the states it does not hold (services._lock_params), and then uses
        these very entries, whatever the cache does meanwhile."""
        get = self.entries.get  # one lookup each: a thread may put (and evict) meanwhile
        found = {}
        for i in game_ids:
            entry = get(i)
            if entry is not None:
                found[i] = entry
        return found

    def put(
        self, game_id: int, version: int, state: engine.State, stored: dict, game: Any = None
    ) -> None:
        """Keep `state` without its parents: a cached state that held every state before it
        grew by one per move, and each full garbage collection walked them all."""
        state = state.detached()
        if game is not None:
            game.engine_state = state  # the same position, without the states before it
        entries = self.entries
        entries.pop(game_id, None)  # re-inserted last: the oldest entries go first
        entries[game_id] = (version, state, stored, game)
        while len(entries) > self.size:
            try:
                oldest = next(iter(entries))
            except (RuntimeError, StopIteration):  # another thread changed it in between
                continue
            entries.pop(oldest, None)

    def offer(
        self, game_id: int, version: int, state: engine.State, stored: dict, game: Any
    ) -> bool:
        """Keep a game read outside any write (a socket's first state), unless this process
        holds that version or a later one already: a batch may have committed a later one
        between the read and now, and an older entry would only send its next move the slow
        way. Returns whether it was kept. The look and the put take no lock: two threads may
        race and keep the older, which costs a move the slow way, never a wrong answer (a batch
        uses an entry only at the version it locked in the database)."""
        entry = self.entries.get(game_id)
        if entry is not None and entry[0] >= version:
            return False
        self.put(game_id, version, state, stored, game)
        return True


states = StateCache(settings.GAME_STATE_CACHE)
