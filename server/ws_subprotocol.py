"""The subprotocols of a WebSocket handshake, as a browser page on another site signs in.

A page's WebSocket can carry no Authorization header and, from another site, no cookie of this
one; the list of subprotocols is the one header its script fills. So such a page offers its
token there, beside the protocol's name (server.ws_auth reads the key).
"""

from __future__ import annotations

# The subprotocol a client offers beside its token, and the one the server accepts with.
SUBPROTOCOL = "solitaire-arena"
TOKEN_SUBPROTOCOL = "token."  # + the key


def offered_token(scope: dict) -> str | None:
    """The key a handshake offers as a subprotocol (`token.<key>`), if it offers one."""
    for offered in scope.get("subprotocols") or ():
        if offered.startswith(TOKEN_SUBPROTOCOL):
            return offered[len(TOKEN_SUBPROTOCOL) :]
    return None


def chosen_subprotocol(scope: dict) -> str | None:
    """What the server accepts a handshake with: `solitaire-arena` if offered, else a token
    offered alone (a browser fails a handshake that offered subprotocols and got none back),
    else none, as before subprotocols were read."""
    offered = scope.get("subprotocols") or ()
    if SUBPROTOCOL in offered:
        return SUBPROTOCOL
    return next((p for p in offered if p.startswith(TOKEN_SUBPROTOCOL)), None)
