"""Boards follow the attempts on them, however those end: deleted in the admin too."""

from __future__ import annotations

import threading

from django.db import transaction

_deleted = threading.local()  # the challenges whose boards lost attempts, per thread


def ranked_game_deleted(sender: type, instance, **kwargs: object) -> None:  # noqa: ANN001
    """A ranked attempt deleted (alone, or with its player) leaves its board with fewer
    entries than its sockets have shown, which they took for an old board and dropped: its
    board is pushed as `shrunk` once the delete commits, once per board however many of its
    attempts went (a player's deletion takes one attempt from each of their days)."""
    if not instance.ranked or instance.daily_id is None:
        return
    if not hasattr(_deleted, "ids"):
        _deleted.ids = set()
    _deleted.ids.add(instance.daily_id)
    transaction.on_commit(_publish_shrunk_boards, robust=True)


def _publish_shrunk_boards() -> None:
    """Every board a committed delete took attempts from (the first callback pushes them all;
    those after find none left)."""
    from games.leaderboards import publish_board
    from games.models import DailyChallenge

    ids = getattr(_deleted, "ids", set())
    _deleted.ids = set()
    for daily in DailyChallenge.objects.filter(pk__in=ids):
        publish_board(daily, shrunk=True)
