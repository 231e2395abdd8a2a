"""`manage.py solve VARIANT N [--time S]`: the engine's command line, from manage.py.

Same as `python -m games.engine solve ...`; `manage.py solve deal portuguese 1` and
`manage.py solve hint spanish 7` reach the other subcommands.
"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from games.engine.__main__ import main as engine_cli

SUBCOMMANDS = {"deal", "solve", "hint"}


class Command(BaseCommand):
    help = "Print a deal, solve it, or hint a move (the games.engine command line)."

    def add_arguments(self, parser) -> None:  # noqa: ANN001
        parser.add_argument("args", nargs="+", help="[deal|solve|hint] VARIANT N")
        parser.add_argument("--time", type=float, help="solver time budget in seconds")

    def handle(self, *args: str, time: float | None = None, **options) -> None:  # noqa: ANN003
        argv = list(args)
        if argv[0] not in SUBCOMMANDS:
            argv.insert(0, "solve")
        if time is not None:
            argv += ["--time", str(time)]
        code = engine_cli(argv)
        if code:
            raise CommandError(f"games.engine exited with {code}")
