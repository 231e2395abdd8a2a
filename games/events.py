"""What the players hear after a write: the same frames for REST and WebSocket writers."""

from __future__ import annotations

import logging
from typing import Any

from django.db import DatabaseError

from games import selectors
from games.broadcast import WireFrame, wire
from games.services import Outcome

logger = logging.getLogger(__name__)


def state_frame(outcome: Outcome) -> dict[str, Any]:
    game = outcome.game
    view = selectors.state_view(game, outcome.state, last_move=outcome.move)
    return {"t": "state", "v": game.version, "d": view}


def result_frame(outcome: Outcome) -> dict[str, Any]:
    game = outcome.game
    return {
        "t": "result",
        "d": {
            "status": game.status,
            "moves": game.version,
            "seconds": game.seconds,
            "rank": _rank(game),  # PROTOCOL.md's order; the field it does not name comes after
            "foundation_cards": game.foundation_cards,
        },
    }


def _rank(game) -> int | None:  # noqa: ANN001
    """The attempt's rank, or None if the board cannot be read just now: the write has
    committed, and its answer must not fail for a figure the leaderboard shows as well."""
    try:
        return selectors.rank_of(game)
    except DatabaseError:
        logger.exception("Game %s: its rank could not be read for its result", game.pk)
        return None


def frames_for(outcome: Outcome) -> list[dict[str, Any]]:
    frames = [state_frame(outcome)]
    if outcome.finished:
        frames.append(result_frame(outcome))
    return frames


def wire_frames(outcome: Outcome) -> list[WireFrame]:
    """`frames_for`, encoded for the sockets."""
    return [wire(frame) for frame in frames_for(outcome)]
