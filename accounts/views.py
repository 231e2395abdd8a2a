"""Thin HTTP views for accounts: validate input, call a service, shape the answer."""

from __future__ import annotations

import math

from django.contrib import admin
from django.contrib.auth import SESSION_KEY, authenticate, login, logout
from django.http import HttpRequest, HttpResponse
from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework import status
from rest_framework.authentication import TokenAuthentication
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.throttling import SimpleRateThrottle

from accounts import services
from accounts.serializers import (
    CredentialsSerializer,
    LoginSerializer,
    MeSerializer,
    PasswordChangeSerializer,
    RegisteredSerializer,
    SessionSignedInSerializer,
    TokenSerializer,
)
from server.api_view import ApiView
from server.client_address import client_block
from server.errors import AppError
from server.json_input import validated
from server.openapi import BAD_TOKEN, BODY, SIGNED_IN, errors
from server.throttling import OpenWhileCacheAway
from server.ws_auth import end_session_sockets, session_key_changed

# Sign-up and sign-in: a malformed body, and the throttle on guessing (AuthThrottle).
CREDENTIALS = ("invalid", "rate_limited")


class AuthThrottle(OpenWhileCacheAway, SimpleRateThrottle):
    """Sign-up and sign-in attempts per client address, whoever the request says it is.

    DRF's AnonRateThrottle skips a request that carries a valid credential, so a token beside
    a wrong password made password guessing unlimited. The address is the connection's own;
    `X-Forwarded-For` is read only as far as TRUSTED_PROXIES proxies in front wrote it
    (DRF's NUM_PROXIES), so a client cannot pick a new address for each guess."""

    scope = "auth"

    def get_cache_key(self, request: Request, view: ApiView) -> str:
        return self.cache_format % {"scope": self.scope, "ident": self.get_ident(request)}

    def get_ident(self, request: Request) -> str:
        """The client's address; for IPv6 its /64 (server.client_address)."""
        return client_block(super().get_ident(request))


class RegisterThrottle(AuthThrottle):
    """Sign-ups per client address, counted apart from sign-ins: on one shared address (a
    school, an office) a burst of new accounts used to leave no sign-in for anyone there, and
    a client that could not sign in could still use up the sign-ups."""

    scope = "register"


def throttled_admin_login(request: HttpRequest, **kwargs: object) -> HttpResponse:
    """The admin's sign-in page, under the API's per-address limit on guessing: unlimited,
    it was the way round it, to the accounts most worth guessing (staff)."""
    if request.method == "POST":
        throttle = AuthThrottle()
        if not throttle.allow_request(request, None):
            wait = math.ceil(throttle.wait() or 1)
            response = HttpResponse(
                f"Too many sign-in attempts: try again in {wait} s.",
                status=429,
                content_type="text/plain; charset=utf-8",
            )
            response["Retry-After"] = str(wait)
            return response
    return admin.site.login(request, **kwargs)


def _authenticate(request: Request) -> object:
    data = validated(LoginSerializer, request)
    user = authenticate(request._request, username=data["username"], password=data["password"])
    if user is None:
        raise AppError("authentication_failed", "Wrong username or password.")
    return user


class RegisterView(ApiView):
    permission_classes = [AllowAny]
    authentication_classes: list = []
    throttle_classes = [RegisterThrottle]

    @extend_schema(
        request=CredentialsSerializer,
        responses={
            201: RegisteredSerializer,
            **errors(*CREDENTIALS, "weak_password", "username_taken", *BODY),
        },
        examples=[
            OpenApiExample(
                "Register",
                value={"username": "ada", "password": "s3cret-pass"},
                request_only=True,
            ),
            OpenApiExample(
                "Registered",
                value={"username": "ada", "token": "9944b09199c62bcf9418ad846dd0e4bbdfc6ee4b"},
                response_only=True,
            ),
        ],
        summary="Create an account and get its API token",
    )
    def post(self, request: Request) -> Response:
        data = validated(CredentialsSerializer, request)
        user, token = services.register_user(data["username"], data["password"])
        return Response({"username": user.username, "token": token.key}, status.HTTP_201_CREATED)


