"""Make the engine tests importable however pytest is started (no tests/__init__.py)."""

from __future__ import annotations

import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
for _p in (_HERE.parent.parent, _HERE):
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))
