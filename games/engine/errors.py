"""The one exception the engine raises for a caller's mistake.

Errors are values with a code so that REST and WebSocket report them the same way (DESIGN.md).
"""

from __future__ import annotations

#: Every code an EngineError may carry.
CODES = frozenset({"bad_move", "illegal_move", "unknown_variant", "bad_deal"})


class EngineError(Exception):
    """A refused request: ``code`` is machine-readable, ``message`` is for the player.

    >>> e = EngineError("illegal_move", "Only a King may move to an empty pile (P4)")
    >>> e.code, str(e)
    ('illegal_move', 'Only a King may move to an empty pile (P4)')
    """

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return f"EngineError({self.code!r}, {self.message!r})"
