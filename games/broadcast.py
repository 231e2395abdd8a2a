"""Fan-out through the channel layer, so watchers on any server process see every change."""

from __future__ import annotations

import json
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer


def game_group(game_id: int) -> str:
    return f"game.{game_id}"


def encode(frame: dict[str, Any]) -> str:
    """A frame's wire text: compact JSON, dates as ISO strings."""
    return json.dumps(frame, separators=(",", ":"), default=str)


async def send_to_game(
    game_id: int, frame: dict, exclude: str | None = None, text: str | None = None
) -> None:
    """Send one frame to every socket of a game; `exclude` is a channel already answered.

    The frame travels encoded (`text`, if the caller has it already): the layer copies or
    serialises a message per receiver, and a string is the cheapest thing to copy, and every
    receiver sends the same bytes without encoding them again.
    """
    layer = get_channel_layer()
    if layer is not None:
        await layer.group_send(
            game_group(game_id),
            {
                "type": "game.frame",
                "text": encode(frame) if text is None else text,
                "t": frame["t"],
                "v": frame.get("v"),
                "exclude": exclude,
            },
        )


def send_to_game_sync(game_id: int, frame: dict) -> None:
    async_to_sync(send_to_game)(game_id, frame)
