"""The base of the project's REST views.

DRF looks at a request's credentials before its method, so a method a path does not take was
answered 401 without credentials and 405 with them (`GET /api/auth/token`, which only signs in
and out). A client that sent the wrong method wants to hear that, whoever it is: here the method
is checked first, and every path answers a method it does not take with 405 and its `Allow`.
"""

from __future__ import annotations

from typing import Any

from rest_framework.exceptions import MethodNotAllowed
from rest_framework.request import Request
from rest_framework.views import APIView


class ApiView(APIView):
    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        method = request.method.lower()
        if method not in self.http_method_names or not hasattr(self, method):
            raise MethodNotAllowed(request.method)
        super().initial(request, *args, **kwargs)
