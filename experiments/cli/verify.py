"""``mdcert verify PROBLEM CERT``: re-check every claim of a certificate with the independent checker.

Exit 0 when every claim is verified, 1 (with the first failing claim) otherwise or on bad input.
``--p``, ``--svm`` and ``--alpha`` reject a certificate about anything else. Without ``--alpha``, a
certificate whose alpha differs from the one stored in the problem file is still verified (it proves
what it claims), with a note on stderr. ``--export-w W.npy`` / ``--export-direction U.npy`` write the
verified solution as float64 arrays (as in ``mdcert certify``), only when every claim is verified.
"""

from __future__ import annotations

import argparse

HELP = "independently re-check every claim of a certificate against the data (exit 0 verified, 1 otherwise)"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("problem", help="problem file (.npz or .json); a regression problem's certificate comes "
                                        "from 'mdcert interpolate'")
    parser.add_argument("certificate", help="certificate JSON written by 'mdcert certify'")
    parser.add_argument("--p", default=None, help="reject the certificate unless it is about this exact p")
    parser.add_argument("--svm", choices=("attention", "decoder", "binary", "multiclass"), default=None,
                        help="reject the certificate unless it is about this SVM (or max-margin program)")
    parser.add_argument("--alpha", default=None,
                        help="reject the certificate unless it is about these token indices: 'opt' (globally "
                             "optimal), 'problem' (the alpha stored in the problem file) or comma-separated "
                             "indices like 0,3,1")
    parser.add_argument("-v", "--verbose", action="store_true", help="print every claim")
    from experiments.commands.certify import add_export_options

    add_export_options(parser)


def run(args: argparse.Namespace) -> int:
    import sys
    import time
    from pathlib import Path

    from certify.check import check_certificate
    from certify.errors import MdcertError
    from certify.limits import max_certificate_bytes, read_json_file
    from certify.classification import ClassificationProblem, load_problem
    from certify.problem import resolve_alpha
    from experiments.commands.certify import check_export_paths, export_lines, prepare_export, write_export
    from experiments.terminal import problem_lines, shorten_lists, summarize_sequence, terminal_width

    from certify.regression.problem import declares_regression

    if declares_regression(args.problem):
        from experiments.cli.interpolate import verify_interpolation

        return verify_interpolation(args)
    exports = {"export_w": args.export_w, "export_direction": args.export_direction}
    check_export_paths(**exports, output=None,
                       inputs={"the problem file": args.problem, "the certificate": args.certificate})
    problem = load_problem(args.problem)
    classification = isinstance(problem, ClassificationProblem)
    if classification and args.alpha is not None:
        raise MdcertError(f"--alpha is for attention problems; {args.problem!r} is a {problem.kind} classification problem")
    path = Path(args.certificate)
    if path.is_dir():
        raise MdcertError(f"certificate {str(path)!r} is a directory; give the JSON file written by 'mdcert certify -o'")
    if not path.is_file():
        raise MdcertError(f"certificate file not found: {str(path)!r}; write one with 'mdcert certify ... -o cert.json'")
    # bounded before and during parsing: size relative to the problem, depth, duplicate keys, NaN, UTF-8
    data = read_json_file(path, what=f"certificate {str(path)!r}", max_bytes=max_certificate_bytes(problem))
    if not isinstance(data, dict):
        raise MdcertError(f"certificate {str(path)!r}: a certificate must be a JSON object (written by 'mdcert certify -o')")
    stored = None if classification or problem.alpha is None else [int(a) for a in problem.alpha]
    alpha = args.alpha
    if alpha is not None and alpha.strip().lower() == "problem":
        if stored is None:
            raise MdcertError(f"--alpha problem: {args.problem!r} stores no alpha; give 'opt' or the indices, "
                              f"e.g. --alpha 0,3,1")
        alpha = stored
    if alpha is not None:
        alpha = list(resolve_alpha(problem, alpha))  # bad input is an error, not a failed claim
    t0 = time.perf_counter()
    result = check_certificate(problem, data, p=args.p, svm=args.svm, alpha=alpha)
    elapsed = time.perf_counter() - t0
    if classification:
        print(f"problem: {problem.describe()}")
    elif problem.lengths is not None or problem.provenance:     # as 'mdcert certify' and 'mdcert check' show it
        print("\n".join(problem_lines(problem, terminal_width())))
    if args.verbose:
        for claim in result.claims:
            print(f"  {'ok  ' if claim.ok else 'FAIL'} {claim.name}: {shorten_lists(claim.detail)}")
    if result.ok:
        print(f"verified: all {len(result.claims)} claims hold (status {data.get('status')}, {elapsed:.2f} s)")
        certified = list(data.get("alpha", []))
        if alpha is None and stored is not None and certified != stored:
            print(f"note: the certificate is about alpha = {summarize_sequence(certified)}, the problem file "
                  f"stores alpha = {summarize_sequence(stored)}; pass --alpha problem to require the stored one",
                  file=sys.stderr)
        from certify import Certificate

        sol, notes = prepare_export(Certificate.from_json(data), **exports)
        for note in notes:
            print(note, file=sys.stderr)
        write_export(sol, **exports)
        for line in export_lines(sol, **exports):
            print(line)
        return 0
    print(f"NOT verified: {result.first_failure}", file=sys.stderr)
    return 1
