"""Accounts over REST: register, token, /api/me, and every bad input a client may send."""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.django_db


def register(anon, username="carol", password="correct-horse-9"):  # noqa: ANN001, ANN201
    return anon.post(
        "/api/auth/register", {"username": username, "password": password}, format="json"
    )


def test_register_returns_username_and_token(anon):  # noqa: ANN001
    res = register(anon)
    assert res.status_code == 201
    body = res.json()
    assert body["username"] == "carol" and len(body["token"]) == 40


def test_register_then_token_then_me(anon):  # noqa: ANN001
    registered = register(anon)
    token = registered.json()["token"]
    res = anon.post(
        "/api/auth/token", {"username": "carol", "password": "correct-horse-9"}, format="json"
    )
    assert res.status_code == 200 and res.json() == {"token": token}
    anon.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    me = anon.get("/api/me")
    assert me.status_code == 200
    assert me.json()["username"] == "carol"
    assert me.json()["stats"]["played"] == 0
    # A token, a player's own stats: no cache on the way, nor the browser's, keeps them.
    for answer in (registered, res, me):
        assert answer["Cache-Control"] == "no-store", answer.wsgi_request.path


def test_revoking_the_token_ends_it_and_signing_in_issues_a_new_one(anon):  # noqa: ANN001
    old = register(anon).json()["token"]
    anon.credentials(HTTP_AUTHORIZATION=f"Token {old}")
    assert anon.delete("/api/auth/token").status_code == 204
    res = anon.get("/api/me")
    assert res.status_code == 401 and res.json()["code"] == "authentication_failed"
    # Signing in again works with the dead key still in the header.
    new = anon.post(
        "/api/auth/token", {"username": "carol", "password": "correct-horse-9"}, format="json"
    ).json()["token"]
    assert new != old
    anon.credentials()
    assert anon.delete("/api/auth/token").status_code == 401  # revoking needs a sign-in
    anon.credentials(HTTP_AUTHORIZATION=f"Token {new}")
    assert anon.get("/api/me").json()["username"] == "carol"


def test_usernames_are_unique_case_insensitively(anon):  # noqa: ANN001
    assert register(anon, "Carol").status_code == 201
    res = register(anon, "cAROL")
    assert res.status_code == 409
    assert res.json()["code"] == "username_taken"


def test_sign_in_is_case_insensitive(anon):  # noqa: ANN001
    register(anon, "Carol")
    res = anon.post(
        "/api/auth/token", {"username": "carol", "password": "correct-horse-9"}, format="json"
    )
    assert res.status_code == 200


