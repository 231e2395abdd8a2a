"""server.gc_tuning: the daphne process raises the young threshold and freezes its startup heap."""

from __future__ import annotations

import subprocess
import sys

from tests.live_server import ROOT, server_env

PROBE = (
    "import gc, server.asgi, django.urls as u; "
    "print(gc.get_freeze_count(), 'games.api.views' in sys.modules, gc.get_threshold()[0])"
)


def _probe(tmp_path, **env: str) -> tuple[int, bool, int]:  # noqa: ANN001
    out = subprocess.run(
        [sys.executable, "-c", "import sys; " + PROBE],
        cwd=ROOT,
        env=server_env(tmp_path / "db.sqlite3", **env),
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return int(out[0]), out[1] == "True", int(out[2])


def test_loading_the_asgi_app_loads_the_views_and_freezes_the_heap(tmp_path):  # noqa: ANN001
    frozen, views_loaded, gen0 = _probe(tmp_path)
    assert frozen > 10_000 and views_loaded and gen0 == 10_000


def test_gc_freeze_0_leaves_the_heap_alone(tmp_path):  # noqa: ANN001
    frozen, _, _ = _probe(tmp_path, GC_FREEZE="0")
    assert frozen == 0


def test_gc_gen0_threshold_sets_the_young_threshold(tmp_path):  # noqa: ANN001
    _, _, gen0 = _probe(tmp_path, GC_GEN0_THRESHOLD="700")
    assert gen0 == 700
