"""The management commands: make_daily ahead of time, solve from manage.py."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from games.models import DailyChallenge

pytestmark = pytest.mark.django_db


def test_make_daily_makes_days_ahead_and_is_idempotent():
    out = io.StringIO()
    call_command(
        "make_daily", "--date", "2030-01-01", "--days", "2", "--variant", "spanish", stdout=out
    )
    assert DailyChallenge.objects.filter(variant="spanish").count() == 2
    assert "2 challenges ready" in out.getvalue()
    call_command("make_daily", "--date", "2030-01-01", "--variant", "spanish", stdout=out)
    assert "exists" in out.getvalue()
    assert DailyChallenge.objects.count() == 2


@pytest.mark.parametrize("args", [["--date", "tomorrow"], ["--days", "0"]])
def test_make_daily_refuses_bad_arguments(args):  # noqa: ANN001
    with pytest.raises(CommandError):
        call_command("make_daily", *args)


def test_solve_command_prints_a_line(capsys):  # noqa: ANN001
    call_command("solve", "spanish", "7", "--time", "2")
    out = capsys.readouterr().out
    assert "outcome  won" in out and "line" in out
