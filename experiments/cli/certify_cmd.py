"""``mdcert certify``: certified l_p attention-SVM / decoder-SVM solution (issue 3 item 7).

Exit codes: 0 certified (status optimal), 3 infeasible (a Gordan certificate of infeasibility is
written), 2 no verified result (nothing proven; the certificate says so), 1 bad input.
"""

from __future__ import annotations

import argparse

HELP = ("certified l_p SVM solution (OPT enclosure, direction error, support); exit 0 certified, "
        "3 infeasible (certificate written), 2 no verified result, 1 bad input")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("problem", help="problem file (.npz or .json, e.g. from 'mdcert synth')")
    parser.add_argument("--p", required=True, help="exponent p > 1, read exactly from its decimal string (1.75 is 7/4)")
    parser.add_argument("--svm", choices=("attention", "decoder"), default="attention",
                        help="attention SVM (variable W, m = d^2; default) or decoder SVM (variable v)")
    parser.add_argument("--alpha", default=None,
                        help="token indices: 'opt' (globally optimal, default unless the problem stores alpha) "
                             "or comma-separated indices like 0,3,1")
    parser.add_argument("--digits", type=int, default=60, help="requested relative width 1e-DIGITS of the OPT enclosure (default 60)")
    parser.add_argument("--time-limit", type=float, default=None, help="seconds after which precision is not raised further")
    parser.add_argument("-o", "--output", default=None, help="write the certificate JSON here (written atomically)")


def _dec(x, digits: int = 25) -> str:
    from decimal import Context, Decimal

    ctx = Context(prec=digits)
    return str(ctx.divide(Decimal(x.numerator), Decimal(x.denominator)))


def _sci(x) -> str:
    """Short display of an exact bound (the exact value is in the JSON)."""
    if x == 0:
        return "0"
    return f"{float(x):.2e}" if float(x) != 0 else _dec(x, 3)


def run(args: argparse.Namespace) -> int:
    import json
    import math
    import time
    from pathlib import Path

    from certify import AttentionProblem, CertStatus, certify_svm
    from certify.errors import MdcertError

    from experiments.outputs import check_output_file, write_text_atomic

    if args.output is not None:
        if Path(args.output).suffix.lower() != ".json":
            raise MdcertError(f"certificate output {args.output!r} must be a .json file")
        check_output_file(args.output, option="-o", suffixes=(".json",))
    if args.time_limit is not None and not (math.isfinite(args.time_limit) and args.time_limit >= 0):
        raise MdcertError(f"invalid --time-limit {args.time_limit}; give a finite number of seconds >= 0")
    problem = AttentionProblem.load(args.problem)
    t0 = time.perf_counter()
    cert = certify_svm(problem, args.p, svm=args.svm, alpha=args.alpha, digits=args.digits,
                       time_limit=args.time_limit)
    elapsed = time.perf_counter() - t0
    print(f"{args.svm} SVM, p = {cert.p.numerator}/{cert.p.denominator}, alpha = {list(cert.alpha)}")
    print(f"status: {cert.status.value}")
    if cert.status is CertStatus.OPTIMAL:
        rw = cert.relative_width()
        dig = "exact" if rw == 0 else f"{-math.log10(float(rw)) if float(rw) > 0 else float('inf'):.0f} digits"
        print(f"OPT in [{_dec(cert.opt_lower)}, {_dec(cert.opt_upper)}] (relative width {_sci(rw)}, {dig})")
        print(f"direction error <= {_sci(cert.direction_error_upper)}, Bregman <= {_sci(cert.bregman_upper)}"
              f"{', exact rational KKT certificate' if cert.exact_kkt else ''}")
        t, i, u = cert.support.counts()
        print(f"support: {t} tight, {i} inactive, {u} undecided")
    elif cert.status is CertStatus.INFEASIBLE:
        print("the SVM is infeasible: Gordan certificate g >= 0, sum g = 1, A^T g = 0 (exact)")
    else:
        print(f"nothing proven: {cert.info.get('reason', 'no rigorous enclosure')}")
    if args.output is not None:
        out = write_text_atomic(args.output, json.dumps(cert.to_json()))
        print(f"time {elapsed:.2f} s; wrote {out}")
    else:
        print(f"time {elapsed:.2f} s")
    return {CertStatus.OPTIMAL: 0, CertStatus.INFEASIBLE: 3}.get(cert.status, 2)