def test_a_name_is_found_through_the_case_insensitive_index(anon):  # noqa: ANN001
    """Sign-up, sign-in and a profile look a name up in any case. Compared with UPPER (as
    `iexact` is on PostgreSQL) no index served it and every user was read; compared with
    LOWER, as the uniqueness rule compares names, that rule's index answers."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from accounts.models import User

    register(anon, "Carol")
    with CaptureQueriesContext(connection) as queries:
        assert register(anon, "CAROL").status_code == 409
        signed_in = {"username": "cAROL", "password": "correct-horse-9"}
        assert anon.post("/api/auth/token", signed_in, format="json").status_code == 200
        assert anon.get("/api/users/CaRoL").json()["username"] == "Carol"
    by_name = [
        q["sql"]
        for q in queries.captured_queries
        if q["sql"].startswith("SELECT")
        and '"accounts_user"."username"' in q["sql"].split("WHERE")[-1]
    ]
    assert len(by_name) == 3 and all('LOWER("accounts_user"."username")' in q for q in by_name)
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":  # on one row a scan is cheaper: say it is not
            cursor.execute("SET LOCAL enable_seqscan = off")
    assert "accounts_user_username_ci_unique" in User.objects.named("CAROL").explain()


@pytest.mark.parametrize("password", ["short", "password123", "12345678901", "carol1234"])
def test_weak_password_is_refused(anon, password):  # noqa: ANN001
    res = register(anon, "carol1234" if password == "carol1234" else "carol", password)
    assert res.status_code == 400
    body = res.json()
    assert body["code"] == "weak_password" and body["detail"]


@pytest.mark.parametrize("payload", [{}, {"username": "carol"}, {"password": "correct-horse-9"}])
def test_missing_fields_are_named(anon, payload):  # noqa: ANN001
    res = anon.post("/api/auth/register", payload, format="json")
    assert res.status_code == 400
    body = res.json()
    assert body["code"] == "invalid"
    missing = {"username", "password"} - set(payload)
    assert set(body["fields"]) == missing


@pytest.mark.parametrize("payload", [{"username": 123}, {"password": ["correct-horse-9"]}])
def test_credentials_must_be_json_strings(anon, payload):  # noqa: ANN001
    body = {"username": "carol", "password": "correct-horse-9", **payload}
    for path in ("/api/auth/register", "/api/auth/token"):
        res = anon.post(path, body, format="json")
        assert res.status_code == 400 and set(res.json()["fields"]) == set(payload), path


@pytest.mark.parametrize(
    ("username", "says"),
    [
        ("ab", "Usernames are 3-30 characters."),
        ("x" * 31, "Usernames are 3-30 characters."),
        ("has space", "Usernames use letters, digits, '_', '.' or '-' only."),
        ("semi;colon", "Usernames use letters, digits, '_', '.' or '-' only."),
    ],
)
def test_bad_usernames_are_refused_with_one_reason(anon, username, says):  # noqa: ANN001
    """Each reason once: the length was said twice, by the field and by the pattern."""
    res = register(anon, username)
    assert res.status_code == 400 and res.json()["code"] == "invalid"
    assert res.json()["fields"] == {"username": says}


def test_non_json_body_is_a_clear_400(anon):  # noqa: ANN001
    res = anon.post("/api/auth/register", data="{not json", content_type="application/json")
    assert res.status_code == 400
    assert res.json()["code"] == "bad_json"


def test_form_encoded_body_is_415(anon):  # noqa: ANN001
    res = anon.post(
        "/api/auth/register",
        data="username=a&password=b",
        content_type="application/x-www-form-urlencoded",
    )
    assert res.status_code == 415
    assert res.json()["code"] == "unsupported_media_type"


def test_huge_body_is_413_and_creates_nothing(anon):  # noqa: ANN001
    from accounts.models import User

    body = json.dumps({"username": "carol", "password": "x" * 200_000})
    res = anon.post("/api/auth/register", data=body, content_type="application/json")
    assert res.status_code == 413
    assert res.json()["code"] == "too_large"
    assert not User.objects.exists()


def test_wrong_password_is_401(anon, user):  # noqa: ANN001
    res = anon.post(
        "/api/auth/token", {"username": "alice", "password": "nope-nope-1"}, format="json"
    )
    assert res.status_code == 401
    assert res.json()["code"] == "authentication_failed"


def test_wrong_token_is_401(anon, user):  # noqa: ANN001
    anon.credentials(HTTP_AUTHORIZATION="Token " + "0" * 40)
    res = anon.get("/api/me")
    assert res.status_code == 401
    assert res.json()["code"] == "authentication_failed"


def test_missing_auth_is_401(anon):  # noqa: ANN001
    res = anon.get("/api/me")
    assert res.status_code == 401
    assert res.json()["code"] == "not_authenticated"
    assert res.headers["WWW-Authenticate"].startswith("Token")


def test_session_login_gives_a_session_for_the_browser(anon, user):  # noqa: ANN001
    res = anon.post(
        "/api/auth/login", {"username": "alice", "password": "correct-horse-9"}, format="json"
    )
    assert res.status_code == 200 and res.json() == {"username": "alice"}  # no token: the
    # cookie is the credential, and a key that outlives the session stays out of the page
    assert anon.get("/api/me").json()["username"] == "alice"
    assert anon.post("/api/auth/logout").status_code == 204
    assert anon.get("/api/me").status_code == 401


def test_a_logout_with_a_token_alone_says_how_to_revoke_it(anon, user):  # noqa: ANN001
    """A token is not a session: a 204 that ended nothing left it working, and the client
    that sent it believed it had signed out."""
    token = anon.post(
        "/api/auth/token", {"username": "alice", "password": "correct-horse-9"}, format="json"
    ).json()["token"]
    anon.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    res = anon.post("/api/auth/logout")
    assert res.status_code == 400
    assert res.json()["code"] == "invalid" and "DELETE /api/auth/token" in res.json()["detail"]
    assert anon.get("/api/me").status_code == 200  # nothing changed
    assert anon.delete("/api/auth/token").status_code == 204
    assert anon.get("/api/me").status_code == 401


@pytest.mark.parametrize(
    "content_type", ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data"]
)
def test_another_site_cannot_sign_a_browser_in(anon, user, content_type):  # noqa: ANN001
    """Sign-in takes no CSRF token (a visitor has no session yet), so what keeps another site
    from signing a browser into the attacker's account (login CSRF) is the body: a page on
    another origin can only send a form's types without a CORS preflight, and those are 415."""
    body = '{"username": "alice", "password": "correct-horse-9"}'
    res = anon.post("/api/auth/login", data=body, content_type=content_type)
    assert res.status_code == 415
    assert "sessionid" not in res.cookies and anon.get("/api/me").status_code == 401


