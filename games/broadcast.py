"""Fan-out through the channel layer, so watchers on any server process see every change."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterable
from typing import Any, NamedTuple

import orjson
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

from server.errors import log_failure
from server.stores import STORE_ERRORS, log_away

logger = logging.getLogger(__name__)


def game_group(game_id: int) -> str:
    return f"game.{game_id}"


_ENCODE_OPTIONS = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_NON_STR_KEYS


def encode(frame: dict[str, Any]) -> str:
    """A frame's wire text: compact JSON, anything else (dates) as `str()` gives it.

    orjson, with the options that make it write what `json.dumps(frame, separators=(",", ":"),
    default=str)` wrote: a state frame took 9 µs to encode with the standard library and takes
    under 1 µs here, once per move on the event loop.
    """
    return orjson.dumps(frame, default=str, option=_ENCODE_OPTIONS).decode()


# A state's stages within one version, in the order they come (stage, state_order).
PLAYING, DAY_OVER, ENDED = 0, 1, 2


class WireFrame(NamedTuple):
    """A frame as it goes out: its JSON text, with its type and version beside it for the
    sockets that filter on them (games.consumers.GameConsumer.game_frame).

    Frames are encoded once, where they are made (a move's, in its batch), and travel as
    text to the mover and to every socket of the group: the channel layer copies or serialises
    a message per receiver, a string is the cheapest thing to copy, and every receiver sends
    the same text without encoding it again.
    """

    t: str
    v: int | None
    text: str
    # Where a state stands within its version (`stage`): a resign ends a game, and a day's end
    # closes a ranked attempt left open, without changing its version, so a state of the same
    # version at an earlier stage is older (state_order).
    stage: int = PLAYING


def wire(frame: dict[str, Any]) -> WireFrame:
    return WireFrame(frame["t"], frame.get("v"), encode(frame), stage(frame))


def stage(frame: dict[str, Any]) -> int:
    """Where a frame stands within its version: ENDED for a state of a game that has ended,
    DAY_OVER for one of an attempt its day's end closed (still playing, no legal moves),
    else PLAYING (any frame that is not a state too)."""
    if frame["t"] != "state":
        return PLAYING
    data = frame["d"]
    if data["status"] != "playing":
        return ENDED
    return DAY_OVER if data.get("day_over") else PLAYING


def state_order(v: int, stage: int) -> tuple[int, int]:
    """Where a state stands in its game's history: by version, and within one version by its
    stage (the play, then the day's end, then the ending). Two writers' states can reach a
    socket in either order (a move's batch and a resign on a thread, each fanning out when it
    has committed); a socket that has one never shows an earlier one after it, nor the same
    one again."""
    return (v, stage)


def may_reach_others(layer: Any, game_id: int, exclude: str | None) -> bool:
    """Whether a frame of this game sent leaving `exclude` out could reach another socket.
    False only where the layer can tell at once (the in-process layer knows its groups), so a
    send to a game nobody else has open, nearly every move's, costs no group send. Other
    layers answer True and make the check in their `group_send`."""
    check = getattr(layer, "reaches_others", None)
    return check is None or check(game_group(game_id), exclude)


# A group send waits at most this long for the channel layer: a mover's socket handles its next
# frame only after its fan-out, and a Redis that hung held each move of a socket for
# REDIS_SOCKET_TIMEOUT (15 s). After a send that timed out, fan-outs are skipped for
# BREAK_SECONDS (a Redis that refuses fails at once, and costs no wait to try). Watchers get
# what they missed once the layer is back (RedisLayer._rejoin), in the next state, or by `sync`.
SEND_SECONDS = 1.0
BREAK_SECONDS = 5.0
_broken_until = 0.0
_skipped = 0


async def send_to_group(layer: Any, group: str, message: dict) -> None:
    """`layer`'s group send, given up after SEND_SECONDS (TimeoutError)."""
    async with asyncio.timeout(SEND_SECONDS):
        await layer.group_send(group, message)


async def send_to_game(game_id: int, frame: WireFrame, exclude: str | None = None) -> None:
    """Send one frame to every socket of a game; `exclude` is a channel already answered."""
    layer = get_channel_layer()
    if layer is not None and may_reach_others(layer, game_id, exclude):
        message = {
            "type": "game.frame",
            "text": frame.text,
            "t": frame.t,
            "v": frame.v,
            "stage": frame.stage,
            "exclude": exclude,
        }
        # Timed only where a send goes out: nearly every move's has no other socket to reach.
        await send_to_group(layer, game_group(game_id), message)


def send_to_game_sync(game_id: int, frame: WireFrame) -> None:
    async_to_sync(send_to_game)(game_id, frame)


async def fan_out(game_id: int, frames: Iterable[WireFrame], exclude: str | None = None) -> None:
    """Send a committed write's frames to the game's other sockets.

    A failure here (the channel layer unreachable for a moment) is logged, not raised: the
    write has committed, and the player who made it must be told so, not get an error or a
    closed socket for a move that stands. A watcher that missed a frame has the whole position
    again in the next state it gets, or at once with `sync`. An outage is a line a minute
    (server.stores.log_away), not a traceback a move.
    """
    global _broken_until, _skipped
    if _broken_until and time.monotonic() < _broken_until:
        _skipped += 1
        return
    try:
        for frame in frames:
            await send_to_game(game_id, frame, exclude)
    except TimeoutError as exc:
        _broken_until = time.monotonic() + BREAK_SECONDS
        log_away(f"Fan-outs (no answer in {SEND_SECONDS:g} s; resting)", exc, logger)
    except Exception as exc:  # noqa: BLE001 - the write stands whatever the layer says
        away = "Fan-outs of committed writes to watchers"
        log_failure(logger, exc, away, "Game %s: %s failed", game_id, away, stores=STORE_ERRORS)
    else:
        if _broken_until:
            logger.warning("Fan-outs resumed; %d were skipped", _skipped)
            _broken_until, _skipped = 0.0, 0


fan_out_sync = async_to_sync(fan_out)
