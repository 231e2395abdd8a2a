"""Deals, games, their moves and the daily challenges.

The stored `Game.state` is a cache: the truth is the deal plus the Move rows, which
`manage.py replay_verify` replays to prove the cache right.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from games import clock

VARIANT_CHOICES = [
    ("portuguese", "Portuguese Solitaire"),
    ("spanish", "Spanish Patience"),
    ("countess", "Countess"),
    ("barricade", "Barricade A"),
    ("chinese_freecell", "Chinese FreeCell"),
]
VARIANT_IDS = [v for v, _ in VARIANT_CHOICES]


class Deal(models.Model):
    """One reproducible layout: a variant and a deal number (RULES.md C6)."""

    variant = models.CharField(max_length=32, choices=VARIANT_CHOICES)
    number = models.PositiveBigIntegerField()  # up to services.MAX_DEAL

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["variant", "number"], name="deal_variant_number_uniq"),
            models.CheckConstraint(condition=Q(number__gte=1), name="deal_number_positive"),
        ]

    def __str__(self) -> str:
        return f"{self.variant} #{self.number}"


class DailyChallenge(models.Model):
    """The day's certified deal for one variant (RULES.md W1)."""

    date = models.DateField()
    variant = models.CharField(max_length=32, choices=VARIANT_CHOICES)
    deal = models.ForeignKey(Deal, on_delete=models.PROTECT, related_name="dailies")
    winnable = models.BooleanField()
    # Cards the certified line brings to the foundations (all of them when winnable).
    par_cards = models.PositiveSmallIntegerField()
    # Length of the certified line, in moves.
    par_moves = models.PositiveIntegerField()
    line = models.JSONField(default=list)
    par_proven = models.BooleanField(default=False)
    candidates_tried = models.PositiveSmallIntegerField(default=1)
    solver_seconds = models.FloatField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["date", "variant"], name="daily_date_variant_uniq"),
        ]
        ordering = ["-date", "variant"]

    def __str__(self) -> str:
        return f"daily {self.date} {self.variant}"


class Game(models.Model):
    class Status(models.TextChoices):
        PLAYING = "playing"
        WON = "won"
        STUCK = "stuck"
        RESIGNED = "resigned"

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="games"
    )
    deal = models.ForeignKey(Deal, on_delete=models.PROTECT, related_name="games")
    # The daily challenge whose deal this game plays, if any. Only `ranked` games count on
    # its leaderboard; a replay of the deal (after the ranked attempt, or a past day) is not.
    daily = models.ForeignKey(
        DailyChallenge, null=True, blank=True, on_delete=models.PROTECT, related_name="games"
    )
    ranked = models.BooleanField(default=False)
    # A practice game whose owner named its deal: its number tells the owner nothing new, so
    # the owner is shown it even where a face-down stock hides it from everyone else.
    deal_chosen = models.BooleanField(default=False)
    # 0 when dealt, +1 per accepted move or undo: also the move count shown to players
    # (an undo counts as a move) and always the number of Move rows.
    version = models.PositiveIntegerField(default=0)
    state = models.JSONField()
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PLAYING)
    foundation_cards = models.PositiveSmallIntegerField(default=0)
    # Whole seconds of server time from the start to the last move: what players see and rank by.
    seconds = models.PositiveIntegerField(default=0)
    started_at = models.DateTimeField(auto_now_add=True)
    last_move_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["owner", "daily"],
                condition=Q(ranked=True),
                name="game_one_ranked_attempt_per_daily",
            ),
            models.CheckConstraint(
                condition=Q(ranked=False) | Q(daily__isnull=False), name="game_ranked_has_daily"
            ),
            models.CheckConstraint(
                condition=Q(status="playing", finished_at__isnull=True)
                | (~Q(status="playing") & Q(finished_at__isnull=False)),
                name="game_finished_iff_not_playing",
            ),
        ]
        indexes = [
            # A player's games, newest first, a page at a time (`GET /api/games?before=`).
            models.Index(fields=["owner", "-id"], name="game_owner_newest_idx"),
            # The games started in the last few minutes, for the live list (selectors).
            models.Index(fields=["started_at"], name="game_started_idx"),
            # A day's board: its ranked attempts, ordered by the query (games.leaderboards).
            # No index may cover a column a move rewrites (version, foundation_cards, seconds,
            # state...): on PostgreSQL that makes every move's update a new entry in every
            # index of the table instead of a heap-only (HOT) update
            # (tests/games/test_game_row_updates.py). With the ordered board index this
            # replaces, 100 sockets made a quarter to a third fewer moves per second; sorting
            # a 10,000-player board instead costs about 3 ms a page (bench/leaderboard.py).
            models.Index(fields=["daily"], name="game_daily_ranked_idx", condition=Q(ranked=True)),
        ]

    # Not columns: what the move path knows of the game's history, kept with the row in the
    # process's cache (games.services._advance). `standing`: the last moves of the history
    # that no undo took back, in order, the last of them the one an undo takes back; and
    # `standing_whole`: whether they are all of them. An instance read from the database
    # knows none (empty, not whole), and its first undo reads the history.
    standing: tuple[str, ...] = ()
    standing_whole: bool = False

    def __str__(self) -> str:
        return f"game {self.pk} ({self.deal}) by {self.owner_id}"

    @property
    def variant(self) -> str:
        return self.deal.variant

    @property
    def finished(self) -> bool:
        # The plain string, not `self.Status.PLAYING`: reading an enum member through the
        # class cost a move's batch several times this comparison, three times per move.
        return self.status != "playing"

    @property
    def at_move_limit(self) -> bool:
        """Whether the game has taken as many actions as a game may (GAME_MAX_MOVES): no move
        or undo has room in its history any more, and it can only be resigned."""
        return self.version >= settings.GAME_MAX_MOVES

    @property
    def day_over(self) -> bool:
        """A ranked attempt still open when its day ends counts as it stands: it takes no more
        moves. (`daily_date` is there on rows the move path loads itself.)"""
        if not self.ranked or self.finished:
            return False
        date = self.__dict__.get("daily_date") or self.daily.date
        return date < clock.today()


