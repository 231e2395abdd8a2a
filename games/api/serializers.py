"""Request shapes for the games API and response shapes for the schema.

Responses are built by games.selectors; these serializers only validate input and document
the output in the OpenAPI schema.
"""

from __future__ import annotations

from rest_framework import serializers

from games.models import VARIANT_CHOICES
from games.services import MAX_DEAL, MAX_VERSION
from server.json_input import StrictCharField, StrictIntegerField


class NewGameSerializer(serializers.Serializer):
    variant = serializers.ChoiceField(choices=VARIANT_CHOICES)
    deal = StrictIntegerField(
        min_value=1,
        max_value=MAX_DEAL,
        required=False,
        allow_null=True,
        help_text="From 1 to 2^53 - 1; left out or null: a random deal (one of the first "
        "million; for Countess and Barricade A, whose stock is face down, of the whole range).",
    )


class MoveRequestSerializer(serializers.Serializer):
    # Blank or long, a string passes through to the rules, which refuse it as `illegal_move`,
    # as over WebSocket (the body's size limit bounds it).
    move = StrictCharField(trim_whitespace=False, allow_blank=True)
    v = StrictIntegerField(min_value=0, max_value=MAX_VERSION)


class UndoRequestSerializer(serializers.Serializer):
    v = StrictIntegerField(min_value=0, max_value=MAX_VERSION)


class StockSerializer(serializers.Serializer):
    count = serializers.IntegerField()
    top = serializers.CharField(allow_null=True)


class StateSerializer(serializers.Serializer):
    variant = serializers.CharField()
    tableau = serializers.ListField(child=serializers.ListField(child=serializers.CharField()))
    foundations = serializers.ListField(child=serializers.ListField(child=serializers.CharField()))
    cells = serializers.ListField(child=serializers.CharField(allow_null=True))
    stock = StockSerializer()
    waste = serializers.ListField(child=serializers.CharField())
    status = serializers.ChoiceField(choices=["playing", "won", "stuck", "resigned"])
    moves = serializers.IntegerField()
    legal_moves = serializers.ListField(child=serializers.CharField())
    last_move = serializers.CharField(allow_null=True)
    day_over = serializers.BooleanField(
        required=False,
        help_text="only on a ranked attempt left open when its day ended: it counts as it "
        "stands and takes no more moves (legal_moves is empty)",
    )
    at_move_limit = serializers.BooleanField(
        required=False,
        help_text="only on a game still playing that has taken GAME_MAX_MOVES actions (100,000 "
        "by default): it takes no more moves or undos (legal_moves is empty); resign it",
    )


class DailyRefSerializer(serializers.Serializer):
    date = serializers.DateField()
    variant = serializers.CharField()
    ranked = serializers.BooleanField()


class GameSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    variant = serializers.CharField()
    deal = serializers.IntegerField(
        allow_null=True,
        help_text="null for a daily deal until its day is over, and for a practice game of "
        "Countess or Barricade A until it is over: the number would reveal the face-down stock "
        "(its owner sees a deal they named when starting it)",
    )
    daily = DailyRefSerializer(allow_null=True)
    owner = serializers.CharField()
    v = serializers.IntegerField()
    status = serializers.CharField()
    seconds = serializers.IntegerField(help_text="server time from start to the last move")
    rank = serializers.IntegerField(
        allow_null=True,
        help_text="a ranked attempt's place on its daily board now, once it is finished or "
        "its day is over (it counts as it stands); null otherwise (and in the list of your "
        "games)",
    )
    state = StateSerializer()
    started_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True)


class MoveRowSerializer(serializers.Serializer):
    n = serializers.IntegerField()
    move = serializers.CharField()
    v = serializers.IntegerField(help_text="the version the move was played on")
    at = serializers.DateTimeField()


class PositionSerializer(serializers.Serializer):
    v = serializers.IntegerField(help_text="the version: after this many actions")
    state = StateSerializer(help_text="the game as it stood then; `last_move` made it")


class PilesSerializer(serializers.Serializer):
    tableau = serializers.IntegerField(help_text="tableau piles: t0, t1, …")
    foundations = serializers.IntegerField(help_text="foundations: f0, f1, …")
    cells = serializers.IntegerField(help_text="free cells: c0, c1, … (0: none)")
    stock = serializers.BooleanField()
    waste = serializers.BooleanField()


class VariantSerializer(serializers.Serializer):
    id = serializers.CharField()
    name = serializers.CharField()
    decks = serializers.IntegerField()
    cards = serializers.IntegerField()
    piles = PilesSerializer()
    rules = serializers.ListField(child=serializers.CharField())
    summary = serializers.CharField()


