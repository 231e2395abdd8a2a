"""The games in the admin, to look at and never to edit.

An operator looks up a reported game, a day's challenge or a player's records here. Nothing is
added, changed or deleted through these pages: a game's version is its move rows, its cached
state is its moves played from its deal, and a player's records count each attempt once
(games.records); an edit by hand would break what the services keep together. A player is
deleted (with their games) on their own page, under accounts.
"""

from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest

from games.models import DailyChallenge, Game, Move, VariantRecord


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


@admin.register(Game)
class GameAdmin(ReadOnlyAdmin):
    list_display = ("id", "owner", "deal", "daily", "ranked", "status", "version", "started_at")
    list_filter = ("status", "ranked", "deal__variant")
    list_select_related = ("owner", "deal", "daily")
    search_fields = ("=id", "owner__username")
    date_hierarchy = "started_at"


@admin.register(Move)
class MoveAdmin(ReadOnlyAdmin):
    """A game's history: search by its id."""

    list_display = ("game_id", "n", "move", "at")
    search_fields = ("=game__id",)
    ordering = ("game_id", "n")


@admin.register(DailyChallenge)
class DailyChallengeAdmin(ReadOnlyAdmin):
    list_display = (
        "date",
        "variant",
        "deal",
        "winnable",
        "par_cards",
        "par_moves",
        "solver_seconds",
    )
    list_filter = ("variant", "winnable")
    list_select_related = ("deal",)
    date_hierarchy = "date"


@admin.register(VariantRecord)
class VariantRecordAdmin(ReadOnlyAdmin):
    list_display = ("user", "variant", "played", "wins", "best_par_ratio", "best_streak")
    list_filter = ("variant",)
    list_select_related = ("user",)
    search_fields = ("user__username",)
