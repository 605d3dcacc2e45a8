"""Smoothed sign descent paths: 256 trajectories x 10^5 steps at (N, D) = (20, 100) (issue 24).

The batch is the grid eps (16 values) x alpha (16 values), one step size, gaussian data; it runs as
one float64 tensor program (`experiments.diagnet.engine`). Prints wall seconds, CPU seconds of this
process (load-independent up to cache effects), microseconds of CPU per step, the torch thread
count and the machine load before and after (os.getloadavg).

Usage: python benchmarks/signdescent_bench.py [--steps 100000] [--threads T] [--rule sign|gd|adam]
"""

from __future__ import annotations

import argparse
import os
import time

import torch

from certify.regression import regression_problem
from experiments.diagnet import DiagConfig, Rule, run_diag_paths


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=100_000)
    ap.add_argument(
        "--threads", type=int, default=None, help="torch threads (default: the engine's choice)"
    )
    ap.add_argument("--rule", default="sign", choices=[r.value for r in Rule])
    args = ap.parse_args()
    problem = regression_problem("gaussian", N=20, D=100, seed=0)
    cfg = DiagConfig(
        Rule(args.rule),
        eps=tuple(1e-3 * 1.3**i for i in range(16)),
        alpha=tuple(0.02 * 1.2**i for i in range(16)),
        lr=(1e-4,),
        steps=args.steps,
        record_every=max(1, args.steps // 100),
        betas=(0.9, 0.999) if args.rule == "adam" else (0.0, 0.0),
    )
    load0 = os.getloadavg()
    c0, w0 = time.process_time(), time.perf_counter()
    res = run_diag_paths(problem, cfg, threads=args.threads)
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    load1 = os.getloadavg()
    B = len(res.eps)
    print(
        f"rule {args.rule}: {B} trajectories x {args.steps} steps, (N, D) = (20, 100), float64, "
        f"threads {args.threads or 'auto'} (cpu_count {os.cpu_count()})"
    )
    print(
        f"wall {wall:.1f} s, CPU {cpu:.1f} s ({1e6 * cpu / args.steps:.0f} us CPU per step of the whole batch); "
        f"extrapolated to 10^5 steps: wall {wall * 1e5 / args.steps:.0f} s, CPU {cpu * 1e5 / args.steps:.0f} s"
    )
    print(
        f"load average (1, 5, 15 min) before {tuple(round(x, 1) for x in load0)}, "
        f"after {tuple(round(x, 1) for x in load1)}; torch {torch.__version__}"
    )
    print(
        f"finished: {sum(s.value == 'finished' for s in res.status)}/{B}; final loss median "
        f"{float(sorted(res.loss[:, -1])[B // 2]):.2e}"
    )


if __name__ == "__main__":
    main()
