"""Thin REST views over games.services (writes) and games.selectors (reads)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiExample, OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response

from games import engine, events, replay, selectors, services
from games.api import serializers as s
from games.api.throttles import HintThrottle, LiveThrottle, NewGameThrottle, PositionThrottle
from games.broadcast import fan_out_sync
from games.models import Game
from games.services import Outcome
from server.api_view import ApiView
from server.json_input import validated
from server.openapi import (
    BAD_TOKEN,
    BODY,
    GAME_READ,
    GAME_WRITE,
    PAGING,
    SIGNED_IN,
    errors,
    whole_number_param,
)
from server.query_params import whole_number

GAME_EXAMPLE = OpenApiExample(
    "A Countess game",
    response_only=True,
    value={
        "id": 42,
        "variant": "countess",
        "deal": 1234,
        "daily": None,
        "owner": "ada",
        "v": 17,
        "status": "playing",
        "seconds": 95,
        "rank": None,
        "state": {
            "variant": "countess",
            "tableau": [["9C", "8H"], ["KS"], [], ["4D"]],
            "foundations": [["AS", "2S"], [], [], []],
            "cells": [],
            "stock": {"count": 40, "top": None},
            "waste": ["7H", "QD"],
            "status": "playing",
            "moves": 17,
            "legal_moves": ["draw", "waste-t1"],
            "last_move": "t3-f0",
        },
        "started_at": "2026-11-22T10:00:00Z",
        "finished_at": None,
    },
)


def publish(outcome: Outcome, user) -> Response:  # noqa: ANN001
    """Tell the game's sockets what a REST write did, and answer with the game. The write has
    committed: the answer is built without asking the database for the owner (only its owner
    writes to a game), so a connection lost right after the commit cannot turn a move that
    stands into an error."""
    fan_out_sync(outcome.game.pk, events.wire_frames(outcome))
    game = outcome.game
    Game.owner.field.set_cached_value(game, user)
    return Response(
        selectors.game_payload(game, outcome.state, outcome.move, viewer_id=game.owner_id)
    )


MAX_ROW_NUMBER = 2**31 - 1  # a move's n is a 32-bit column
MAX_GAME_ID = 2**63 - 1  # a game's id is a 64-bit one


class VariantListView(ApiView):
    permission_classes = [AllowAny]

    @extend_schema(
        responses={200: s.VariantSerializer(many=True), **errors(*BAD_TOKEN)},
        summary="The five games",
    )
    def get(self, request: Request) -> Response:
        return Response(
            [
                {
                    "id": v.id,
                    "name": v.name,
                    "decks": v.decks,
                    "cards": v.cards,
                    "piles": {
                        "tableau": v.tableau_piles,
                        "foundations": v.foundations,
                        "cells": v.cells,
                        "stock": v.stock,
                        "waste": v.waste,
                    },
                    "rules": list(v.rules),
                    "summary": v.summary,
                }
                for v in engine.VARIANTS.values()
            ]
        )


class GameListView(ApiView):
    def get_throttles(self) -> list:
        return [NewGameThrottle()] if self.request.method == "POST" else []

    @extend_schema(
        parameters=[
            whole_number_param(
                "before", 1, MAX_GAME_ID, "only games started before this one (id < before)"
            ),
            whole_number_param(
                "limit",
                1,
                selectors.MAX_GAMES_PAGE,
                f"at most this many games; default {selectors.LATEST_GAMES}",
            ),
        ],
        responses={200: s.GameSerializer(many=True), **errors(*SIGNED_IN, *PAGING)},
        summary="Your games, newest first",
        description="The latest 50 by default. Older ones come a page at a time: the next "
        "page is `?before=` the last `id` received. `rank` is null here: open a game for its "
        "rank.",
    )
    def get(self, request: Request) -> Response:
        before = whole_number(request, "before", 0, 1, MAX_GAME_ID) or None  # 0: none given
        limit = whole_number(request, "limit", selectors.LATEST_GAMES, 1, selectors.MAX_GAMES_PAGE)
        return Response(selectors.latest_games(request.user, before, limit))

    @extend_schema(
        request=s.NewGameSerializer,
        responses={
            201: s.GameSerializer,
            **errors(*SIGNED_IN, "invalid", "rate_limited", *BODY),
        },
        examples=[
            OpenApiExample(
                "Practice deal 1", value={"variant": "portuguese", "deal": 1}, request_only=True
            ),
            GAME_EXAMPLE,
        ],
        summary="Start a practice game (a random deal if none is given)",
    )
    def post(self, request: Request) -> Response:
        data = validated(s.NewGameSerializer, request)
        game = services.start_practice(request.user, data["variant"], data.get("deal"))
        return Response(
            selectors.game_payload(game, viewer_id=request.user.pk), status=status.HTTP_201_CREATED
        )


class GameDetailView(ApiView):
    @extend_schema(
        responses={200: s.GameSerializer, **errors(*GAME_READ)},
        examples=[GAME_EXAMPLE],
        summary="A game as any signed-in user may see it",
    )
    def get(self, request: Request, game_id: int) -> Response:
        game = selectors.viewable_game(game_id, request.user)
        return Response(selectors.game_payload(game, viewer_id=request.user.pk))


# The most moves one answer carries. A game may hold 100,000 actions (GAME_MAX_MOVES): its
# whole history was 7 MB and 1.1 s of the one event loop's process, and a client that asked
# for it 16 times at once stalled every other request of that process for seconds. A page
# this long is about 50 ms, and holds the whole history of nearly every game played.
MOVES_PAGE = 5000


class MoveListView(ApiView):
    @extend_schema(
        parameters=[
            whole_number_param(
                "after", 0, MAX_ROW_NUMBER, "only the moves after this one (n > after); default 0"
            ),
            whole_number_param(
                "limit",
                1,
                MAX_ROW_NUMBER,
                f"at most this many moves; default, and at most, {MOVES_PAGE}",
            ),
            OpenApiParameter(
                "Link",
                str,
                OpenApiParameter.HEADER,
                description='`<URL>; rel="next"`: the next page, when more moves follow than '
                "this answer holds and your own `limit` did not end it",
                response=[200],
            ),
        ],
        responses={200: s.MoveRowSerializer(many=True), **errors(*GAME_READ, *PAGING)},
        summary="The move history, oldest first",
        description=f"Every move of the game, {MOVES_PAGE} at most per answer. A client that "
        "already has the first moves asks for the rest with `after`, and reads a long history "
        "in pieces with `limit`: the next piece starts after the last `n` it received. When "
        f"more moves follow than one answer holds ({MOVES_PAGE}), its `Link` header names the "
        'next page (`rel="next"`); an answer that your own `limit` ended names none.',
    )
    def get(self, request: Request, game_id: int) -> Response:
        game = selectors.viewable_game(game_id, request.user)  # 403/404 before a bad query
        after = whole_number(request, "after", 0, 0, MAX_ROW_NUMBER)
        asked = whole_number(request, "limit", MAX_ROW_NUMBER, 1, MAX_ROW_NUMBER)  # or all
        page = min(asked, MOVES_PAGE)
        rows = selectors.move_history(game, after, page + 1)  # one more: do others follow?
        response = Response(rows[:page])
        if len(rows) > page and asked > page:  # cut short by the page, not by the client
            query = f"after={rows[page - 1]['n']}"
            if "limit" in request.query_params:
                query += f"&limit={asked - page}"
            url = request.build_absolute_uri(f"{request.path}?{query}")
            response["Link"] = f'<{url}>; rel="next"'
        return response

    @extend_schema(
        request=s.MoveRequestSerializer,
        responses={200: s.GameSerializer, **errors(*GAME_WRITE, *BODY)},
        examples=[
            OpenApiExample("Move a card", value={"move": "t3-f0", "v": 12}, request_only=True),
            GAME_EXAMPLE,
        ],
        summary="Play one move on the version you saw",
    )
    def post(self, request: Request, game_id: int) -> Response:
        data = validated(s.MoveRequestSerializer, request)
        outcome = services.play_move(game_id, request.user, data["move"], data["v"])
        return publish(outcome, request.user)


MAX_POSITIONS_PAGE = 200


class PositionListView(ApiView):
    throttle_classes = [PositionThrottle]

    @extend_schema(
        parameters=[
            whole_number_param("start", 0, MAX_ROW_NUMBER, "the first version; default 0"),
            whole_number_param(
                "limit",
                1,
                MAX_POSITIONS_PAGE,
                f"at most this many positions; default {MAX_POSITIONS_PAGE}",
            ),
        ],
        responses={
            200: s.PositionSerializer(many=True),
            **errors(*GAME_READ, *PAGING, "rate_limited"),
        },
        summary="A replay: the game as it stood at each version",
        description="Version `start` (0, the deal, by default) and those after it, up to the "
        "game's current one: each state as the players saw it then, with the move that made it "
        "as `last_move`; no face-down card, as ever. Any game you may open, finished or not. "
        "The next page starts at the last `v` received + 1.",
    )
    def get(self, request: Request, game_id: int) -> Response:
        game = selectors.viewable_game(game_id, request.user)
        start = whole_number(request, "start", 0, 0, MAX_ROW_NUMBER)
        limit = whole_number(request, "limit", MAX_POSITIONS_PAGE, 1, MAX_POSITIONS_PAGE)
        return Response(replay.positions(game, start, limit))


class UndoView(ApiView):
    @extend_schema(
        request=s.UndoRequestSerializer,
        responses={200: s.GameSerializer, **errors(*GAME_WRITE, *BODY)},
        summary="Undo the last move (it counts as a move)",
        description="Refused (`game_over`) once the game has ended, except in a practice game "
        "that is stuck: the move that left no move is taken back and the game plays on. In a "
        "ranked attempt a move that turned a card up (a draw, a play from Barricade A's stock) "
        "cannot be undone, nor a move to a foundation (RULES.md C3): `illegal_move`.",
    )
    def post(self, request: Request, game_id: int) -> Response:
        data = validated(s.UndoRequestSerializer, request)
        return publish(services.undo(game_id, request.user, data["v"]), request.user)


class ResignView(ApiView):
    @extend_schema(
        request=None,
        responses={200: s.GameSerializer, **errors(*GAME_READ, "game_over", *BODY)},
        summary="Give up: the game ends as it stands (no body needed; one sent must be JSON)",
    )
    def post(self, request: Request, game_id: int) -> Response:
        request.data  # noqa: B018 - a body, though none is needed, must be JSON: 400 bad_json
        return publish(services.resign(game_id, request.user), request.user)


class LiveGamesView(ApiView):
    throttle_classes = [LiveThrottle]

    @extend_schema(
        responses={200: s.LiveGameSerializer(many=True), **errors(*SIGNED_IN, "rate_limited")},
        summary="Games in progress that you may watch",
        description="Other players' games that are still playing and were played in the last "
        "10 minutes, or started in the last 5 and not played yet; most recently played first, "
        "at most 50. The played ones are found among the games of the latest 20,000 moves.",
    )
    def get(self, request: Request) -> Response:
        return Response(selectors.live_games(request.user))


class HintView(ApiView):
    throttle_classes = [HintThrottle]

    @extend_schema(
        responses={200: s.HintSerializer, **errors(*GAME_READ, "game_over", "rate_limited")},
        summary="A suggested next move (practice games only)",
        description="20 a minute per user; and the server solves a few at once, whoever asks "
        "(HINT_CONCURRENCY): past that, 429 `rate_limited` with a Retry-After.",
    )
    def get(self, request: Request, game_id: int) -> Response:
        return Response({"move": selectors.hint(game_id, request.user)})
