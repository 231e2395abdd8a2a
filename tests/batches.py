"""A move batch with one of every case, shared by the tests of each path that writes batches."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from games import engine, services
from games.models import Game
from games.services import MoveRequest
from server.errors import AppError


def legal(game: Game) -> list[str]:
    return engine.State.from_dict(game.state).legal_moves()


# What each request of `mixed_batch` gets: the version it made, or its error code.
EXPECTED = [1, "illegal_move", 2, "stale_version", "forbidden", "not_found", "illegal_move", 1]


def kinds(results: list, version: Callable[[Any], int]) -> list:
    """Each result as EXPECTED lists it: its error's code, or the version `version` reads off
    it (an Outcome's game, or a socket answer's first item)."""
    return [r.code if isinstance(r, AppError) else version(r) for r in results]


@dataclass
class MixedBatch:
    requests: list[MoveRequest]
    a: Game  # gets two chained moves, then a stale third
    b: Game  # an illegal move, a bad one, then a legal one on v0
    theirs: Game  # another owner's game
    first: str
    second: str


def mixed_batch(user, other_user) -> MixedBatch:  # noqa: ANN001
    """Legal, illegal, chained, stale, forbidden, missing and malformed moves on three games."""
    a = services.start_practice(user, "portuguese", 1)
    b = services.start_practice(user, "spanish", 2)
    theirs = services.start_practice(other_user, "portuguese", 3)
    first = legal(a)[0]
    second = engine.State.from_dict(a.state).apply(first).legal_moves()[0]
    requests = [
        MoveRequest(a.pk, user, first, 0),
        MoveRequest(b.pk, user, "t0-t0", 0),  # illegal
        MoveRequest(a.pk, user, second, 1),  # sees the move before it
        MoveRequest(a.pk, user, second, 1),  # now stale
        MoveRequest(theirs.pk, user, legal(theirs)[0], 0),  # not the owner
        MoveRequest(999_999, user, "t0-f0", 0),  # no such game
        MoveRequest(b.pk, user, "x" * 40, 0),  # not a move string
        MoveRequest(b.pk, user, legal(b)[0], 0),  # still v0: the illegal one changed nothing
    ]
    return MixedBatch(requests, a, b, theirs, first, second)
