"""Certified min-l_p-norm interpolation vs cvxpy + Clarabel (issue 24's targets; docs/theory.md 8.3).

Each case runs in its own subprocess (its peak resident memory is its own): ours (`certify_interpolation`,
wall seconds, certified digits of OPT = -log10 of the relative width, peak RSS), the independent
checker's wall seconds, and cvxpy + Clarabel on ``pnorm(beta, p)`` with ``X beta == y`` (wall seconds,
status, and its TRUE relative objective error against our enclosure: Clarabel proves nothing).

Usage: python benchmarks/interpolation_bench.py [--case KIND,N,D,P ...] [--no-baselines] [--clarabel-cap S]
Default cases: block (5,10) p=3/2 (closed form), gaussian (100,1000) p in {1.5,2,3}, gaussian (1000,10000) p=1.5.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import time
from fractions import Fraction

DEFAULT = [
    "block,5,10,1.5",
    "gaussian,100,1000,1.5",
    "gaussian,100,1000,2",
    "gaussian,100,1000,3",
    "gaussian,1000,10000,1.5",
]


def one_case(kind: str, N: int, D: int, p: str, baselines: bool, cap: float) -> dict:
    import numpy as np

    from certify.regression import certify_interpolation, check_interpolation, regression_problem

    pr = regression_problem(kind, N=N, D=D, seed=0)
    t0 = time.perf_counter()
    res = certify_interpolation(pr, p)
    t_solve = time.perf_counter() - t0
    cert = res.certificate
    t0 = time.perf_counter()
    ok = check_interpolation(pr, cert).ok
    t_check = time.perf_counter() - t0
    out = {
        "case": f"{kind} ({N},{D}) p={p}",
        "status": cert.status.value,
        "solve_s": round(t_solve, 2),
        "check_s": round(t_check, 2),
        "checker_ok": ok,
        "rss_gb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2),
    }
    if cert.opt_lower is not None and cert.opt_lower > 0:
        width = (cert.opt_upper - cert.opt_lower) / cert.opt_upper
        out["digits"] = (
            "exact"
            if width == 0
            else int(-math.log10(float(width)))
            if float(width) > 0
            else ">300"
        )
    if baselines:
        import cvxpy as cp

        b = cp.Variable(D)
        prob = cp.Problem(cp.Minimize(cp.pnorm(b, float(Fraction(p)))), [pr.X @ b == pr.y])
        t0 = time.perf_counter()
        try:
            prob.solve(solver=cp.CLARABEL)
            out["clarabel_s"] = round(time.perf_counter() - t0, 2)
            out["clarabel_status"] = prob.status
            if b.value is not None and cert.opt_lower:
                val = float(
                    np.sum(np.abs(b.value) ** float(Fraction(p))) ** (1 / float(Fraction(p)))
                )
                out["clarabel_rel_err"] = (
                    f"{abs(val - float(cert.opt_lower)) / float(cert.opt_lower):.1e}"
                )
                out["clarabel_residual"] = f"{float(np.abs(pr.X @ b.value - pr.y).max()):.1e}"
        except Exception as exc:  # a failed peer is a result, not a crash
            out["clarabel_s"] = round(time.perf_counter() - t0, 2)
            out["clarabel_status"] = f"failed: {type(exc).__name__}"
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", action="append", help="KIND,N,D,P (repeatable)")
    ap.add_argument("--no-baselines", action="store_true")
    ap.add_argument(
        "--clarabel-cap", type=float, default=600.0, help="seconds before Clarabel's run is cut"
    )
    ap.add_argument("--one", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        kind, N, D, p = args.one.split(",")
        print(
            json.dumps(one_case(kind, int(N), int(D), p, not args.no_baselines, args.clarabel_cap))
        )
        return 0
    print(f"load average at start: {os.getloadavg()}")
    for case in args.case or DEFAULT:
        cmd = [sys.executable, __file__, "--one", case] + (
            ["--no-baselines"] if args.no_baselines else []
        )
        t0 = time.perf_counter()
        try:
            run = subprocess.run(
                cmd, capture_output=True, text=True, timeout=args.clarabel_cap + 900
            )
            line = (
                run.stdout.strip().splitlines()[-1]
                if run.returncode == 0
                else f"failed: {run.stderr[-300:]}"
            )
        except subprocess.TimeoutExpired:
            line = f"timed out after {time.perf_counter() - t0:.0f} s"
        print(f"{case}: {line}  (load {os.getloadavg()[0]:.1f})", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
