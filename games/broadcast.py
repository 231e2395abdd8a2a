"""Fan-out through the channel layer, so watchers on any server process see every change."""

from __future__ import annotations

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer


def game_group(game_id: int) -> str:
    return f"game.{game_id}"


async def send_to_game(game_id: int, frame: dict, exclude: str | None = None) -> None:
    """Send one frame to every socket of a game; `exclude` is a channel already answered."""
    layer = get_channel_layer()
    if layer is not None:
        await layer.group_send(
            game_group(game_id), {"type": "game.frame", "frame": frame, "exclude": exclude}
        )


def send_to_game_sync(game_id: int, frame: dict) -> None:
    async_to_sync(send_to_game)(game_id, frame)
