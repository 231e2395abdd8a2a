"""The admin: games, moves, challenges and records to look at, and nothing there to edit."""

from __future__ import annotations

import pytest

from games import clock
from games.models import DailyChallenge, Game, Move, VariantRecord

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff(client):  # noqa: ANN001, ANN201
    from accounts.models import User

    root = User.objects.create_superuser("root", "root@example.com", "admin-pass-123")
    client.force_login(root)
    return client


def test_an_operator_can_look_up_games_challenges_and_records(staff, api):  # noqa: ANN001
    ranked = api.post(f"/api/daily/{clock.today().isoformat()}/spanish/play").json()
    api.post(f"/api/games/{ranked['id']}/resign")
    game = api.post("/api/games", {"variant": "countess", "deal": 3}, format="json").json()
    api.post(f"/api/games/{game['id']}/moves", {"move": "draw", "v": 0}, format="json")
    challenge = DailyChallenge.objects.get()
    record = VariantRecord.objects.first()
    move = Move.objects.get()
    for path in (
        "/admin/games/game/",
        f"/admin/games/game/?q={game['id']}",
        "/admin/games/game/?q=alice",
        f"/admin/games/game/{game['id']}/change/",
        f"/admin/games/move/?q={game['id']}",
        f"/admin/games/move/{move.pk}/change/",
        "/admin/games/dailychallenge/",
        f"/admin/games/dailychallenge/{challenge.pk}/change/",
        "/admin/games/variantrecord/",
        f"/admin/games/variantrecord/{record.pk}/change/",
    ):
        assert staff.get(path).status_code == 200, path


def test_nothing_there_changes_a_game(staff, api):  # noqa: ANN001
    """A game's version is its move rows and its state its moves played: no page adds, edits
    or deletes one by hand."""
    game = api.post("/api/games", {"variant": "countess", "deal": 3}, format="json").json()
    change = f"/admin/games/game/{game['id']}/change/"
    assert staff.post(change, {"version": 7, "status": "won"}).status_code == 403
    assert staff.get("/admin/games/game/add/").status_code == 403
    assert staff.post(f"/admin/games/game/{game['id']}/delete/", {"post": "yes"}).status_code == 403
    assert b"Save" not in staff.get(change).content
    stored = Game.objects.get(pk=game["id"])
    assert (stored.version, stored.status) == (0, "playing")


def test_the_admins_pages_send_a_content_security_policy(staff, anon):  # noqa: ANN001
    """As every other page of the server does: its own scripts only, and no framing."""
    for client, path in ((anon, "/admin/login/"), (staff, "/admin/games/game/")):
        policy = client.get(path)["Content-Security-Policy"]
        assert "script-src 'self'" in policy and "frame-ancestors 'none'" in policy, path
