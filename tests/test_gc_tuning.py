"""server.gc_tuning: the daphne process freezes its startup heap, unless told not to."""

from __future__ import annotations

import subprocess
import sys

from tests.live_server import ROOT, server_env

PROBE = (
    "import gc, server.asgi, django.urls as u; "
    "print(gc.get_freeze_count(), 'games.api.views' in sys.modules)"
)


def _probe(tmp_path, **env: str) -> tuple[int, bool]:  # noqa: ANN001
    out = subprocess.run(
        [sys.executable, "-c", "import sys; " + PROBE],
        cwd=ROOT,
        env=server_env(tmp_path / "db.sqlite3", **env),
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return int(out[0]), out[1] == "True"


def test_loading_the_asgi_app_loads_the_views_and_freezes_the_heap(tmp_path):  # noqa: ANN001
    frozen, views_loaded = _probe(tmp_path)
    assert frozen > 10_000 and views_loaded


def test_gc_freeze_0_leaves_the_heap_alone(tmp_path):  # noqa: ANN001
    frozen, _ = _probe(tmp_path, GC_FREEZE="0")
    assert frozen == 0
