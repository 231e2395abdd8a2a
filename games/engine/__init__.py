"""Solitaire Arena's rules engine: pure Python, no Django (docs/engine-contract.md).

>>> s = new_game("countess", 7)
>>> s.view()["stock"]
{'count': 48, 'top': None}
>>> "draw" in s.legal_moves()
True
"""

from __future__ import annotations

from .errors import EngineError
from .state import UNDO, State, deal_layout, new_game, replay
from .variants import VARIANTS, Variant

__all__ = [
    "UNDO",
    "EngineError",
    "VARIANTS",
    "Variant",
    "new_game",
    "replay",
    "deal_layout",
    "State",
]
