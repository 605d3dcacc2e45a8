"""``mdcert certify``: certified l_p attention-SVM / decoder-SVM solution (issue 3 item 7), or the
certified l_p max-margin classifier of a classification problem file (``kind = classification``,
docs/formats.md; docs/theory.md section 7).

Exit codes: 0 certified (status optimal) to the requested digits, 3 infeasible (a Gordan certificate
of infeasibility is written), 2 no verified result (nothing proven; the certificate says so) or an
optimal certificate short of the requested digits (said on stderr; the certificate proves what it
says), 1 bad input.

``--export-w W.npy`` also writes the certified feasible point as a float64 ``.npy`` (attention SVM:
W, d x d, row-major; decoder SVM: v, length d; binary: w, length d; multiclass: W, K x d) and ``--export-direction U.npy`` its unit direction,
with their rigorous distances to the optimum printed (`certify.export`, docs/theory.md section 4.2),
after the independent checker has accepted the certificate. Neither is written when nothing was
certified.
"""

from __future__ import annotations

import argparse

HELP = ("certified l_p SVM solution (OPT enclosure, direction error, support); exit 0 certified, "
        "3 infeasible (certificate written), 2 no verified result or digits not reached, 1 bad input")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("problem", help="problem file (.npz or .json, e.g. from 'mdcert synth'): attention data, or "
                                        "a classification problem (kind = classification: the l_p max-margin program)")
    parser.add_argument("--p", required=True, help="exponent p > 1, read exactly from its decimal string (1.75 is 7/4)")
    parser.add_argument("--svm", choices=("attention", "decoder"), default=None,
                        help="attention SVM (variable W, m = d^2; default) or decoder SVM (variable v); attention "
                             "problems only (a classification problem names its own program)")
    parser.add_argument("--alpha", default=None,
                        help="token indices: 'opt' (globally optimal, default unless the problem stores alpha) "
                             "or comma-separated indices like 0,3,1")
    parser.add_argument("--digits", type=int, default=60, help="requested relative width 1e-DIGITS of the OPT enclosure, 1 to 2000 (default 60); "
                        "exit 2 if it is not reached")
    parser.add_argument("--time-limit", type=float, default=None, help="seconds after which precision is not raised further")
    parser.add_argument("--memory-budget", default=None, metavar="SIZE",
                        help="memory the solve may use, e.g. 4G or 512M (default: 80%% of the available memory); "
                             "a larger problem gets a no_verified_result certificate and exit 2; a problem file "
                             "whose arrays need more than half of it to read is refused (exit 1)")
    parser.add_argument("-o", "--output", default=None, help="write the certificate JSON here (written atomically)")
    add_export_options(parser)


def parse_size(text: str) -> int:
    """Bytes from ``123``, ``512M``, ``4G``, ``1.5GiB`` (binary units K, M, G, T)."""
    import re

    from certify.errors import MdcertError

    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(?:i?B)?\s*", str(text), flags=re.IGNORECASE)
    value = float(m.group(1)) * 1024 ** " KMGT".index(m.group(2).upper() or " ") if m else 0.0
    if not m or not 1 <= value < 2 ** 62:
        raise MdcertError(f"invalid --memory-budget {text!r}; give a size like 4G, 512M or a number of bytes")
    return int(value)


def add_export_options(parser: argparse.ArgumentParser) -> None:
    """``--export-w`` and ``--export-direction`` (shared with ``mdcert verify``)."""
    parser.add_argument("--export-w", default=None, metavar="W.npy",
                        help="also write the certified feasible point as float64 .npy: W (d x d, row-major, "
                             "W[j,k] = w[j*d+k]) for the attention SVM, v (length d) for the decoder SVM")
    parser.add_argument("--export-direction", default=None, metavar="U.npy",
                        help="also write its unit direction w/||w||_p as float64 .npy (same shape)")


def check_export_paths(args: argparse.Namespace, inputs: dict) -> None:
    """Validate the export paths before any work: .npy names, not an input, not another output."""
    from experiments.outputs import check_distinct, check_output_file

    for opt, path in (("--export-w", args.export_w), ("--export-direction", args.export_direction)):
        if path is not None:
            check_output_file(path, option=opt, suffixes=(".npy",))
    check_distinct({"-o": getattr(args, "output", None), "--export-w": args.export_w,
                    "--export-direction": args.export_direction}, inputs)


def prepare_export(args: argparse.Namespace, cert, problem=None):
    """The `CertifiedSolution` to export (None when no export is asked for or nothing was certified;
    a note on stderr then). Computed before any output is written, so a failure writes nothing."""
    import sys

    from certify import CertStatus, certified_solution

    wanted = [path for path in (args.export_w, args.export_direction) if path is not None]
    if not wanted:
        return None
    if cert.status is not CertStatus.OPTIMAL:
        print(f"no certified solution (status {cert.status.value}): {', '.join(wanted)} not written", file=sys.stderr)
        return None
    return certified_solution(cert, problem=problem)


def write_export(args: argparse.Namespace, sol) -> None:
    """Write the arrays of a `CertifiedSolution` to the requested paths (each atomically)."""
    from experiments.outputs import write_npy_atomic

    if sol is None:
        return
    written = []
    for path, arr, what in ((args.export_w, sol.point, "point"), (args.export_direction, sol.direction, "direction")):
        if path is not None:
            write_npy_atomic(path, arr)
            written.append(f"{path} ({what})")
    print(sol.describe())
    print("wrote " + ", ".join(written))


def _dec(x, digits: int = 25) -> str:
    """``x`` to ``digits`` significant digits, exponents as everywhere else (``4.13e+150``, ``1.5e-07``)."""
    import re
    from decimal import Context, Decimal

    ctx = Context(prec=digits)
    text = str(ctx.divide(Decimal(x.numerator), Decimal(x.denominator)))
    return re.sub(r"E([+-])(\d+)$", lambda m: f"e{m.group(1)}{int(m.group(2)):02d}", text)


