"""``mdcert synth``: write the paper's seeded synthetic problem."""

from __future__ import annotations

import argparse

HELP = "write a seeded synthetic problem: unit-sphere tokens and z, random labels, unit decoder"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--n", type=int, default=6, help="examples (default 6)")
    parser.add_argument("--T", type=int, default=8, help="tokens per example (default 8)")
    parser.add_argument("--d", type=int, default=10, help="token dimension (default 10)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument("-o", "--output", required=True, help="output file, .npz or .json")


def run(args: argparse.Namespace) -> int:
    from certify import synthetic_problem
    from certify.errors import MdcertError
    from experiments.outputs import check_output_file, check_seed

    check_seed(args.seed, bounded=False)
    for name in ("n", "T", "d"):
        if getattr(args, name) > 10 ** 7:
            raise MdcertError(f"invalid {name}: {getattr(args, name)}; at most 1e7 (the problem must fit in memory)")
    check_output_file(args.output, option="-o", suffixes=(".npz", ".json"))
    problem = synthetic_problem(n=args.n, T=args.T, d=args.d, seed=args.seed)
    path = problem.save(args.output)
    tokens = problem.optimal_indices()
    ties = f", ties in {len(tokens.ties)} example(s)" if tokens.ties else ""
    print(f"wrote {path}: n={problem.n} T={problem.T} d={problem.d} seed={args.seed}, "
          f"globally optimal tokens {list(tokens.indices)}{ties}")
    return 0
