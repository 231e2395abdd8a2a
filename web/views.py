from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.csrf import csrf_exempt, ensure_csrf_cookie

from server.errors import handler404 as json_not_found


@ensure_csrf_cookie
def index(request: HttpRequest) -> HttpResponse:
    """The single-page browser client; it talks to the server only through the public API."""
    return render(request, "web/index.html")


@csrf_exempt  # any method: a POST was refused by the CSRF check first, with its own 403 page
def not_found(request: HttpRequest, path: str = "") -> HttpResponse:
    """A path the site does not serve (the client's views live after the '#'). A browser gets a
    page of the site's own with the way back to the lobby, and anything else the API's JSON
    404: under DEBUG, which `make run` serves with, Django's page listed every URL pattern."""
    if "text/html" in request.headers.get("Accept", ""):
        return render(request, "web/not_found.html", status=404)
    return json_not_found(request)
