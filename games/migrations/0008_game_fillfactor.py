# A game's row is rewritten by every move: on PostgreSQL its pages keep room for the new version
# (fillfactor), so the update stays heap-only (HOT) even on a page that inserts had filled.

from django.db import migrations

# A row's in-line part is at most about 2 KB (PostgreSQL moves larger values out to TOAST):
# 30 % of an 8 KB page always holds one more version of any row on it.
FILLFACTOR = 70


def _alter_games_table(change: str):  # noqa: ANN202
    """A migration step that alters the games table's storage on PostgreSQL (no other
    database has the option)."""

    def step(apps, schema_editor):  # noqa: ANN001, ANN202
        if schema_editor.connection.vendor == "postgresql":
            table = schema_editor.quote_name(apps.get_model("games", "Game")._meta.db_table)
            schema_editor.execute(f"ALTER TABLE {table} {change}")

    return step


set_fillfactor = _alter_games_table(f"SET (fillfactor = {FILLFACTOR})")
reset_fillfactor = _alter_games_table("RESET (fillfactor)")


class Migration(migrations.Migration):
    dependencies = [("games", "0007_practice_deal_chosen")]

    operations = [migrations.RunPython(set_fillfactor, reset_fillfactor)]
