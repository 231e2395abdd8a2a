"""What the API takes in: request bodies read one way, with fields that take JSON's own types
only, as the WebSocket does.

DRF's fields coerce: `"v": "12"` became 12 and `"move": 5` became "5". The API speaks JSON
only (no form parser), so a client that sends the wrong type has a bug, and hearing it at once
(400 `invalid`, naming the field) beats a move that happens to work over REST and is refused
over the socket.
"""

from __future__ import annotations

import codecs
import json
from typing import Any

from rest_framework import serializers
from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser, get_encoding
from rest_framework.request import Request
from rest_framework.utils.json import strict_constant


class DuplicateKey(ValueError):
    """An object names a key twice. JSON parsers disagree on which value counts (Python's and
    orjson keep the last, others the first), so a body read one way by a proxy or a log and
    another by the server would mean two things: it is refused, not guessed."""


def _unique_object(pairs: list[tuple[str, Any]]) -> dict:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise DuplicateKey(f'the key "{key[:32]}" appears twice in one object')
            seen.add(key)
    return obj


def loads_unique(text: str) -> Any:
    """`text` as JSON, refusing NaN and Infinity (not JSON) and a key repeated in an object
    (DuplicateKey); a ValueError says what is wrong and where."""
    return json.loads(text, parse_constant=strict_constant, object_pairs_hook=_unique_object)


def check_unique_keys(text: str, keys: int) -> None:
    """Raise DuplicateKey if an object in `text` names a key twice, where `keys` is how many
    keys the parsed objects the caller reads hold. Every key is followed by a colon, so a text
    with no more colons than that repeats none, and is not read again: a socket's frames (a
    move's has five keys and five colons) pay a count, not a second parse."""
    if text.count(":") > keys:
        try:
            loads_unique(text)
        except DuplicateKey:
            raise
        except (ValueError, RecursionError):
            pass  # read once already by the caller's parser: nothing else to say about it


class StrictJSONParser(JSONParser):
    """DRF's JSON parser (whose errors say where the JSON broke), refusing a key named twice,
    minus two errors that were not a client's to read: a body nested a thousand deep made the
    decoder raise RecursionError (a 500), and for a 5000-digit number DRF passed on Python's
    advice to call `sys.set_int_max_str_digits`."""

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        """DRF's parse (its charset check, NaN refused), with a key named twice in an object
        refused as well (DuplicateKey)."""
        encoding = get_encoding(parser_context or {})
        try:
            return loads_unique(codecs.getreader(encoding)(stream).read())
        except RecursionError:
            raise ParseError("JSON parse error - the body nests too deep.") from None
        except ValueError as exc:
            if "int_max_str_digits" in str(exc):
                raise ParseError("JSON parse error - a number has too many digits.") from None
            raise ParseError(f"JSON parse error - {exc}") from None


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