def test_the_page_says_whether_its_session_is_signed_in(client, user):  # noqa: ANN001
    """The browser client reads it to skip asking /api/me for a 401 on a signed-out visit."""
    assert b'<meta name="signed-in" content="0">' in client.get("/").content
    client.force_login(user)
    assert b'<meta name="signed-in" content="1">' in client.get("/").content


def test_unknown_api_path_is_json_404(anon):  # noqa: ANN001
    res = anon.get("/api/nope")
    assert res.status_code == 404
    assert res.json()["code"] == "not_found"


def test_admin_site_is_served(client):  # noqa: ANN001
    res = client.get("/admin/login/")
    assert res.status_code == 200


@pytest.mark.django_db(transaction=True)
def test_sign_up_hashes_the_password_before_its_transaction(monkeypatch):  # noqa: ANN001
    """On SQLite a transaction holds the one write lock from its BEGIN: a hash inside it (a
    few hundred ms on purpose) stalled every other writer, and a burst of sign-ups failed with
    "database is locked"."""
    from django.contrib.auth import base_user
    from django.db import connection

    from accounts.services import register_user

    hashed_in_transaction = []
    real = base_user.make_password

    def spy(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        hashed_in_transaction.append(connection.in_atomic_block)
        return real(*args, **kwargs)

    monkeypatch.setattr(base_user, "make_password", spy)
    user, token = register_user("hashes-first", "correct-horse-9")
    assert hashed_in_transaction == [False]
    user.refresh_from_db()
    assert user.check_password("correct-horse-9") and token.user_id == user.pk


def test_sign_in_attempts_are_limited_per_client_across_processes(anon, user, monkeypatch):  # noqa: ANN001
    """Past the auth rate, 429 `rate_limited` with Retry-After. With Redis the count is in
    Redis, where a second server process (another client of it) finds the same count."""
    from django.conf import settings
    from django.core.cache import cache

    from accounts.views import AuthThrottle
    from tests.conftest import THROTTLED_CLIENT

    monkeypatch.setattr(AuthThrottle, "rate", "3/min", raising=False)
    wrong = {"username": user.username, "password": "not-the-password"}
    statuses = [anon.post("/api/auth/token", wrong, format="json").status_code for _ in range(4)]
    assert statuses == [401, 401, 401, 429]
    res = anon.post("/api/auth/token", wrong, format="json")
    assert res.status_code == 429 and res.json()["code"] == "rate_limited"
    assert int(res["Retry-After"]) > 0
    # Said for a player, with the same wait as the header: not DRF's "Request was throttled".
    assert res.json()["detail"] == f"Too many requests: try again in {res['Retry-After']} s."
    key = AuthThrottle.cache_format % {"scope": "auth", "ident": THROTTLED_CLIENT}
    if settings.REDIS_URL:
        from django.core.cache.backends.redis import RedisCache

        elsewhere = RedisCache(settings.REDIS_URL, {"KEY_PREFIX": settings.REDIS_KEY_PREFIX})
        assert len(elsewhere.get(key)) == 3
    else:
        assert len(cache.get(key)) == 3


def test_a_valid_token_beside_wrong_passwords_does_not_lift_the_sign_in_limit(
    api, user, monkeypatch
):  # noqa: ANN001
    """Guessing a password while holding any valid key (one's own, say) is guessing all the
    same: the session sign-in's limit counts the client's address, signed in or not (DRF's
    anonymous throttle let a request with a valid token through)."""
    from accounts.views import AuthThrottle

    monkeypatch.setattr(AuthThrottle, "rate", "3/min", raising=False)
    wrong = {"username": user.username, "password": "not-the-password"}
    statuses = [api.post("/api/auth/login", wrong, format="json").status_code for _ in range(4)]
    assert statuses == [401, 401, 401, 429]


def test_the_admins_sign_in_counts_against_the_same_limit(anon, monkeypatch):  # noqa: ANN001
    """Staff sign in on /admin/login/: guesses there are limited as the API's are, and count
    with them."""
    from django.contrib.auth import get_user_model
    from django.test import Client

    from accounts.views import AuthThrottle

    get_user_model().objects.create_superuser("boss", password="correct-horse-9")
    monkeypatch.setattr(AuthThrottle, "rate", "3/min", raising=False)
    wrong = {"username": "boss", "password": "not-the-password"}
    assert anon.post("/api/auth/token", wrong, format="json").status_code == 401
    browser = Client()
    assert browser.get("/admin/login/").status_code == 200
    statuses = [browser.post("/admin/login/", wrong).status_code for _ in range(3)]
    assert statuses == [200, 200, 429]  # the form again, with its error; then refused
    refused = browser.post("/admin/login/", {"username": "boss", "password": "correct-horse-9"})
    assert refused.status_code == 429 and int(refused["Retry-After"]) > 0


def test_sign_ups_and_sign_ins_are_limited_apart(anon, user, monkeypatch):  # noqa: ANN001
    """A burst of new accounts on one address leaves its sign-ins alone, and the other way
    round: each has its own count (REGISTER_THROTTLE_RATE, AUTH_THROTTLE_RATE)."""
    from accounts.views import AuthThrottle, RegisterThrottle

    monkeypatch.setattr(AuthThrottle, "rate", "2/min", raising=False)
    monkeypatch.setattr(RegisterThrottle, "rate", "2/min", raising=False)

    def sign_up(i: int) -> int:
        body = {"username": f"newcomer{i}", "password": "correct-horse-9"}
        return anon.post("/api/auth/register", body, format="json").status_code

    def sign_in(password: str = "correct-horse-9") -> int:
        body = {"username": user.username, "password": password}
        return anon.post("/api/auth/token", body, format="json").status_code

    assert [sign_up(i) for i in range(3)] == [201, 201, 429]
    assert [sign_in("wrong-password-1"), sign_in()] == [401, 200]  # sign-ins still counted afresh
    assert sign_in() == 429
    refused = anon.post(
        "/api/auth/register", {"username": "late", "password": "x" * 12}, format="json"
    )
    assert refused.status_code == 429 and refused.json()["code"] == "rate_limited"


def test_a_forged_forwarded_for_does_not_give_each_guess_a_new_address(anon, user, monkeypatch):  # noqa: ANN001
    from accounts.views import AuthThrottle

    monkeypatch.setattr(AuthThrottle, "rate", "3/min", raising=False)
    wrong = {"username": user.username, "password": "not-the-password"}
    statuses = [
        anon.post(
            "/api/auth/token", wrong, format="json", HTTP_X_FORWARDED_FOR=f"203.0.113.{i}"
        ).status_code
        for i in range(4)
    ]
    assert statuses == [401, 401, 401, 429]


def test_behind_a_trusted_proxy_the_address_it_saw_is_the_client(anon, user, monkeypatch):  # noqa: ANN001
    """TRUSTED_PROXIES=1: the last address in X-Forwarded-For (the one the proxy appended) is
    the client's; what the client put before it is not believed."""
    from django.conf import settings
    from django.test import override_settings

    from accounts.views import AuthThrottle

    monkeypatch.setattr(AuthThrottle, "rate", "2/min", raising=False)
    wrong = {"username": user.username, "password": "not-the-password"}

    def attempt(forwarded: str) -> int:
        return anon.post(
            "/api/auth/token", wrong, format="json", HTTP_X_FORWARDED_FOR=forwarded
        ).status_code

    with override_settings(REST_FRAMEWORK={**settings.REST_FRAMEWORK, "NUM_PROXIES": 1}):
        assert [attempt(f"10.0.0.{i}, 198.51.100.7") for i in range(3)] == [401, 401, 429]
        assert attempt("198.51.100.8") == 401  # another client behind the same proxy


def test_an_ipv6_client_counts_as_its_whole_64(anon, user, monkeypatch):  # noqa: ANN001
    """One subscriber holds a /64: a new address from it for every guess is the same client;
    the next /64 is another."""
    from accounts.views import AuthThrottle

    monkeypatch.setattr(AuthThrottle, "rate", "3/min", raising=False)
    wrong = {"username": user.username, "password": "not-the-password"}

    def attempt(address: str) -> int:
        return anon.post("/api/auth/token", wrong, format="json", REMOTE_ADDR=address).status_code

    guesses = [attempt(f"2001:db8:1:2::{i:x}") for i in range(1, 5)]
    assert guesses == [401, 401, 401, 429]
    assert attempt("2001:db8:1:2:ffff:ffff:ffff:ffff") == 429  # the same /64
    assert attempt("2001:db8:1:3::1") == 401  # the next /64: another client
    assert attempt("::ffff:198.51.100.9") == 401  # an IPv4 address written as IPv6: itself


def test_trusted_proxies_must_be_a_whole_number(monkeypatch):  # noqa: ANN001
    from django.core.exceptions import ImproperlyConfigured

    from server.env import env_whole

    monkeypatch.setenv("TRUSTED_PROXIES", "2")
    assert env_whole("TRUSTED_PROXIES", 0) == 2
    for bad in ("-1", "one", "1.5", "²"):
        monkeypatch.setenv("TRUSTED_PROXIES", bad)
        with pytest.raises(ImproperlyConfigured, match="TRUSTED_PROXIES"):
            env_whole("TRUSTED_PROXIES", 0)


@pytest.mark.django_db
def test_an_empty_password_is_a_weak_password_as_the_schema_says(anon):  # noqa: ANN001
    """The schema: a password under 8 characters is 400 `weak_password`, which says why. The
    shortest of all was `invalid`: DRF refused a blank string before Django's validators."""
    res = anon.post("/api/auth/register", {"username": "ada", "password": ""}, format="json")
    assert res.status_code == 400 and res.json()["code"] == "weak_password", res.json()


@pytest.mark.parametrize("path", ["/api/auth/token", "/api/auth/login"])
def test_a_stale_token_beside_the_password_does_not_refuse_the_sign_in(anon, user, path):  # noqa: ANN001
    """A client whose key was revoked signs in again with its password, the old key still in
    its Authorization header: both sign-ins take the password and ignore the key."""
    anon.credentials(HTTP_AUTHORIZATION="Token " + "0" * 40)
    res = anon.post(path, {"username": user.username, "password": "correct-horse-9"}, format="json")
    assert res.status_code == 200, res.json()
    assert res.json()["token" if path == "/api/auth/token" else "username"]


# ---- changing the password -------------------------------------------------------------------

NEW_PASSWORD = "battery-staple-7"


def _change(client, current: str = "correct-horse-9", new: str = NEW_PASSWORD):  # noqa: ANN001, ANN202
    return client.post(
        "/api/auth/password", {"password": current, "new_password": new}, format="json"
    )


def _sign_in(password: str, username: str = "alice"):  # noqa: ANN201
    from rest_framework.test import APIClient

    body = {"username": username, "password": password}
    return APIClient().post("/api/auth/token", body, format="json")


@pytest.mark.django_db
def test_a_new_password_ends_the_old_token_and_signs_in_with_a_new_one(api, user):  # noqa: ANN001
    old_key = user.auth_token.key
    res = _change(api)
    assert res.status_code == 204, res.content
    assert api.get("/api/me").status_code == 401  # the old key is gone
    assert _sign_in("correct-horse-9").status_code == 401
    signed_in = _sign_in(NEW_PASSWORD)
    assert signed_in.status_code == 200 and signed_in.json()["token"] != old_key


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("current", "new", "status", "code"),
    [
        ("not-my-password", NEW_PASSWORD, 400, "invalid"),
        ("correct-horse-9", "short", 400, "weak_password"),
        ("correct-horse-9", "12345678901", 400, "weak_password"),
        ("correct-horse-9", "", 400, "weak_password"),
        ("correct-horse-9", " " * 12, 400, "weak_password"),
    ],
)
def test_a_refused_password_change_changes_nothing(api, user, current, new, status, code):  # noqa: ANN001
    res = _change(api, current, new)
    assert res.status_code == status and res.json()["code"] == code, res.content
    if code == "invalid":
        assert res.json()["fields"] == {"password": "Wrong password."}
    assert api.get("/api/me").status_code == 200  # still signed in, with the same key
    assert _sign_in("correct-horse-9").status_code == 200


