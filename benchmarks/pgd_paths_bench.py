"""p-GD paths benchmark (issue 23, must reach: 64 trajectories x 10^5 steps on (n, d) = (200, 50) in
<= 2 minutes on 2 cores, no NaN, a rate verdict or an honest "inconclusive" with its reason).

Planted separable binary data `classification_problem(n=200, d=50, seed=0)`; grid p in {1.5, 2, 3, 4}
x lr in {0.1, 1} x 8 initializations (scale 0.1) = 64 trajectories; logistic loss; normalized steps by
default (``--constant`` for constant steps). Prints the load before and after, the certification,
training (wall and CPU of the loop: the machine is shared, CPU time is what the loop itself used)
and analysis times, whether any recorded value is NaN, and every (p, lr) group's verdict.

    PYTHONPATH=. python benchmarks/pgd_paths_bench.py [--steps 100000] [--constant]
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np

from certify import classification_problem
from experiments.linear import PgdConfig, run_pgd


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=100_000)
    ap.add_argument("--constant", action="store_true")
    ap.add_argument("--json", default=None, help="also write the summary here")
    args = ap.parse_args()
    print(f"load before: {os.getloadavg()}")
    problem = classification_problem(n=200, d=50, seed=0)
    config = PgdConfig(
        ps=(1.5, 2.0, 3.0, 4.0),
        lrs=(0.1, 1.0),
        inits=8,
        init_scale=0.1,
        loss="logistic",
        normalize=not args.constant,
        steps=args.steps,
        records=200,
    )
    t0 = time.perf_counter()
    run = run_pgd(problem, config, name="classification_problem(n=200, d=50, seed=0)")
    wall = time.perf_counter() - t0
    paths = run.paths
    nan = any(np.isnan(a).any() for a in (paths.W, paths.norms, paths.margin, paths.bregman))
    print(f"load after: {os.getloadavg()}")
    print(
        f"trajectories {len(config.grid)}, steps {args.steps}, normalized {config.normalize}: total wall "
        f"{wall:.1f} s; {run.seconds}; any NaN: {nan}; statuses "
        f"{ {s.value: paths.status.count(s) for s in set(paths.status)} }"
    )
    for line in run.lines():
        print(line)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(run.to_json(), fh, indent=1)


if __name__ == "__main__":
    main()
