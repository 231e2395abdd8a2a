from django.urls import path, register_converter

from games.api import daily_views, views


class RowId:
    """A row id: a number that fits the database's bigint. A larger one is no game (a JSON
    404 from the catch-all), not an overflow in the query (it was a 500 on the writes)."""

    regex = "[0-9]{1,19}"

    def to_python(self, value: str) -> int:
        number = int(value)
        if number > 2**63 - 1:
            raise ValueError(value)
        return number

    def to_url(self, value: int) -> str:
        return str(value)


register_converter(RowId, "row_id")

urlpatterns = [
    path("variants", views.VariantListView.as_view(), name="variants"),
    path("games", views.GameListView.as_view(), name="games"),
    path("games/live", views.LiveGamesView.as_view(), name="games-live"),
    path("games/<row_id:game_id>", views.GameDetailView.as_view(), name="game"),
    path("games/<row_id:game_id>/moves", views.MoveListView.as_view(), name="game-moves"),
    path(
        "games/<row_id:game_id>/positions", views.PositionListView.as_view(), name="game-positions"
    ),
    path("games/<row_id:game_id>/undo", views.UndoView.as_view(), name="game-undo"),
    path("games/<row_id:game_id>/resign", views.ResignView.as_view(), name="game-resign"),
    path("games/<row_id:game_id>/hint", views.HintView.as_view(), name="game-hint"),
    path("daily", daily_views.DailyListView.as_view(), name="daily"),
    path(
        "daily/<str:date>/<str:variant>/play",
        daily_views.DailyPlayView.as_view(),
        name="daily-play",
    ),
    path(
        "daily/<str:date>/<str:variant>/practice",
        daily_views.DailyPracticeView.as_view(),
        name="daily-practice",
    ),
    path(
        "daily/<str:date>/<str:variant>/leaderboard",
        daily_views.DailyLeaderboardView.as_view(),
        name="daily-leaderboard",
    ),
    path(
        "leaderboards/<str:variant>",
        daily_views.AllTimeLeaderboardView.as_view(),
        name="alltime-leaderboard",
    ),
    path("users/<str:username>", daily_views.UserProfileView.as_view(), name="user-profile"),
]