@pytest.mark.django_db
@pytest.mark.parametrize(
    "body",
    [
        {"password": "correct-horse-9"},
        {"new_password": NEW_PASSWORD},
        {"password": 1, "new_password": NEW_PASSWORD},
    ],
)
def test_a_password_change_needs_both_passwords_as_strings(api, body):  # noqa: ANN001
    res = api.post("/api/auth/password", body, format="json")
    assert res.status_code == 400 and res.json()["code"] == "invalid"
    assert _sign_in("correct-horse-9").status_code == 200


@pytest.mark.django_db
def test_a_password_change_needs_a_sign_in(anon, user):  # noqa: ANN001
    res = _change(anon)
    assert res.status_code == 401 and res.json()["code"] == "not_authenticated"
    assert _sign_in("correct-horse-9").status_code == 200


@pytest.mark.django_db
def test_a_new_password_signs_out_every_browser_session_this_one_too(user):  # noqa: ANN001
    from django.test import Client

    browsers = [Client(), Client()]
    for browser in browsers:
        browser.force_login(user)
        assert browser.get("/api/me").status_code == 200
    res = browsers[0].post(
        "/api/auth/password",
        {"password": "correct-horse-9", "new_password": NEW_PASSWORD},
        content_type="application/json",
    )
    assert res.status_code == 204, res.content
    for browser in browsers:
        assert browser.get("/api/me").status_code in (401, 403)


