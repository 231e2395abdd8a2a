"""Daily challenges, leaderboards and player profiles over REST."""

from __future__ import annotations

from django.conf import settings
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response

from games import clock, daily, leaderboards, selectors
from games.api import serializers as s
from games.api.throttles import NewGameThrottle
from games.models import VARIANT_IDS
from games.services import check_variant
from server.api_view import ApiView
from server.openapi import BAD_TOKEN, CHALLENGE, PAGING, SIGNED_IN, errors, whole_number_param
from server.query_params import whole_number

# Far past any board (a million pages of 100), and far inside the database's 64-bit OFFSET.
MAX_PAGE = 1_000_000

PAGE_PARAMS = [
    whole_number_param("page", 1, MAX_PAGE, "1-based page number"),
    whole_number_param(
        "page_size",
        1,
        leaderboards.MAX_PAGE_SIZE,
        f"entries per page, at most {leaderboards.MAX_PAGE_SIZE}",
    ),
]
VARIANT_PARAM = OpenApiParameter(
    "variant",
    {"type": "string", "enum": list(VARIANT_IDS)},
    OpenApiParameter.PATH,
    description="one of the five games (`GET /api/variants`)",
)
# A challenge's URL: its day (UTC, YYYY-MM-DD only: games.daily.parse_day) and its game.
CHALLENGE_PARAMS = [
    OpenApiParameter(
        "date",
        {"type": "string", "format": "date"},
        OpenApiParameter.PATH,
        description="the challenge's day, YYYY-MM-DD (UTC), today or before",
    ),
    VARIANT_PARAM,
]


def paging(request: Request) -> tuple[int, int]:
    page = whole_number(request, "page", 1, 1, MAX_PAGE)
    size = whole_number(request, "page_size", leaderboards.PAGE_SIZE, 1, leaderboards.MAX_PAGE_SIZE)
    return page, size


class DailyListView(ApiView):
    permission_classes = [AllowAny]

    @extend_schema(
        responses={200: s.DailyListSerializer, **errors(*BAD_TOKEN, "unavailable")},
        summary="Today's (UTC) five challenges and your attempt at each",
        description="Made on the first request of the day if no job made them (this can take "
        "a little while). The deal number is not sent until the day is over.",
    )
    def get(self, request: Request) -> Response:
        user = request.user
        # One "today" for the whole answer: read again after the certifications, it could be
        # the next day's date beside the day before's challenges.
        today = clock.today()
        challenges = daily.ensure_day(today)
        attempts = daily.ranked_attempts(user, challenges) if user.is_authenticated else {}
        entries = selectors.daily_entries(challenges, attempts)
        return Response(
            {
                "date": today.isoformat(),
                "challenges": entries,
                "watch_after_own_attempt": settings.WATCH_AFTER_OWN_ATTEMPT,
            }
        )


class DailyPlayView(ApiView):
    @extend_schema(
        request=None,
        parameters=CHALLENGE_PARAMS,
        responses={201: s.GameSerializer, 200: s.GameSerializer, **errors(*SIGNED_IN, *CHALLENGE)},
        summary="Start (201) or resume (200) your ranked attempt",
        description="Only today's challenge is ranked; for a past day this starts a practice "
        "game on its deal (revealed), or resumes the one you left unfinished (200). One ranked "
        "attempt per user: calling again resumes it. To start another practice game on a "
        "daily deal, use the practice endpoint.",
    )
    def post(self, request: Request, date: str, variant: str) -> Response:
        challenge = daily.challenge_for(date, variant)
        game, created = daily.play_daily(request.user, challenge)
        return Response(
            selectors.game_payload(game, viewer_id=request.user.pk), status=201 if created else 200
        )


class DailyPracticeView(ApiView):
    throttle_classes = [NewGameThrottle]

    @extend_schema(
        request=None,
        parameters=CHALLENGE_PARAMS,
        responses={
            201: s.GameSerializer,
            **errors(*SIGNED_IN, *CHALLENGE, "forbidden", "rate_limited"),
        },
        summary="Practise a daily deal (after your ranked attempt, or a past day)",
    )
    def post(self, request: Request, date: str, variant: str) -> Response:
        challenge = daily.challenge_for(date, variant)
        game = daily.start_daily_practice(request.user, challenge)
        return Response(selectors.game_payload(game, viewer_id=request.user.pk), status=201)


class DailyLeaderboardView(ApiView):
    permission_classes = [AllowAny]

    @extend_schema(
        parameters=[*CHALLENGE_PARAMS, *PAGE_PARAMS],
        responses={200: s.LeaderboardSerializer, **errors(*BAD_TOKEN, *CHALLENGE, *PAGING)},
        summary="The day's ranked entries, with your own entry even when off the page",
        description="Order: won first, then more cards on the foundations, fewer moves, less "
        "time, who finished first. Ranks are 1..N (ties share nothing). Today's board lists "
        "finished attempts; once the day is over, open attempts count as they stand.",
    )
    def get(self, request: Request, date: str, variant: str) -> Response:
        page, size = paging(request)
        challenge = daily.challenge_for(date, variant)
        body = leaderboards.board_page(challenge, page, size)
        body["me"] = leaderboards.my_entry(challenge, request.user)
        return Response(body)


class AllTimeLeaderboardView(ApiView):
    permission_classes = [AllowAny]

    @extend_schema(
        parameters=[VARIANT_PARAM, *PAGE_PARAMS],
        responses={
            200: inline_serializer(
                "AllTimeBoard",
                {
                    "variant": serializers.CharField(),
                    "total": serializers.IntegerField(),
                    "page": serializers.IntegerField(),
                    "page_size": serializers.IntegerField(),
                    "entries": s.AllTimeEntrySerializer(many=True),
                },
            ),
            **errors(*BAD_TOKEN, "unknown_variant", *PAGING),
        },
        summary="All-time: daily wins, best par ratio, longest streak",
        description="Ranked by daily wins, then best par ratio, then longest streak; players "
        "equal in all three share a rank (1, 1, 3).",
    )
    def get(self, request: Request, variant: str) -> Response:
        check_variant(variant)
        page, size = paging(request)
        return Response(leaderboards.alltime_board(variant, page, size))


class UserProfileView(ApiView):
    permission_classes = [AllowAny]

    @extend_schema(
        responses={200: s.ProfileSerializer, **errors(*BAD_TOKEN, "not_found")},
        summary="A player's games per variant, daily streaks and recent results",
    )
    def get(self, request: Request, username: str) -> Response:
        user = selectors.player_named(username)
        return Response(
            {
                "username": user.username,
                "date_joined": user.date_joined,
                **selectors.player_profile(user),
            }
        )
