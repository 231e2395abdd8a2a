"""Solver benchmark: how many deals each variant's solver decides, and how fast.

    .venv/bin/python bench/solver.py                       # 200 deals x 5 variants, 10 s each
    .venv/bin/python bench/solver.py --deals 1-50 --budget 2 --variants portuguese,spanish
    .venv/bin/python bench/solver.py --certify             # time to pick+certify 5 daily deals

The table: per variant, the fraction of deals proven winnable / proven unwinnable / undecided,
the median and maximum seconds per deal; for Countess and Barricade A also the mean par and how
often it was proven optimal.  Runs on ``--procs`` processes (default 2, the machine's cores).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from multiprocessing import Pool

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from games.engine import VARIANTS, new_game  # noqa: E402
from games.engine.solver import solve  # noqa: E402

PAR_VARIANTS = ("countess", "barricade")


def _one(job: tuple[str, int, float]) -> dict:
    variant, deal, budget = job
    r = solve(new_game(variant, deal), time_limit=budget)
    return {
        "variant": variant,
        "deal": deal,
        "outcome": r.outcome,
        "par": r.par,
        "proven": r.par_proven,
        "seconds": r.seconds,
        "nodes": r.nodes,
    }


def _deals(spec: str) -> list[int]:
    out: list[int] = []
    for part in spec.split(","):
        if "-" in part:
            a, b = part.split("-")
            out += range(int(a), int(b) + 1)
        else:
            out.append(int(part))
    return out


def table(rows: list[dict], variants: list[str]) -> str:
    head = (
        f"{'variant':<17}{'deals':>6}{'won':>8}{'lost':>8}{'undec.':>8}"
        f"{'median s':>10}{'max s':>8}{'mean par':>10}{'par proven':>12}"
    )
    lines = [head, "-" * len(head)]
    for v in variants:
        rs = [r for r in rows if r["variant"] == v]
        if not rs:
            continue
        n = len(rs)

        def pct(outcome: str, rs: list[dict] = rs, n: int = n) -> str:
            return f"{100.0 * sum(r['outcome'] == outcome for r in rs) / n:.1f}%"

        secs = [r["seconds"] for r in rs]
        par = f"{statistics.mean(r['par'] for r in rs):.2f}" if v in PAR_VARIANTS else "-"
        proven = f"{100.0 * sum(r['proven'] for r in rs) / n:.1f}%" if v in PAR_VARIANTS else "-"
        lines.append(
            f"{v:<17}{n:>6}{pct('won'):>8}{pct('lost'):>8}{pct('unknown'):>8}"
            f"{statistics.median(secs):>10.2f}{max(secs):>8.2f}{par:>10}{proven:>12}"
        )
    return "\n".join(lines)


def certify(variant: str, start: int, budget: float, candidates: int) -> dict:
    """Pick a daily deal the way the server would: first proven-winnable candidate (or, for
    Countess/Barricade, the best par among ``candidates``), and time it."""
    t0 = time.perf_counter()
    tried = 0
    if variant in PAR_VARIANTS:
        best = None
        for deal in range(start, start + candidates):
            tried += 1
            r = solve(new_game(variant, deal), time_limit=budget)
            if best is None or (r.par, r.par_proven) > (best[1], best[2]):
                best = (deal, r.par, r.par_proven)
        deal, par, proven = best  # type: ignore[misc]
        return {
            "variant": variant,
            "deal": deal,
            "par": par,
            "proven": proven,
            "tried": tried,
            "seconds": time.perf_counter() - t0,
        }
    deal = start
    while True:
        tried += 1
        r = solve(new_game(variant, deal), time_limit=budget)
        if r.outcome == "won":
            return {
                "variant": variant,
                "deal": deal,
                "par": r.par,
                "proven": True,
                "tried": tried,
                "seconds": time.perf_counter() - t0,
            }
        deal += 1


def _cert_job(args: tuple) -> dict:
    return certify(*args)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--deals", default="1-200", help="e.g. 1-200 or 1,5,9 (default 1-200)")
    ap.add_argument("--budget", type=float, default=10.0, help="seconds per deal (default 10)")
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--procs", type=int, default=2)
    ap.add_argument("--json", help="also write every row to this file")
    ap.add_argument("--certify", action="store_true", help="time picking one daily per variant")
    ap.add_argument("--start", type=int, default=1000, help="first candidate deal (--certify)")
    ap.add_argument("--candidates", type=int, default=5, help="Countess/Barricade candidates")
    ap.add_argument("--cert-budget", type=float, default=5.0, help="seconds per candidate")
    a = ap.parse_args()
    variants = [v for v in a.variants.split(",") if v]

    if a.certify:
        t0 = time.perf_counter()
        jobs = [(v, a.start, a.cert_budget, a.candidates) for v in variants]
        with Pool(a.procs) as pool:
            rows = pool.map(_cert_job, jobs, chunksize=1)
        wall = time.perf_counter() - t0
        print(f"{'variant':<17}{'deal':>7}{'par':>5}{'proven':>8}{'tried':>7}{'seconds':>9}")
        for r in rows:
            print(
                f"{r['variant']:<17}{r['deal']:>7}{r['par']:>5}{str(r['proven']):>8}"
                f"{r['tried']:>7}{r['seconds']:>9.1f}"
            )
        total = sum(r["seconds"] for r in rows)
        print(f"all five: {total:.1f} s of solver time, {wall:.1f} s wall on {a.procs} processes")
        return

    jobs = [(v, d, a.budget) for v in variants for d in _deals(a.deals)]
    rows = []
    t0 = time.perf_counter()
    with Pool(a.procs) as pool:
        for k, r in enumerate(pool.imap_unordered(_one, jobs, chunksize=1), 1):
            rows.append(r)
            if k % 25 == 0:
                print(f"  {k}/{len(jobs)} done, {time.perf_counter() - t0:.0f} s", flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(sorted(rows, key=lambda r: (r["variant"], r["deal"])), f, indent=0)
    print(
        f"budget {a.budget:g} s/deal, deals {a.deals}, {a.procs} processes, "
        f"wall {time.perf_counter() - t0:.0f} s"
    )
    print(table(rows, variants))


if __name__ == "__main__":
    main()
