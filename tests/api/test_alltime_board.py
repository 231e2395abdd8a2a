"""The all-time board's ranks: players equal in everything it ranks by share a rank."""

from __future__ import annotations

import pytest

from games.leaderboards import alltime_board
from games.models import VariantRecord

pytestmark = pytest.mark.django_db

# (wins, best par ratio, longest streak) per player, in the order the board lists them.
RECORDS = [
    (5, 1.0, 3), (5, 1.0, 3), (5, 1.0, 2), (4, 1.0, 9), (4, 1.0, 9), (4, 1.0, 9), (0, 0.5, 0),
]  # fmt: skip
RANKS = [1, 1, 3, 4, 4, 4, 7]


@pytest.fixture
def records(make_user) -> None:  # noqa: ANN001
    for wins, ratio, streak in RECORDS:
        VariantRecord.objects.create(
            user=make_user(), variant="spanish", played=9, wins=wins,
            best_par_ratio=ratio, best_streak=streak,
        )  # fmt: skip


@pytest.mark.usefixtures("records")
def test_equal_records_share_a_rank_and_the_next_rank_skips(api) -> None:  # noqa: ANN001
    entries = api.get("/api/leaderboards/spanish").json()["entries"]
    assert [e["rank"] for e in entries] == RANKS
    assert [(e["wins"], e["best_par_ratio"], e["longest_streak"]) for e in entries] == RECORDS


@pytest.mark.usefixtures("records")
@pytest.mark.parametrize("page_size", [1, 2, 4])
def test_a_page_that_starts_inside_a_tie_ranks_as_the_whole_board(page_size: int) -> None:
    pages = [alltime_board("spanish", p, page_size) for p in range(1, 8 // page_size + 2)]
    assert [e["rank"] for page in pages for e in page["entries"]] == RANKS


@pytest.mark.usefixtures("records")
def test_a_page_reads_its_players_only_in_the_order_of_an_index() -> None:
    """The board of a variant has a record per player who ever played it: joined to every
    player and sorted whole, page 100 of 5,000 took 7.4 ms of PostgreSQL's time, against
    0.7 read in order from record_alltime_order_idx, with the names of its 20 rows only."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as queries:
        page = alltime_board("spanish", 2, 2)
    assert [e["rank"] for e in page["entries"]] == RANKS[2:4]
    assert all(e["username"] for e in page["entries"])
    (ranked,) = [q["sql"] for q in queries.captured_queries if "LIMIT" in q["sql"]]
    assert 'ON ("games_variantrecord".' not in ranked  # no player joined to the records
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:  # on a few rows a sort is cheaper: say it is not
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("SET LOCAL enable_sort = off")
        cursor.execute(f"EXPLAIN {ranked}")
        plan = "\n".join(line for (line,) in cursor.fetchall())
    assert "record_alltime_order_idx" in plan and "Sort" not in plan, plan
