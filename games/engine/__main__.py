"""Command line for the engine and its solver.

    python -m games.engine deal VARIANT N [--reveal]
    python -m games.engine solve VARIANT N [--time S] [--nodes N] [--moves "t0-t2 t3-f0"]
    python -m games.engine hint VARIANT N [--time S] [--moves ...]

``--moves`` replays a line from the deal first, so a hint or a solve can start mid-game.
"""

from __future__ import annotations

import argparse
import sys

from . import VARIANTS, EngineError, replay


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m games.engine",
        description=__doc__,
        formatter_class=argparse.RawTextHelpFormatter,
    )
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name in ("deal", "solve", "hint"):
        p = sub.add_parser(name)
        p.add_argument("variant", choices=list(VARIANTS))
        p.add_argument("deal", type=int)
        p.add_argument("--moves", default="", help="moves to replay from the deal first")
        if name == "deal":
            p.add_argument("--reveal", action="store_true", help="show face-down stock cards")
        else:
            p.add_argument("--time", type=float, default=10.0 if name == "solve" else 1.0)
        if name == "solve":
            p.add_argument("--nodes", type=int, default=None)
    a = ap.parse_args(argv)
    try:
        state = replay(a.variant, a.deal, a.moves.split())
    except EngineError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        return 2

    if a.cmd == "deal":
        print(state.render(reveal=a.reveal))
        return 0

    from .solver import hint, solve

    if a.cmd == "hint":
        print(hint(state, time_limit=a.time) or "(no legal move)")
        return 0
    r = solve(state, time_limit=a.time, max_nodes=a.nodes)
    total = VARIANTS[a.variant].cards
    print(f"outcome  {r.outcome}")
    print(f"par      {r.par}/{total}{' (proven optimal)' if r.par_proven else ''}")
    print(f"nodes    {r.nodes}")
    print(f"time     {r.seconds:.2f} s")
    print(f"line     {len(r.line)} moves")
    for k in range(0, len(r.line), 12):
        print("  " + " ".join(r.line[k : k + 12]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
