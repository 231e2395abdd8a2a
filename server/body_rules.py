"""The one rule for a request body the API will not read, with no Django import.

server.daphne_server applies it from a request's headers before Django is set up (it is
imported by the worker before the application, and so before the settings are configured);
server.middleware applies it inside Django for other servers.
"""

from __future__ import annotations


def body_refusal(length: int | None, limit: int) -> tuple[str, str, int] | None:
    """Why a body of `length` bytes (None: chunked, its size unknown) is refused, as
    (code, detail, status), or None if it is not."""
    if length is None:
        return "length_required", "Send the body with a Content-Length, not chunked.", 411
    if length > limit:
        return "too_large", f"Request body is {length} bytes; the limit is {limit}.", 413
    return None
