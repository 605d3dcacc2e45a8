"""``mdcert synth``: write the paper's seeded synthetic problem."""

from __future__ import annotations

import argparse

HELP = "write a seeded synthetic problem: unit-sphere tokens and z, random labels, unit decoder"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--n", type=int, default=6, help="examples (default 6)")
    parser.add_argument("--T", type=int, default=8, help="tokens per example (default 8)")
    parser.add_argument("--d", type=int, default=10, help="token dimension (default 10)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument("--min-T", type=int, default=None, dest="min_T",
                        help="variable lengths: example i keeps lengths[i] tokens, uniform in MIN_T..T, "
                             "the rest is zero padding (default: every example has T tokens)")
    parser.add_argument("-o", "--output", required=True, help="output file, .npz or .json")


def run(args: argparse.Namespace) -> int:
    from certify import synthetic_problem
    from certify.errors import MdcertError
    from experiments.outputs import check_output_file, check_seed

    check_seed(args.seed, bounded=False)
    for name in ("n", "T", "d"):
        if getattr(args, name) > 10 ** 7:
            raise MdcertError(f"invalid {name}: {getattr(args, name)}; at most 1e7 (the problem must fit in memory)")
    if args.min_T is not None and not 2 <= args.min_T <= args.T:
        raise MdcertError(f"invalid --min-T {args.min_T}; give 2 <= MIN_T <= T (T = {args.T})")
    from experiments.resources import check_memory

    check_memory(8 * 4 * args.n * args.T * args.d, what=f"a problem of n={args.n}, T={args.T}, d={args.d}",
                 fix="reduce --n, --T or --d")
    check_output_file(args.output, option="-o", suffixes=(".npz", ".json"))
    problem = synthetic_problem(n=args.n, T=args.T, d=args.d, seed=args.seed, min_T=args.min_T)
    path = problem.save(args.output)
    tokens = problem.optimal_indices()
    ties = f", ties in {len(tokens.ties)} example(s)" if tokens.ties else ""
    lengths = "" if problem.lengths is None else f" lengths={[int(k) for k in problem.lengths]}"
    print(f"wrote {path}: n={problem.n} T={problem.T} d={problem.d}{lengths} seed={args.seed}, "
          f"globally optimal tokens {list(tokens.indices)}{ties}")
    return 0
