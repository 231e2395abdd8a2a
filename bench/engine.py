"""Engine speed: time of one step = legal_moves() + apply(one chosen move), per variant.

Random playouts over many deals with fixed seeds, so runs compare. Each game stops when it is
over or after --max-steps (random play can cycle forever). Usage:

    python bench/engine.py [--deals 200] [--max-steps 300] [--variant portuguese]
"""

from __future__ import annotations

import argparse
import gc
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from games.engine import VARIANTS, new_game  # noqa: E402


def bench_variant(variant: str, deals: int, max_steps: int, seed: int) -> dict[str, float]:
    samples: list[int] = []
    perf = time.perf_counter_ns
    outcomes = {"won": 0, "stuck": 0, "capped": 0}
    moves_per_step: list[int] = []
    for d in range(1, deals + 1):
        rnd = random.Random(seed * 1_000_003 + d)
        choice = rnd.choice
        deal = d if d % 2 else 32000 + d * 7919  # both shuffle paths
        s = new_game(variant, deal)
        for _ in range(max_steps):
            t0 = perf()
            legal = s.legal_moves()
            if not legal:
                samples.append(perf() - t0)
                break
            m = choice(legal)
            s = s.apply(m)
            samples.append(perf() - t0)
            moves_per_step.append(len(legal))
        st = s.status
        outcomes[st if st != "playing" else "capped"] += 1
    samples.sort()
    n = len(samples)
    return {
        "steps": n,
        "median_us": statistics.median(samples) / 1000,
        "p90_us": samples[int(n * 0.9)] / 1000,
        "p99_us": samples[int(n * 0.99)] / 1000,
        "mean_moves": statistics.mean(moves_per_step) if moves_per_step else 0.0,
        **outcomes,
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--deals", type=int, default=200)
    ap.add_argument("--max-steps", type=int, default=300)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--variant", choices=list(VARIANTS), action="append")
    args = ap.parse_args(argv)
    variants = args.variant or list(VARIANTS)
    print(f"python {sys.version.split()[0]}  deals={args.deals}  max_steps={args.max_steps}")
    print("step = legal_moves() + apply(random legal move); times in microseconds")
    header = (
        f"{'variant':<18}{'steps':>8}{'median':>9}{'p90':>9}{'p99':>9}"
        f"{'moves/pos':>11}{'won':>6}{'stuck':>7}{'capped':>8}"
    )
    print(header)
    print("-" * len(header))
    for v in variants:
        gc.collect()
        r = bench_variant(v, args.deals, args.max_steps, args.seed)
        print(
            f"{v:<18}{r['steps']:>8}{r['median_us']:>9.1f}{r['p90_us']:>9.1f}{r['p99_us']:>9.1f}"
            f"{r['mean_moves']:>11.1f}{r['won']:>6}{r['stuck']:>7}{r['capped']:>8}"
        )


if __name__ == "__main__":
    main()
