"""Cross-origin access to the API, for clients whose pages are served from other sites.

The API's credential is the `Authorization: Token` header, which a browser never adds by itself,
so a page elsewhere can do with the API only what its own user's token lets it. Without these
headers Chromium and Firefox refused every such request: a preflight (`OPTIONS` before a POST
with a JSON body or an Authorization header) got 401, and no answer could be read.

So every answer under /api/ says `Access-Control-Allow-Origin: *`, and a preflight is answered
204 with the methods and headers the API takes. Never with credentials: under `*` a browser
neither sends the session cookie in a cross-origin fetch that asks for it nor lets its page read
the answer, so a visitor's sign-in on this site (the session the project's own pages use, with
its CSRF check) stays out of reach of other sites. A client's WebSocket from another site signs
in with its token in a subprotocol (server.ws_auth), as a browser cannot set the header there.
"""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

API_PREFIX = "/api/"
ALLOW_ORIGIN = "*"
ALLOW_METHODS = "GET, HEAD, POST, DELETE"
ALLOW_HEADERS = "Authorization, Content-Type"
# Headers beyond the CORS-safelisted ones a page may read: the history's next page, a limit's
# wait, a refused token's scheme.
EXPOSE_HEADERS = "Link, Retry-After, WWW-Authenticate"
# How long a browser may keep a preflight's answer (Chromium keeps it at most 2 h).
PREFLIGHT_MAX_AGE = "7200"
# For answers sent before Django (server.http_limit, server.daphne_server): any path's.
RAW_HEADERS = (
    (b"access-control-allow-origin", ALLOW_ORIGIN.encode()),
    (b"access-control-expose-headers", EXPOSE_HEADERS.encode()),
)


def is_preflight(request: HttpRequest) -> bool:
    return (
        request.method == "OPTIONS"
        and "HTTP_ORIGIN" in request.META
        and "HTTP_ACCESS_CONTROL_REQUEST_METHOD" in request.META
    )


class CrossOriginMiddleware:
    """Answers an API preflight itself (it carries no credential, so a view would refuse it
    401), and marks every API answer readable from any origin."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if not request.path.startswith(API_PREFIX):
            return self.get_response(request)
        if is_preflight(request):
            response = HttpResponse(status=204)
            response["Access-Control-Allow-Methods"] = ALLOW_METHODS
            response["Access-Control-Allow-Headers"] = ALLOW_HEADERS
            response["Access-Control-Max-Age"] = PREFLIGHT_MAX_AGE
        else:
            response = self.get_response(request)
        response["Access-Control-Allow-Origin"] = ALLOW_ORIGIN
        response["Access-Control-Expose-Headers"] = EXPOSE_HEADERS
        return response