@pytest.mark.django_db
def test_guessing_the_current_password_is_limited_as_signing_in_is(api, user, monkeypatch):  # noqa: ANN001
    from accounts.views import AuthThrottle

    monkeypatch.setattr(AuthThrottle, "rate", "3/min", raising=False)
    statuses = [_change(api, f"guess-{i}").status_code for i in range(4)]
    assert statuses == [400, 400, 400, 429]
    assert _sign_in("correct-horse-9").status_code == 429  # one count for both


@pytest.mark.django_db
def test_a_sign_in_checked_against_the_old_password_gets_no_key_once_it_changed(user):  # noqa: ANN001
    """A sign-in that checked the old password while a change committed (the hash takes a
    quarter of a second) made a new key after the change, and kept it."""
    from rest_framework.authtoken.models import Token

    from accounts.models import User
    from accounts.services import change_password, token_for
    from server.errors import AppError

    checked = User.objects.get(pk=user.pk)  # as `authenticate` returned it, the old hash
    change_password(User.objects.get(pk=user.pk), "correct-horse-9", NEW_PASSWORD)
    with pytest.raises(AppError) as refused:
        token_for(checked)
    assert refused.value.code == "authentication_failed"
    assert not Token.objects.filter(user=user).exists()


@pytest.mark.django_db
def test_of_two_changes_made_with_one_password_only_the_first_counts(user):  # noqa: ANN001
    """Both checked the same current password: the second finds it changed, and says so."""
    from accounts.models import User
    from accounts.services import change_password
    from server.errors import AppError

    first, second = User.objects.get(pk=user.pk), User.objects.get(pk=user.pk)
    change_password(first, "correct-horse-9", NEW_PASSWORD)
    with pytest.raises(AppError) as refused:
        change_password(second, "correct-horse-9", "another-new-pass-8")
    assert refused.value.code == "invalid" and "meanwhile" in refused.value.detail
    assert _sign_in(NEW_PASSWORD).status_code == 200


@pytest.mark.django_db
def test_a_password_of_only_spaces_is_weak_but_spaces_inside_one_are_fine(anon):  # noqa: ANN001
    def sign_up(name: str, password: str):  # noqa: ANN202
        body = {"username": name, "password": password}
        return anon.post("/api/auth/register", body, format="json")

    refused = sign_up("spacey", " " * 12)
    assert refused.status_code == 400 and refused.json()["code"] == "weak_password"
    assert "only spaces" in refused.json()["detail"]
    assert sign_up("spacey", "  horse  battery  ").status_code == 201