class TokenView(ApiView):
    """POST signs in with a password (no other credential is looked at); DELETE revokes the
    key of whoever is signed in."""

    throttle_classes = [AuthThrottle]

    def _signing_in(self) -> bool:
        # The schema generator asks with no request at all: it then describes the POST.
        return getattr(self.request, "method", "POST") == "POST"

    def get_permissions(self) -> list:
        return [AllowAny()] if self._signing_in() else super().get_permissions()

    def get_authenticators(self) -> list:
        # A stale key beside the password must not refuse the sign-in that replaces it.
        return [] if self._signing_in() else super().get_authenticators()

    def get_throttles(self) -> list:
        return super().get_throttles() if self._signing_in() else []

    @extend_schema(
        request=LoginSerializer,
        responses={200: TokenSerializer, **errors(*CREDENTIALS, "authentication_failed", *BODY)},
        summary="Exchange username and password for the API token",
    )
    def post(self, request: Request) -> Response:
        user = _authenticate(request)
        return Response({"token": services.token_for(user).key})

    @extend_schema(
        request=None,
        responses={204: None, **errors(*SIGNED_IN)},
        summary="Revoke your API token",
        description="The key stops working at once and the WebSockets it opened close with "
        "4401. `POST /api/auth/token` then issues a new key.",
    )
    def delete(self, request: Request) -> Response:
        services.revoke_token(request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)


class SessionLoginView(ApiView):
    """Session sign-in for browsers, whose WebSockets cannot send an Authorization header."""

    permission_classes = [AllowAny]
    throttle_classes = [AuthThrottle]

    def get_authenticators(self) -> list:
        # A stale key beside the password must not refuse the sign-in (as at POST
        # /api/auth/token). The session is still read: a signed-in browser keeps its CSRF check.
        return [a for a in super().get_authenticators() if not isinstance(a, TokenAuthentication)]

    @extend_schema(
        request=LoginSerializer,
        responses={
            200: SessionSignedInSerializer,
            **errors(*CREDENTIALS, "authentication_failed", *BODY),
        },
        summary="Sign in with a session cookie (browser client)",
        description="The session cookie is the credential: the answer carries no token, so "
        "a sign-in hands the page no key that outlives the session. A client that wants a "
        "token signs in with `POST /api/auth/token`.",
    )
    def post(self, request: Request) -> Response:
        user = _authenticate(request)
        session = request._request.session
        old_key, old_user = session.session_key, session.get(SESSION_KEY)
        login(request._request, user)  # a new session key: the old one is gone
        session_key_changed(old_key, session.session_key, old_user == str(user.pk))
        return Response({"username": user.username})


class SessionLogoutView(ApiView):
    permission_classes = [AllowAny]

    @extend_schema(
        request=None,
        responses={204: None, **errors("invalid", *BAD_TOKEN)},
        summary="End the browser session",
        description="Signs the session out and closes its WebSockets with 4401; with no session "
        "signed in, nothing to end (204). A request signed in with a token alone is refused "
        "(400 `invalid`): a token is not a session, and it is revoked with "
        "`DELETE /api/auth/token`.",
    )
    def post(self, request: Request) -> Response:
        if isinstance(request.successful_authenticator, TokenAuthentication) and (
            SESSION_KEY not in request.session
        ):
            # A 204 here left the token working: an API client believed it had signed out.
            raise AppError(
                "invalid",
                "This ends a browser session, and this request has none: a token is revoked "
                "with DELETE /api/auth/token (every client using it is signed out).",
            )
        ended = request.session.session_key
        logout(request._request)
        end_session_sockets(ended)
        return Response(status=status.HTTP_204_NO_CONTENT)


class PasswordView(ApiView):
    """A new password for whoever is signed in; every sign-in made with the old one ends.
    Throttled as a sign-in is: a stolen session must not be a way to guess the password."""

    throttle_classes = [AuthThrottle]

    @extend_schema(
        request=PasswordChangeSerializer,
        responses={
            204: None,
            **errors(*SIGNED_IN, *CREDENTIALS, "weak_password", *BODY),
        },
        examples=[
            OpenApiExample(
                "Change password",
                value={"password": "s3cret-pass", "new_password": "an0ther-pass"},
                request_only=True,
            ),
        ],
        summary="Change your password (signs you out everywhere)",
        description="Needs the current password (else 400 `invalid`, with "
        "`fields.password`). On 204 the API token is revoked, every browser session of the "
        "user is signed out, this one included, and every WebSocket of theirs closes with "
        "4401: sign in again with the new password (`POST /api/auth/token` gives a new key).",
    )
    def post(self, request: Request) -> Response:
        data = validated(PasswordChangeSerializer, request)
        services.change_password(request.user, data["password"], data["new_password"])
        if SESSION_KEY in request.session:
            logout(request._request)  # its sockets closed with the user's
        return Response(status=status.HTTP_204_NO_CONTENT)


class MeView(ApiView):
    @extend_schema(
        responses={200: MeSerializer, **errors(*SIGNED_IN)},
        summary="The signed-in user and their stats",
    )
    def get(self, request: Request) -> Response:
        from games.selectors import player_profile

        user = request.user
        return Response(
            {
                "id": user.id,
                "username": user.username,
                "date_joined": user.date_joined,
                "stats": player_profile(user),
            }
        )
