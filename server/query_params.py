"""Whole numbers from a request's query string, read one way everywhere."""

from __future__ import annotations

from rest_framework.request import Request

from server.errors import AppError


def whole_number(request: Request, name: str, default: int, low: int, high: int) -> int:
    """`name`'s value: ASCII digits only (no sign, space or other script's digits), from `low`
    to `high`; `default` when absent. Else a 400 `bad_request` that names the range. The
    length is checked before the number is read: Python refuses to read an int of more than
    4,300 digits (it was a 500)."""
    text = request.query_params.get(name)
    if text is None:
        return default
    digits = text.lstrip("0") or "0"
    if not (text.isascii() and text.isdigit() and len(digits) <= len(str(high))) or not (
        low <= int(digits) <= high
    ):
        raise AppError("bad_request", f"{name} is a whole number from {low} to {high}.")
    return int(digits)
