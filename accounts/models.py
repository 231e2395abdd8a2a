"""The project's own User model, present from the first migration so it can grow freely."""

from __future__ import annotations

from django.contrib.auth.models import AbstractUser, UserManager
from django.db import models
from django.db.models import Value
from django.db.models.functions import Lower
from django.db.models.lookups import Exact


class ArenaUserManager(UserManager):
    """Sign-in looks names up case-insensitively, matching the uniqueness rule."""

    def get_by_natural_key(self, username: str):  # noqa: ANN201 - Django's signature
        return self.named(username).get()

    def named(self, username: str) -> models.QuerySet:
        """The user of this name in any case, found as the uniqueness rule compares names
        (LOWER), so its index answers: `iexact` compares UPPER on PostgreSQL and read every
        user to find one, for each sign-in, sign-up and profile."""
        return self.filter(Exact(Lower("username"), Lower(Value(username))))


class User(AbstractUser):
    objects = ArenaUserManager()

    class Meta:
        constraints = [
            models.UniqueConstraint(Lower("username"), name="accounts_user_username_ci_unique"),
        ]

    def __str__(self) -> str:
        return self.username