class Move(models.Model):
    """One accepted action: a move string or "undo". Row n is what took version n-1 to n."""

    # No index of its own: the unique (game, n) constraint's index serves every lookup by game.
    game = models.ForeignKey(
        Game, on_delete=models.CASCADE, related_name="move_rows", db_index=False
    )
    n = models.PositiveIntegerField()
    move = models.CharField(max_length=16)
    at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["game", "n"], name="move_game_n_uniq"),
            models.CheckConstraint(condition=Q(n__gte=1), name="move_n_positive"),
        ]
        ordering = ["game", "n"]

    def __str__(self) -> str:
        return f"{self.game_id}#{self.n} {self.move}"

    @property
    def v(self) -> int:
        """The version this move was played on."""
        return self.n - 1


class VariantRecord(models.Model):
    """A player's running totals, updated when one of their ranked attempts finishes, or when
    its day ends with the attempt still open (it counts as it stands; `CountedAttempt` records
    that an attempt is in them).

    `variant` is a variant id, or "all" for the streak over every variant. A day counts toward
    a streak when the player played a ranked attempt that day: finished it, or had it open
    when the day ended.
    """

    ALL = "all"

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="records"
    )
    variant = models.CharField(max_length=32)
    played = models.PositiveIntegerField(default=0)
    wins = models.PositiveIntegerField(default=0)
    best_par_ratio = models.FloatField(default=0)
    current_streak = models.PositiveIntegerField(default=0)
    best_streak = models.PositiveIntegerField(default=0)
    last_date = models.DateField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "variant"], name="record_user_variant_uniq"),
        ]
        indexes = [
            # The all-time board's order to the last key (the user breaks ties), so a page is
            # read from the index in order, with no sort of the variant's every record.
            models.Index(
                fields=["variant", "-wins", "-best_par_ratio", "-best_streak", "user"],
                name="record_alltime_order_idx",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.user_id} {self.variant}: {self.wins} wins"


class CountedAttempt(models.Model):
    """A ranked attempt that is in its player's records (games.records): finished, or left
    open when its day ended. Inserted in the transaction that counts it, with the game as its
    key, so no attempt is counted twice."""

    game = models.OneToOneField(
        Game, on_delete=models.CASCADE, primary_key=True, related_name="counted"
    )

    def __str__(self) -> str:
        return str(self.game_id)


class ClosedDay(models.Model):
    """A day old enough that no attempt of it can still appear (games.records.SETTLED_DAYS),
    whose attempts left open have all been counted (games.records.close_day): later closes
    skip it."""

    date = models.DateField(primary_key=True)

    def __str__(self) -> str:
        return self.date.isoformat()
