from django.apps import AppConfig
from django.db.models.signals import post_delete


class GamesConfig(AppConfig):
    name = "games"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from games.models import Game
        from games.signals import ranked_game_deleted

        post_delete.connect(ranked_game_deleted, sender=Game, dispatch_uid="games.game_deleted")
