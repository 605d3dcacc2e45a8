"""``mdcert verify PROBLEM CERT``: re-check every claim of a certificate with the independent checker.

Exit 0 when every claim is verified, 1 (with the first failing claim) otherwise or on bad input.
"""

from __future__ import annotations

import argparse

HELP = "independently re-check every claim of a certificate against the data (exit 0 verified, 1 otherwise)"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("problem", help="problem file (.npz or .json)")
    parser.add_argument("certificate", help="certificate JSON written by 'mdcert certify'")
    parser.add_argument("--p", default=None, help="reject the certificate unless it is about this exact p")
    parser.add_argument("--svm", choices=("attention", "decoder"), default=None,
                        help="reject the certificate unless it is about this SVM")
    parser.add_argument("-v", "--verbose", action="store_true", help="print every claim")


def run(args: argparse.Namespace) -> int:
    import json
    import sys
    import time
    from pathlib import Path

    from certify.check import check_certificate
    from certify.errors import MdcertError
    from certify.problem import AttentionProblem

    problem = AttentionProblem.load(args.problem)
    path = Path(args.certificate)
    if path.is_dir():
        raise MdcertError(f"certificate {str(path)!r} is a directory; give the JSON file written by 'mdcert certify -o'")
    if not path.is_file():
        raise MdcertError(f"certificate file not found: {str(path)!r}; write one with 'mdcert certify ... -o cert.json'")
    try:
        data = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise MdcertError(f"cannot read certificate {str(path)!r}: not valid JSON ({exc.__class__.__name__})") from None
    t0 = time.perf_counter()
    result = check_certificate(problem, data, p=args.p, svm=args.svm)
    elapsed = time.perf_counter() - t0
    if args.verbose:
        for claim in result.claims:
            print(f"  {'ok  ' if claim.ok else 'FAIL'} {claim.name}: {claim.detail}")
    if result.ok:
        print(f"verified: all {len(result.claims)} claims hold (status {data.get('status')}, {elapsed:.2f} s)")
        return 0
    print(f"NOT verified: {result.first_failure}", file=sys.stderr)
    return 1
