"""What the OpenAPI schema says about errors: for each endpoint, the statuses and codes it can
really answer with.

Every endpoint used to list the same five error responses, so the schema promised a 409 on
reads, a 401 on the public leaderboard, and said nothing of the auth endpoints' 409
`username_taken` or 429. Each view now names its codes, and the status comes from the one
code-to-status map the exception handler uses (server.errors.CODE_STATUS), so the two cannot
disagree. A public endpoint still checks a token sent to it: a wrong one is a 401 there too
(`BAD_TOKEN`), though no token at all is fine.
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse
from rest_framework import serializers

from server.errors import CODE_STATUS


class ErrorSerializer(serializers.Serializer):
    code = serializers.CharField(help_text="A stable code to switch on, e.g. `illegal_move`.")
    detail = serializers.CharField(help_text="A sentence for people.")
    fields = serializers.DictField(
        child=serializers.CharField(),
        required=False,
        help_text="With `invalid`: what is wrong with each field of the body.",
    )
    v = serializers.IntegerField(
        required=False, help_text="With a refused write: the game's current version."
    )


# A public endpoint sent a wrong (unknown or revoked) token: refused, not served anonymously.
BAD_TOKEN = ("authentication_failed",)
# Any endpoint behind a token or session: no credentials, or a wrong token.
SIGNED_IN = ("not_authenticated", *BAD_TOKEN)
# A game by id: missing, or (with WATCH_AFTER_OWN_ATTEMPT) someone else's on today's deal.
GAME_READ = (*SIGNED_IN, "forbidden", "not_found")
# A write to a game: a malformed body, a refused move, a stale version, a finished game.
GAME_WRITE = (*GAME_READ, "invalid", "illegal_move", "stale_version", "game_over")
# A challenge by date and variant in the URL.
CHALLENGE = ("bad_date", "unknown_variant", "not_found", "unavailable")
# A page of a leaderboard.
PAGING = ("bad_request",)
# An endpoint that reads a JSON body: a body that is not JSON, not sent as JSON, over the size
# limit, or sent chunked (server.middleware.BodySizeLimitMiddleware).
BODY = ("bad_json", "unsupported_media_type", "too_large", "length_required")


def whole_number_param(name: str, low: int, high: int, description: str) -> OpenApiParameter:
    """A query parameter read with server.query_params.whole_number: its range is in the
    schema, so a client (or a fuzzer) knows which numbers are a 400 before it sends one."""
    return OpenApiParameter(
        name, {"type": "integer", "minimum": low, "maximum": high}, description=description
    )


def errors(*codes: str) -> dict[int, OpenApiResponse]:
    """The error responses for these codes, one per status, each naming its codes."""
    by_status: dict[int, list[str]] = {}
    for code in codes:
        names = by_status.setdefault(CODE_STATUS[code], [])
        if code not in names:
            names.append(code)
    return {
        status: OpenApiResponse(
            ErrorSerializer, description="`code`: " + ", ".join(f"`{c}`" for c in names)
        )
        for status, names in sorted(by_status.items())
    }


_UNSAFE = {"post", "put", "patch", "delete"}
_CSRF = "a write signed in by session cookie that carries no CSRF token"
_AT_ONCE = (
    "more of your requests in progress at once than HTTP_REQUESTS_PER_CLIENT, 16 by default; "
    "`Retry-After: 1`. A client that waits for each answer never gets it"
)


_DATABASE_AWAY = (
    "the database cannot be reached just now; `Retry-After: 1`. A write may have been saved "
    "all the same: read the game before sending it again"
)


_ERROR_BODY = {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}


def document_common_refusals(result: dict, **_: object) -> dict:
    """A postprocessing hook for the refusals any operation of a kind can give, whatever its
    view raises itself, added here once instead of in each view's list: 406
    `not_acceptable` from every operation (an Accept header that admits no JSON: DRF's
    content negotiation), and 403 `forbidden` from every write that takes a session cookie
    (Django's CSRF check, which DRF's session authentication runs); 429 `rate_limited`
    from every operation (server.http_limit: a client's requests
    past HTTP_REQUESTS_PER_CLIENT in progress at once); and 503 `unavailable` from every
    operation but the health check while the database cannot be reached
    (server.errors.api_exception_handler)."""
    for path, operations in result.get("paths", {}).items():
        for method, operation in operations.items():
            responses = operation.setdefault("responses", {})
            _add_refusal(responses, "429", "`rate_limited`", _AT_ONCE)
            if path != "/api/health":  # which says so in a body of its own
                _add_refusal(responses, "503", "`unavailable`", _DATABASE_AWAY)
                responses["503"].setdefault("headers", {"Retry-After": _RETRY_AFTER})
            responses["429"].setdefault("headers", {"Retry-After": _RETRY_AFTER})
            # The server's own, before any view (server.daphne_server, server.middleware): a
            # body sent chunked, or over the size limit, on any path, whether or not the
            # operation reads one. The operations that read a body list them already (BODY).
            responses.setdefault("411", _server_refusal("length_required", "a chunked body"))
            responses.setdefault("413", _server_refusal("too_large", "a body over 64 KiB"))
            responses.setdefault(
                "406",
                {
                    "description": "`code`: `not_acceptable` (an Accept header, or a "
                    "`?format=`, that admits no JSON)",
                    "content": _ERROR_BODY,
                },
            )
            if method not in _UNSAFE:
                continue
            if not any("cookieAuth" in scheme for scheme in operation.get("security", ())):
                continue
            _add_refusal(responses, "403", "`forbidden`", _CSRF)
    return result


_RETRY_AFTER = {"description": "seconds to wait", "schema": {"type": "integer"}}


def _server_refusal(code: str, why: str) -> dict:
    return {
        "description": f"`code`: `{code}` ({why}: the server's refusal on every path)",
        "content": _ERROR_BODY,
    }


def _add_refusal(responses: dict, status: str, code: str, why: str) -> None:
    """A status the operation lists already (for its own reasons) gets this one's reason too."""
    refusal = responses.get(status)
    if refusal is None:
        responses[status] = {"description": f"`code`: {code} ({why})", "content": _ERROR_BODY}
    else:
        refusal["description"] += f" ({code} also: {why})"


# OpenAPI 3.0's null: `nullable` admits null only beside a `type` in the same schema object (the
# 3.0.3 clarification), and an `enum` must then list null too.
_NULL = {"type": "object", "nullable": True, "enum": [None]}


def nullable_refs(result: dict, **_: object) -> dict:
    """A postprocessing hook for the fields that are another schema or null (a game's `daily`,
    a challenge's `attempt`, a board's `me`). drf-spectacular writes them
    `{allOf: [$ref], nullable: true}`, with no `type` for `nullable` to extend, so a strict
    validator (openapi-core) refused every real null there, and the schema's own examples. Here
    they are `{anyOf: [$ref, null]}`, with null written as 3.0 can say it."""
    _rewrite_nullable(result)
    return result


def _rewrite_nullable(node: object) -> None:
    if isinstance(node, list):
        for item in node:
            _rewrite_nullable(item)
        return
    if not isinstance(node, dict):
        return
    for item in node.values():
        _rewrite_nullable(item)
    if node.get("nullable") and "type" not in node and "allOf" in node:
        del node["nullable"]
        node["anyOf"] = [*node.pop("allOf"), dict(_NULL)]
