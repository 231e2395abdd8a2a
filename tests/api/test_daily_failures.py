"""A certification that fails (a solver error, no candidate proven winnable): its challenge is
unavailable (503) for a while, and the day's other challenges are listed and played as usual."""

from __future__ import annotations

import datetime as dt
from collections import Counter

import pytest
from django.core.management import CommandError, call_command

from games import clock, daily
from games.models import VARIANT_IDS, DailyChallenge

pytestmark = pytest.mark.django_db

RETRY = 300


@pytest.fixture
def failing(monkeypatch, settings):  # noqa: ANN001, ANN201
    """Certifications of the variants in the returned set fail; every call is counted; the
    failures this test remembers are its own; time as the failures see it can be moved on."""
    calls: Counter = Counter()
    broken: set[str] = {"countess"}
    certify = daily.certify  # the session's cached certifier (tests/conftest.py)

    def counted(date, variant, budget=None):  # noqa: ANN001, ANN202
        calls[variant] += 1
        if variant in broken:
            raise RuntimeError(f"No {variant} candidate was certified (test).")
        return certify(date, variant, budget)

    now = [1000.0]
    monkeypatch.setattr(daily, "certify", counted)
    monkeypatch.setattr(daily, "_failed_until", {})
    monkeypatch.setattr(daily.time, "monotonic", lambda: now[0])
    settings.DAILY_CERTIFY_RETRY_SECONDS = RETRY

    class Failing:
        def __init__(self) -> None:
            self.calls, self.broken = calls, broken

        def wait(self, seconds: float) -> None:
            now[0] += seconds

    return Failing()


def test_a_failed_certification_leaves_the_other_challenges_listed(anon, failing):  # noqa: ANN001
    res = anon.get("/api/daily")
    assert res.status_code == 200, res.content
    listed = [c["variant"] for c in res.json()["challenges"]]
    assert listed == [v for v in VARIANT_IDS if v != "countess"]  # those after it too
    stored = DailyChallenge.objects.filter(date=clock.today()).values_list("variant", flat=True)
    assert set(stored) == set(listed)


def test_its_challenge_answers_unavailable_with_when_to_try_again(api, failing):  # noqa: ANN001
    api.get("/api/daily")
    for res in (
        api.post(f"/api/daily/{clock.today()}/countess/play"),
        api.get(f"/api/daily/{clock.today()}/countess/leaderboard"),
    ):
        assert res.status_code == 503, res.content
        assert res.json()["code"] == "unavailable"
        assert res.json()["detail"] == (
            f"The Countess challenge of {clock.today()} could not be certified; "
            f"try again in {RETRY} s."
        )
        assert res["Retry-After"] == str(RETRY)
    assert api.post(f"/api/daily/{clock.today()}/spanish/play").status_code == 201


def test_a_failed_certification_is_tried_again_only_after_the_wait(api, failing):  # noqa: ANN001
    for _ in range(3):
        api.get("/api/daily")
    assert failing.calls["countess"] == 1
    failing.wait(RETRY - 10)
    res = api.post(f"/api/daily/{clock.today()}/countess/play")
    assert res.json() == {
        "code": "unavailable",
        "detail": f"The Countess challenge of {clock.today()} could not be certified; "
        "try again in 10 s.",
    }
    assert api.get("/api/daily").status_code == 200
    assert failing.calls["countess"] == 1
    failing.wait(10)
    failing.broken.clear()  # the solver works again
    listed = [c["variant"] for c in api.get("/api/daily").json()["challenges"]]
    assert listed == VARIANT_IDS
    assert failing.calls["countess"] == 2


def test_a_day_with_no_challenge_at_all_is_unavailable(anon, failing):  # noqa: ANN001
    failing.broken.update(VARIANT_IDS)
    res = anon.get("/api/daily")
    assert res.status_code == 503, res.content
    assert res.json()["code"] == "unavailable"


def _fail(*args):  # noqa: ANN002, ANN202
    """A certification that fails in the worker process (module level, to be pickled)."""
    raise RuntimeError("no candidate (test)")


def test_in_the_process_pool_a_failed_job_is_not_begun_again_meanwhile(
    pool_submissions, monkeypatch
):  # noqa: ANN001
    """The pool path: a later request, and the day's start-ahead of missing certifications,
    neither submits the failed job again before its wait is over."""
    monkeypatch.setattr(daily, "_job_args", lambda date, variant: (_fail, date, variant))
    monkeypatch.setattr(daily, "_failed_until", {})
    date = dt.date(2026, 5, 5)
    for _ in range(3):
        with pytest.raises(daily.AppError) as refused:
            daily.ensure_daily(date, "countess")
        assert refused.value.code == "unavailable"
    daily.start_certifying(date, ["countess"])
    assert pool_submissions == {"countess": 1}
    assert daily._started == {}


def test_make_daily_makes_the_others_and_fails_at_the_end(failing):  # noqa: ANN001
    date = dt.date(2026, 5, 6)
    with pytest.raises(CommandError, match="1 of 5 not certified: 2026-05-06 countess"):
        call_command("make_daily", "--date", date.isoformat())
    made = set(DailyChallenge.objects.filter(date=date).values_list("variant", flat=True))
    assert made == set(VARIANT_IDS) - {"countess"}