def _sci(x) -> str:
    """Short display of an exact bound (the exact value is in the JSON); no float: 1e-1000 stays 1e-1000."""
    from certify.exact import format_sci

    return format_sci(x)


def run(args: argparse.Namespace) -> int:
    import json
    import math
    import sys
    import time
    from pathlib import Path

    from certify import CertStatus, certify_svm
    from certify.errors import MdcertError
    from certify.exact import decimal_digits, format_exact

    from experiments.outputs import check_output_file, write_text_atomic

    if args.output is not None:
        if Path(args.output).suffix.lower() != ".json":
            raise MdcertError(f"certificate output {args.output!r} must be a .json file")
        check_output_file(args.output, option="-o", suffixes=(".json",))
    check_export_paths(args, {"the problem file": args.problem})
    if args.time_limit is not None and not (math.isfinite(args.time_limit) and args.time_limit >= 0):
        raise MdcertError(f"invalid --time-limit {args.time_limit}; give a finite number of seconds >= 0")
    budget = None if args.memory_budget is None else parse_size(args.memory_budget)
    from certify.classification import ClassificationProblem, load_problem

    problem = load_problem(args.problem, memory_budget=budget)  # half of the budget for reading it
    classification = isinstance(problem, ClassificationProblem)
    if classification and (args.svm is not None or args.alpha is not None):
        raise MdcertError(f"{'--svm' if args.svm is not None else '--alpha'} is for attention problems; "
                          f"{args.problem!r} is a {problem.kind} classification problem (drop the option)")
    args.svm = args.svm or "attention"
    from experiments.progress import progress
    from experiments.terminal import problem_lines, summarize_sequence, terminal_width

    t0 = time.perf_counter()
    with progress(1.0, desc="certify", fraction=True) as bar:
        def report(fraction: float, stage: str) -> None:
            bar.set(fraction)
            bar.stage(stage)

        if classification:
            from certify.maxmargin import certify_max_margin

            cert = certify_max_margin(problem, args.p, digits=args.digits, time_limit=args.time_limit,
                                      memory_budget=budget, progress=report)
        else:
            cert = certify_svm(problem, args.p, svm=args.svm, alpha=args.alpha, digits=args.digits,
                               time_limit=args.time_limit, memory_budget=budget, progress=report)
    elapsed = time.perf_counter() - t0
    if classification:
        print(f"problem: {problem.describe()}")
        print(f"l_p max-margin ({problem.kind}, {problem.m} variables, {problem.N} constraint rows), "
              f"p = {format_exact(cert.p)}")
    else:
        if problem.lengths is not None or problem.provenance:
            print("\n".join(problem_lines(problem, terminal_width())))
        print(f"{args.svm} SVM, p = {format_exact(cert.p)}, alpha = {summarize_sequence(list(cert.alpha))}")
    print(f"status: {cert.status.value}")
    reached = True
    if cert.status is CertStatus.OPTIMAL:
        rw = cert.relative_width()
        reached = rw == 0 or decimal_digits(rw) >= args.digits
        dig = "exact" if rw == 0 else f"{decimal_digits(rw)} digits"  # exactly: width <= 1e-DIGITS
        print(f"OPT in [{_dec(cert.opt_lower)}, {_dec(cert.opt_upper)}] (relative width {_sci(rw)}, {dig})")
        print(f"direction error <= {_sci(cert.direction_error_upper)}, Bregman <= {_sci(cert.bregman_upper)}"
              f"{', exact rational KKT certificate' if cert.exact_kkt else ''}")
        t, i, u = cert.support.counts()
        print(f"support: {t} tight, {i} inactive, {u} undecided constraint rows")
        if classification:
            print(f"support examples (a tight row): {summarize_sequence(sorted({r[0] for r in cert.support.tight}))}")
    elif cert.status is CertStatus.INFEASIBLE:
        what = "the data are not separable" if classification else "the SVM is infeasible"
        print(f"{what}: Gordan certificate g >= 0, g != 0, A^T g = 0 (exact)")
        if "feasibility" in cert.info:
            print(f"  by: {cert.info['feasibility']}")
    else:
        print(f"nothing proven: {cert.info.get('reason', 'no rigorous enclosure')}")
    sol = prepare_export(args, cert, problem)  # the independent checker accepts it first
    if args.output is not None:
        out = write_text_atomic(args.output, json.dumps(cert.to_json()))
        print(f"time {elapsed:.2f} s; wrote {out}")
    else:
        print(f"time {elapsed:.2f} s")
    write_export(args, sol)
    if "memory_budget_bytes" in cert.info:  # too large for the budget, or out of memory: one line
        print(f"mdcert certify: {cert.info.get('reason')}", file=sys.stderr)
    elif cert.status is CertStatus.NO_VERIFIED_RESULT:  # exit 2: say so on stderr, with the reason
        why = cert.info.get("reason", "no rigorous enclosure")
        if "warm start" in why and cert.p > 8:  # measured: the paper's problems certify up to p = 8
            why += f"; the float64 warm start is ill-conditioned at large p (p = {format_exact(cert.p)}), try a smaller p"
        print(f"mdcert certify: nothing could be verified: {why}", file=sys.stderr)
    if not reached:
        print(f"mdcert certify: the requested {args.digits} digits were not reached (certified relative width "
              f"{_sci(rw)}, {dig}); the bounds proven are in the certificate; raise --time-limit or lower "
              f"--digits", file=sys.stderr)
        return 2
    return {CertStatus.OPTIMAL: 0, CertStatus.INFEASIBLE: 3}.get(cert.status, 2)
