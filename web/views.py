from collections.abc import Callable
from functools import wraps
from pathlib import Path

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.csrf import csrf_exempt, ensure_csrf_cookie

from server.errors import handler404 as json_not_found

# The client's pages load scripts, styles and the suits' sprites from this server's own files,
# with no inline script or style, and talk to it alone (its API, its sockets): a page that ran a
# script injected by some future bug could neither run inline code nor send what it read
# elsewhere. The favicon is a data: URI. /api/docs (Swagger UI) has a policy of its own,
# API_DOCS_POLICY.
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self' {sockets}; object-src 'none'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'"
)

# Swagger UI at /api/docs: its script from this server's files (the page's setup script served
# apart, server.urls.DocsView), a fetch of the schema and "Try it out" to this server only; its
# page has an inline <style> of drf-spectacular's, so styles may be inline there.
API_DOCS_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; "
    "form-action 'self'; frame-ancestors 'none'"
)

# The admin (Django's own pages): its scripts and styles are its static files, with no inline
# script; its styles may be inline, which its scripts may set. Django sends no policy of its own.
ADMIN_POLICY = API_DOCS_POLICY


# The client's modules but app.js, which imports them: the page names them all as it loads, so
# the browser fetches them at once with app.js, not a level of imports per round trip (app.js,
# then game.js and the others, then cards.js and socket.js). Read from the app's own folder.
CLIENT_MODULES = sorted(
    f"web/{path.name}"
    for path in (Path(__file__).resolve().parent / "static" / "web").glob("*.js")
    if path.name != "app.js"
)


def with_csp(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Send the client's Content-Security-Policy with the page. Its sockets are named by
    scheme and host: browsers older than CSP 3 do not count ws: as 'self'."""

    @wraps(view)
    def wrapped(request: HttpRequest, *args: object, **kwargs: object) -> HttpResponse:
        response = view(request, *args, **kwargs)
        scheme = "wss" if request.is_secure() else "ws"
        sockets = f"{scheme}://{request.get_host()}"
        response["Content-Security-Policy"] = CONTENT_SECURITY_POLICY.format(sockets=sockets)
        return response

    return wrapped


@with_csp
@ensure_csrf_cookie
def index(request: HttpRequest) -> HttpResponse:
    """The single-page browser client; it talks to the server only through the public API."""
    return render(request, "web/index.html", {"modules": CLIENT_MODULES})


@csrf_exempt  # any method: a POST was refused by the CSRF check first, with its own 403 page
@with_csp
def not_found(request: HttpRequest, path: str = "") -> HttpResponse:
    """A path the site does not serve (the client's views live after the '#'). A browser gets a
    page of the site's own with the way back to the lobby, and anything else the API's JSON
    404: under DEBUG, which `make run` serves with, Django's page listed every URL pattern."""
    if "text/html" in request.headers.get("Accept", ""):
        return render(request, "web/not_found.html", status=404)
    return json_not_found(request)
