"""The five games, in the order the contract lists them."""

from __future__ import annotations

from . import barricade, chinese_freecell, countess, portuguese, spanish
from .base import Variant

VARIANTS: dict[str, Variant] = {
    v.id: v
    for v in (
        portuguese.VARIANT,
        spanish.VARIANT,
        countess.VARIANT,
        barricade.VARIANT,
        chinese_freecell.VARIANT,
    )
}

__all__ = ["VARIANTS", "Variant"]
