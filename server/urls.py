from django.contrib import admin
from django.urls import include, path, re_path
from django.views.decorators.csrf import csrf_exempt
from drf_spectacular.renderers import (
    OpenApiJsonRenderer,
    OpenApiJsonRenderer2,
    OpenApiYamlRenderer,
    OpenApiYamlRenderer2,
)
from drf_spectacular.utils import extend_schema
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response

from accounts import views as account_views
from server.errors import handler404 as json_not_found
from server.health import HealthView
from server.websocket_docs import WebSocketDocsView
from web.views import API_DOCS_POLICY


class JsonErrors:
    """Errors as plain JSON, `{code, detail}` as under the rest of /api/, not through the view's
    own renderer: the docs page's gave a 405 as HTML, and the schema's a 406 as an indented
    `application/vnd.oai.openapi+json` document."""

    def handle_exception(self, exc: Exception) -> Response:
        response = super().handle_exception(exc)  # type: ignore[misc]
        self.request.accepted_renderer = JSONRenderer()
        self.request.accepted_media_type = JSONRenderer.media_type
        return response


class SchemaView(JsonErrors, SpectacularAPIView):
    """The OpenAPI schema, in JSON unless YAML is asked for (`Accept: application/vnd.oai.openapi`
    or `?format=yaml`): the API is JSON (PROTOCOL.md), and a client that fetches the schema
    with no Accept header, or `*/*`, parses what it gets as JSON (drf-spectacular's default
    is YAML)."""

    renderer_classes = [
        OpenApiJsonRenderer,
        OpenApiJsonRenderer2,
        OpenApiYamlRenderer,
        OpenApiYamlRenderer2,
    ]


class DocsView(JsonErrors, SpectacularSwaggerSplitView):
    """The Swagger UI page, for GET only: its OPTIONS rendered the view's metadata through the
    page's HTML renderer, which has no template for it (a 500). Its errors are JSON. Its setup
    script is served apart (`/api/docs?script=`), so that the page runs no inline script and
    keeps a Content-Security-Policy (web.views.API_DOCS_POLICY)."""

    http_method_names = ["get", "head"]

    @extend_schema(exclude=True)
    def get(self, request: Request, *args: object, **kwargs: object) -> Response:
        response = super().get(request, *args, **kwargs)
        response["Content-Security-Policy"] = API_DOCS_POLICY
        return response


api_patterns = [
    path("auth/register", account_views.RegisterView.as_view(), name="register"),
    path("auth/token", account_views.TokenView.as_view(), name="token"),
    path("auth/login", account_views.SessionLoginView.as_view(), name="session-login"),
    path("auth/logout", account_views.SessionLogoutView.as_view(), name="session-logout"),
    path("auth/password", account_views.PasswordView.as_view(), name="password"),
    path("me", account_views.MeView.as_view(), name="me"),
    path("health", HealthView.as_view(), name="health"),
    path("schema", SchemaView.as_view(), name="schema"),
    path("docs", DocsView.as_view(url_name="schema"), name="docs"),
    path("docs/websocket", WebSocketDocsView.as_view(), name="websocket-docs"),
    path("", include("games.api.urls")),
    # Anything else under /api/ is a JSON 404, with DEBUG on as well (Django's would be HTML),
    # for every method: a POST was refused by the CSRF check first, with its HTML 403 page.
    re_path(r"", csrf_exempt(json_not_found)),
]

urlpatterns = [
    path("api/", include(api_patterns)),
    # The admin's sign-in, limited as the API's is (before the admin's own pattern for it).
    path("admin/login/", account_views.throttled_admin_login, name="admin-login"),
    path("admin/", admin.site.urls),
    path("", include("web.urls")),
]

handler400 = "server.errors.handler400"
handler403 = "server.errors.handler403"
handler404 = "server.errors.handler404"
handler500 = "server.errors.handler500"
