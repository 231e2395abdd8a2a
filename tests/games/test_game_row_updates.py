"""A move rewrites its game's row; no index may cover a column it changes.

On PostgreSQL an update that changes no indexed column can be a heap-only tuple (HOT) update:
the new row version goes into the same page, no index gets a new entry, and the dead version is
pruned in the page without waiting for vacuum. An index over a column a move changes (the
leaderboard's ordered index over `version`, `foundation_cards`, `seconds` did, even though it
was partial on ranked games) turns every move of every game into a new entry in every index of
the table, and the table and its indexes bloat between vacuums.
"""

from __future__ import annotations

import os

import pytest
from django.db import connection

from games import services
from games.models import Game
from tests.batches import legal

pytestmark = pytest.mark.django_db


def _row(game_id: int) -> dict:
    return Game.objects.filter(pk=game_id).values().get()


def _indexed_columns() -> set[str]:
    with connection.cursor() as cursor:
        constraints = connection.introspection.get_constraints(cursor, Game._meta.db_table)
    return {
        column
        for info in constraints.values()
        if info["index"] or info["unique"] or info["primary_key"]
        for column in info["columns"]
    }


def _play_one_move(user) -> tuple[int, set[str]]:  # noqa: ANN001
    """A practice game after one legal move, and the columns of its row that the move changed."""
    game = services.start_practice(user, "spanish", 5)
    before = _row(game.pk)
    services.play_move(game.pk, user, legal(game)[0], 0)
    after = _row(game.pk)
    return game.pk, {column for column in before if before[column] != after[column]}


def test_a_move_changes_no_indexed_column_of_its_game(user):
    _, changed = _play_one_move(user)
    assert {"version", "state"} <= changed
    assert not changed & _indexed_columns(), "an index covers a column every move rewrites"


@pytest.mark.skipif(not os.environ.get("DATABASE_URL"), reason="DATABASE_URL not set")
@pytest.mark.postgres
def test_a_move_updates_its_game_row_in_place_on_postgresql(user):
    """The test's transaction is still open, so its own counters say how the row was updated."""

    def counts() -> tuple[int, int]:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT pg_stat_get_xact_tuples_updated(%s::regclass), "
                "pg_stat_get_xact_tuples_hot_updated(%s::regclass)",
                [Game._meta.db_table] * 2,
            )
            return cursor.fetchone()

    updated, hot = counts()
    _play_one_move(user)
    assert counts() == (updated + 1, hot + 1)


@pytest.mark.skipif(not os.environ.get("DATABASE_URL"), reason="DATABASE_URL not set")
@pytest.mark.postgres
def test_game_pages_keep_room_for_a_rows_next_version_on_postgresql():
    """A HOT update needs room on the row's own page: a game inserted on a page that inserts
    had filled made its first move a new entry in every index (seen in CI, once the row grew a
    column). Pages of the games table are filled to 70 % (migration 0008)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT reloptions FROM pg_class WHERE oid = %s::regclass", [Game._meta.db_table]
        )
        (options,) = cursor.fetchone()
    assert "fillfactor=70" in (options or [])
