"""What the API takes in: request bodies read one way, with fields that take JSON's own types
only, as the WebSocket does.

DRF's fields coerce: `"v": "12"` became 12 and `"move": 5` became "5". The API speaks JSON
only (no form parser), so a client that sends the wrong type has a bug, and hearing it at once
(400 `invalid`, naming the field) beats a move that happens to work over REST and is refused
over the socket.
"""

from __future__ import annotations

from typing import Any

from rest_framework import serializers
from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser
from rest_framework.request import Request


class StrictJSONParser(JSONParser):
    """DRF's JSON parser (whose errors say where the JSON broke), minus two that were not a
    client's to read: a body nested a thousand deep made the decoder raise RecursionError (a
    500), and for a 5000-digit number DRF passed on Python's advice to call
    `sys.set_int_max_str_digits`."""

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        try:
            return super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise ParseError("JSON parse error - the body nests too deep.") from None
        except ParseError as exc:
            if "int_max_str_digits" not in str(exc.detail):
                raise
            raise ParseError("JSON parse error - a number has too many digits.") from None


def validated(serializer_class: type[serializers.Serializer], request: Request) -> dict:
    """The request body checked by `serializer_class`: its data, or a 400 naming each field."""
    serializer = serializer_class(data=request.data)
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data


class StrictIntegerField(serializers.IntegerField):
    default_error_messages = {"invalid": "A JSON integer is required."}

    def to_internal_value(self, data: Any) -> int:
        if isinstance(data, bool) or not isinstance(data, int):
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictCharField(serializers.CharField):
    default_error_messages = {"invalid": "A JSON string is required."}

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)