class AttemptResultSerializer(serializers.Serializer):
    """How a ranked attempt stands, on a board, in a player's recent results and in the
    day's challenges."""

    game_id = serializers.IntegerField()
    status = serializers.CharField()
    moves = serializers.IntegerField()
    seconds = serializers.IntegerField()
    foundation_cards = serializers.IntegerField()


class AttemptSerializer(AttemptResultSerializer):
    rank = serializers.IntegerField(allow_null=True)


class ChallengeSerializer(serializers.Serializer):
    date = serializers.DateField()
    variant = serializers.CharField()
    name = serializers.CharField()
    winnable = serializers.BooleanField()
    par_cards = serializers.IntegerField(help_text="cards the certified line brings up")
    par_moves = serializers.IntegerField(help_text="length of the certified line")
    status = serializers.CharField(
        allow_null=True,
        help_text="your ranked attempt's status (`attempt.status`); null if you have not "
        "started one, or are not signed in",
    )
    attempt = AttemptSerializer(allow_null=True)


class DailyListSerializer(serializers.Serializer):
    date = serializers.DateField()
    challenges = ChallengeSerializer(many=True)
    watch_after_own_attempt = serializers.BooleanField(
        help_text="Whether this server hides another player's game on today's deal from you "
        "until your own ranked attempt at that challenge is over (403 `forbidden` before). "
        "Off by default: any signed-in user may watch any game."
    )


class EntrySerializer(AttemptResultSerializer):
    rank = serializers.IntegerField()
    username = serializers.CharField()
    finished_at = serializers.DateTimeField(allow_null=True)


class LeaderboardSerializer(serializers.Serializer):
    date = serializers.DateField()
    variant = serializers.CharField()
    total = serializers.IntegerField()
    page = serializers.IntegerField()
    page_size = serializers.IntegerField()
    entries = EntrySerializer(many=True)
    me = EntrySerializer(allow_null=True)


class RecentResultSerializer(AttemptResultSerializer):
    date = serializers.DateField()
    variant = serializers.CharField()
    day_over = serializers.BooleanField(
        required=False,
        help_text="Present (true) for an attempt left open when its day ended: it counts as "
        "it stands, with status `playing`.",
    )


class VariantGamesSerializer(serializers.Serializer):
    played = serializers.IntegerField(help_text="games of this variant, practice included")
    won = serializers.IntegerField()


class VariantDailySerializer(serializers.Serializer):
    played = serializers.IntegerField(
        help_text="ranked attempts counted (finished, or their day over)"
    )
    wins = serializers.IntegerField()
    best_par_ratio = serializers.FloatField()
    current_streak = serializers.IntegerField()
    best_streak = serializers.IntegerField()


class PlayerStatsSerializer(serializers.Serializer):
    """A player's games and daily results (selectors.player_profile): in their profile, and in
    `/api/me` as `stats`."""

    played = serializers.IntegerField()
    won = serializers.IntegerField()
    variants = serializers.DictField(
        child=VariantGamesSerializer(), help_text="by variant id, the variants played"
    )
    daily = serializers.DictField(
        child=VariantDailySerializer(), help_text="by variant id, the daily records"
    )
    current_streak = serializers.IntegerField()
    best_streak = serializers.IntegerField()
    recent = RecentResultSerializer(
        many=True, help_text="The last ten ranked attempts, newest day first."
    )


class ProfileSerializer(PlayerStatsSerializer):
    username = serializers.CharField()
    date_joined = serializers.DateTimeField()


class LiveGameSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    owner = serializers.CharField()
    variant = serializers.CharField()
    deal = serializers.IntegerField(
        allow_null=True,
        help_text="The deal number; null where a game's would be (a daily deal until its day "
        "is over, a Countess or Barricade A practice game until it is over: another player's "
        "here, even on a deal they named).",
    )
    v = serializers.IntegerField()
    daily = serializers.DateField(allow_null=True)
    ranked = serializers.BooleanField()


class HintSerializer(serializers.Serializer):
    move = serializers.CharField(
        allow_null=True,
        help_text="the move to play now; hints followed one after another play one line of "
        "the solver's to its end, and none leads back to a position the game has stood at "
        "(undone moves aside): null when every legal move would (undo instead)",
    )


class AllTimeEntrySerializer(serializers.Serializer):
    rank = serializers.IntegerField(
        help_text="players equal in wins, best par ratio and longest streak share it"
    )
    username = serializers.CharField()
    played = serializers.IntegerField()
    wins = serializers.IntegerField()
    best_par_ratio = serializers.FloatField()
    longest_streak = serializers.IntegerField()
