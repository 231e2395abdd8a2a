# A game's row is rewritten by every move: on PostgreSQL its pages keep room for the new version
# (fillfactor), so the update stays heap-only (HOT) even on a page that inserts had filled.

from django.db import migrations

# A row's in-line part is at most about 2 KB (PostgreSQL moves larger values out to TOAST):
# 30 % of an 8 KB page always holds one more version of any row on it.
FILLFACTOR = 70


def set_fillfactor(apps, schema_editor):  # noqa: ANN001, ANN201
    if schema_editor.connection.vendor == "postgresql":
        table = schema_editor.quote_name(apps.get_model("games", "Game")._meta.db_table)
        schema_editor.execute(f"ALTER TABLE {table} SET (fillfactor = {FILLFACTOR})")


def reset_fillfactor(apps, schema_editor):  # noqa: ANN001, ANN201
    if schema_editor.connection.vendor == "postgresql":
        table = schema_editor.quote_name(apps.get_model("games", "Game")._meta.db_table)
        schema_editor.execute(f"ALTER TABLE {table} RESET (fillfactor)")


class Migration(migrations.Migration):
    dependencies = [("games", "0007_practice_deal_chosen")]

    operations = [migrations.RunPython(set_fillfactor, reset_fillfactor)]
