from django.urls import path

from games.consumers import GameConsumer, LeaderboardConsumer

websocket_urlpatterns = [
    path("ws/games/<int:game_id>", GameConsumer.as_asgi()),
    path("ws/leaderboards/<str:date>/<str:variant>", LeaderboardConsumer.as_asgi()),
]
