from django.apps import AppConfig
from django.db.models.signals import post_delete, post_save


class AccountsConfig(AppConfig):
    name = "accounts"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.contrib.auth import get_user_model
        from rest_framework.authtoken.models import Token

        from accounts.signals import token_deleted, user_deleted, user_saved

        post_delete.connect(token_deleted, sender=Token, dispatch_uid="accounts.token_deleted")
        user = get_user_model()
        post_save.connect(user_saved, sender=user, dispatch_uid="accounts.user_saved")
        post_delete.connect(user_deleted, sender=user, dispatch_uid="accounts.user_deleted")
