"""``mdcert interpolate PROBLEM --p P``: certified minimum-l_p-norm interpolation (docs/theory.md section 8.3).

Reads a regression problem (``kind = "regression"``, X and y; docs/formats.md), certifies
``min ||beta||_p s.t. X beta = y`` and re-checks the certificate with the independent checker before
writing it. Exit 0 optimal, 3 when the system X beta = y is proven inconsistent (the certificate is
written), 2 when nothing could be verified, 1 on bad input. ``--synth block|gaussian`` writes a seeded
problem first (``--N``, ``--D``, ``--seed``) to the PROBLEM path.
"""

from __future__ import annotations

import argparse

HELP = "certified minimum-l_p-norm interpolation min ||beta||_p s.t. X beta = y (regression data)"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("problem", help="regression problem file (.npz or .json, kind = 'regression')")
    parser.add_argument("--p", required=True, help="exponent p > 1, exact decimal or num/den (3/2: sign descent's "
                                                   "eps -> 0 idealization)")
    parser.add_argument("-o", "--output", default=None, help="certificate JSON to write")
    parser.add_argument("--export-beta", default=None, dest="export_beta",
                        help="write the certified point beta~ as float64 .npy (rounded once)")
    parser.add_argument("--bits", type=int, default=200, help="precision of the refined point (default 200)")
    parser.add_argument("--assumptions", action="store_true",
                        help="also check Assumptions 3.2 and 3.8 of arXiv 2410.14158 on the data (exact verdicts)")
    parser.add_argument("--synth", choices=("block", "gaussian"), default=None,
                        help="first write a seeded problem of this kind to PROBLEM")
    parser.add_argument("--N", type=int, default=5, help="rows of --synth data (default 5)")
    parser.add_argument("--D", type=int, default=None, help="columns of --synth data (default 2N)")
    parser.add_argument("--seed", type=int, default=0, help="seed of --synth data (default 0)")


def run(args: argparse.Namespace) -> int:
    import json
    import sys

    from certify.errors import MdcertError
    from certify.exact import format_sci, parse_p
    from certify.regression import (InterpStatus, certify_interpolation, check_interpolation, load_regression,
                                    regression_problem)
    from experiments.outputs import check_distinct, check_output_file, write_npy_atomic, write_text_atomic

    p = parse_p(args.p)
    if not 16 <= args.bits <= 4096:
        raise MdcertError(f"invalid --bits {args.bits}; give 16..4096")
    for opt, path, suffixes in (("-o", args.output, (".json",)), ("--export-beta", args.export_beta, (".npy",))):
        if path is not None:
            check_output_file(path, option=opt, suffixes=suffixes)
    check_distinct({"-o": args.output, "--export-beta": args.export_beta}, {"the problem file": args.problem})
    if args.synth is not None:
        if not (1 <= args.N <= 10**5 and (args.D is None or 1 <= args.D <= 10**6)):
            raise MdcertError("--N must be in 1..1e5 and --D in 1..1e6")
        check_output_file(args.problem, option="PROBLEM", suffixes=(".npz", ".json"))
        regression_problem(args.synth, N=args.N, D=args.D, seed=args.seed).save(args.problem)
        print(f"wrote {args.problem}: {args.synth} regression data N={args.N} D={args.D or 2 * args.N} "
              f"seed={args.seed}")
    problem = load_regression(args.problem)
    if problem.N >= problem.D:
        print(f"warning: N = {problem.N} >= D = {problem.D}: the sign-descent theory needs D > N "
              "(overparameterized); the program is still certified where it is well posed", file=sys.stderr)
    if args.assumptions:
        from theorems.signdescent import assumption_3_2, assumption_3_8

        for report in (assumption_3_2(problem), assumption_3_8(problem)):
            print(f"{report.name}: {report.verdict.value.upper()} - {report.message}")
    result = certify_interpolation(problem, p, bits=args.bits)
    cert = result.certificate
    check = check_interpolation(problem, cert, p=p)
    if not check.ok:  # never write a certificate the checker does not accept
        raise RuntimeError(f"the independent checker rejected the solver's certificate: {check.failures[0]}")
    print(f"problem: N={problem.N} D={problem.D} ({problem.data_hash()[:19]}...), p = {p}")
    if cert.status is InterpStatus.OPTIMAL:
        print(f"OPT = min ||beta||_p in [{format_sci(cert.opt_lower, 12)}, {format_sci(cert.opt_upper, 12)}]")
        print(f"||beta~ - beta*||_p <= {format_sci(cert.distance_upper)} (beta~ to the exact minimizer; "
              f"distance from beta~ to the affine set <= {format_sci(cert.residual_upper)})")
    elif cert.status is InterpStatus.INCONSISTENT:
        print("X beta = y has no solution: proven by an exact g with X^T g = 0 and y^T g != 0")
    else:
        print(f"no verified result: {cert.reason}")
    print(f"checked by the independent checker: {len(check.checked)} claims; solve {result.seconds:.2f} s wall")
    if args.output is not None:
        write_text_atomic(args.output, json.dumps(cert.to_json(), indent=1) + "\n")
        print(f"wrote {args.output}")
    if args.export_beta is not None and cert.status is InterpStatus.OPTIMAL:
        write_npy_atomic(args.export_beta, result.point)
        print(f"wrote {args.export_beta} (beta~ as float64, rounded once)")
    return {InterpStatus.OPTIMAL: 0, InterpStatus.INCONSISTENT: 3, InterpStatus.NO_VERIFIED_RESULT: 2}[cert.status]


def verify_interpolation(args: argparse.Namespace) -> int:
    """``mdcert verify`` on a regression problem: re-check an interpolation certificate (exit 0 / 1)."""
    import sys
    import time

    from certify.errors import MdcertError
    from certify.exact import parse_p
    from certify.limits import read_json_file
    from certify.regression import InterpolationCertificate, check_interpolation, load_regression

    for name in ("svm", "alpha", "export_w", "export_direction"):
        if getattr(args, name, None) is not None:
            raise MdcertError(f"--{name.replace('_', '-')} does not apply to a regression problem")
    problem = load_regression(args.problem)
    data = read_json_file(args.certificate, what=f"certificate {str(args.certificate)!r}")
    cert = InterpolationCertificate.from_json(data)
    t0 = time.perf_counter()
    result = check_interpolation(problem, cert, p=None if args.p is None else parse_p(args.p))
    elapsed = time.perf_counter() - t0
    if args.verbose:
        for name in result.checked:
            bad = [f for f in result.failures if f.startswith(name)]
            print(f"  {'FAIL' if bad else 'ok  '} {name}")
    if result.ok:
        print(f"verified: all {len(result.checked)} claims hold (status {cert.status.value}, {elapsed:.2f} s)")
        return 0
    print(f"NOT verified: {result.failures[0]}", file=sys.stderr)
    return 1
