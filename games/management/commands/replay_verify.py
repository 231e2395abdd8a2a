"""`manage.py replay_verify`: replay every stored game from its deal and moves, and report any
game whose cached state (or version, or status) differs from what the moves produce."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from games import engine
from games.models import Game, Move


def verify_game(game: Game, moves: list[str]) -> list[str]:
    """What is wrong with one game's cache, as readable lines (none when it is right)."""
    problems = []
    try:
        state = engine.replay(game.deal.variant, game.deal.number, moves)
    except engine.EngineError as exc:
        return [f"its moves do not replay: {exc.message}"]
    if game.version != len(moves):
        problems.append(f"version {game.version} but {len(moves)} move rows")
    if engine.State.from_dict(game.state) != state:
        problems.append("stored state differs from the replayed state")
    if game.foundation_cards != state.foundation_count:
        problems.append(f"foundation_cards {game.foundation_cards} != {state.foundation_count}")
    if game.status in ("won", "stuck") and game.status != state.status:
        problems.append(f"status {game.status} but the replay is {state.status}")
    if game.status == "playing" and state.status != "playing":
        problems.append(f"still playing but the replay is {state.status}")
    return problems


class Command(BaseCommand):
    help = "Replay every stored game and report any whose stored state differs."

    def add_arguments(self, parser) -> None:  # noqa: ANN001
        parser.add_argument("--batch", type=int, default=500)

    def handle(self, *args, batch: int = 500, **options) -> None:  # noqa: ANN001
        checked = bad = 0
        games = Game.objects.select_related("deal").order_by("pk")
        last = 0
        while True:
            chunk = list(games.filter(pk__gt=last)[:batch])
            if not chunk:
                break
            last = chunk[-1].pk
            moves: dict[int, list[str]] = {g.pk: [] for g in chunk}
            rows = Move.objects.filter(game_id__in=moves).order_by("game_id", "n")
            for game_id, move in rows.values_list("game_id", "move"):
                moves[game_id].append(move)
            for game in chunk:
                checked += 1
                for problem in verify_game(game, moves[game.pk]):
                    bad += 1
                    self.stdout.write(f"game {game.pk} ({game.deal}): {problem}")
        if bad:
            raise CommandError(f"{bad} problem(s) in {checked} games")
        self.stdout.write(self.style.SUCCESS(f"{checked} games replayed: all match"))
