"""``mdcert synth``: write the paper's seeded synthetic problem, or (``--classification``) a seeded
classification problem: planted separable (default) or random labels (docs/theory.md section 7)."""

from __future__ import annotations

import argparse

HELP = ("write a seeded synthetic problem: unit-sphere tokens and z, random labels, unit decoder; or with "
        "--classification a labelled point set (planted separable or random)")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--n", type=int, default=6, help="examples (default 6)")
    parser.add_argument("--T", type=int, default=8, help="tokens per example (default 8)")
    parser.add_argument("--d", type=int, default=10, help="token dimension (default 10)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument("--min-T", type=int, default=None, dest="min_T",
                        help="variable lengths: example i keeps lengths[i] tokens, uniform in MIN_T..T, "
                             "the rest is zero padding (default: every example has T tokens)")
    parser.add_argument("--classification", action="store_true",
                        help="write a classification problem (X: n x d, labels -1/+1 or 0..K-1) instead")
    parser.add_argument("--classes", type=int, default=None,
                        help="with --classification: K >= 2 classes (labels 0..K-1); default binary (-1/+1)")
    kind = parser.add_mutually_exclusive_group()
    kind.add_argument("--separable", dest="separable", action="store_true", default=True,
                      help="with --classification: labels of a planted linear classifier, points near its "
                           "boundary dropped (default)")
    kind.add_argument("--random", dest="separable", action="store_false",
                      help="with --classification: uniform random labels (not separable for n well above K d)")
    parser.add_argument("-o", "--output", required=True, help="output file, .npz or .json")


def run(args: argparse.Namespace) -> int:
    from certify import synthetic_problem
    from certify.errors import MdcertError
    from experiments.runtime.outputs import check_output_file, check_seed

    check_seed(args.seed, bounded=False)
    if args.classification:
        return _classification(args)
    if args.classes is not None:
        raise MdcertError("--classes needs --classification")
    for name in ("n", "T", "d"):
        if getattr(args, name) > 10 ** 7:
            raise MdcertError(f"invalid {name}: {getattr(args, name)}; at most 1e7 (the problem must fit in memory)")
    if args.min_T is not None and not 2 <= args.min_T <= args.T:
        raise MdcertError(f"invalid --min-T {args.min_T}; give 2 <= MIN_T <= T (T = {args.T})")
    from experiments.runtime.resources import check_memory

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


def _classification(args: argparse.Namespace) -> int:
    from certify.errors import MdcertError
    from certify.synth import classification_problem
    from experiments.runtime.outputs import check_output_file
    from experiments.runtime.resources import check_memory

    for name in ("n", "d"):
        if not 1 <= getattr(args, name) <= 10 ** 7:
            raise MdcertError(f"invalid --{name}: {getattr(args, name)}; give an integer in 1..1e7")
    check_memory(8 * 4 * args.n * args.d, what=f"a problem of n={args.n}, d={args.d}", fix="reduce --n or --d")
    check_output_file(args.output, option="-o", suffixes=(".npz", ".json"))
    problem = classification_problem(n=args.n, d=args.d, classes=args.classes, separable=args.separable,
                                     seed=args.seed)
    path = problem.save(args.output)
    how = "planted separable" if args.separable else "random labels"
    print(f"wrote {path}: {problem.describe()}, {how}, seed={args.seed}")
    return 0
