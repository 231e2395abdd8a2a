from django.apps import AppConfig
from django.db.models.signals import post_delete


class AccountsConfig(AppConfig):
    name = "accounts"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from rest_framework.authtoken.models import Token

        from accounts.signals import token_deleted

        post_delete.connect(token_deleted, sender=Token, dispatch_uid="accounts.token_deleted")
