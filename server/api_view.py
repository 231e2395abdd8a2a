"""The base of the project's REST views.

DRF looks at a request's credentials before its method, so a method a path does not take was
answered 401 without credentials and 405 with them (`GET /api/auth/token`, which only signs in
and out). A client that sent the wrong method wants to hear that, whoever it is: here the method
is checked first, and every path answers a method it does not take with 405 and its `Allow`.
"""

from __future__ import annotations

from typing import Any

from django.http import Http404
from rest_framework.exceptions import MethodNotAllowed, NotAcceptable
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.request import Request
from rest_framework.views import APIView


class ApiNegotiation(DefaultContentNegotiation):
    """`?format=` naming a format the API does not write (`?format=xml`) is a 406
    `not_acceptable`, as an Accept header that admits no JSON is. DRF raised Http404 there:
    a 404 `not_found` for /api/me or an existing game, before any 401, on operations whose
    schema lists no 404."""

    def select_renderer(self, request: Request, renderers: list, format_suffix: str | None = None):
        try:
            return super().select_renderer(request, renderers, format_suffix)
        except Http404:
            raise NotAcceptable(available_renderers=renderers) from None


class ApiView(APIView):
    content_negotiation_class = ApiNegotiation

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        method = request.method.lower()
        if method not in self.http_method_names or not hasattr(self, method):
            raise MethodNotAllowed(request.method)
        super().initial(request, *args, **kwargs)
