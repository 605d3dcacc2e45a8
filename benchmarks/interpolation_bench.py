"""Certified min-l_p-norm interpolation vs cvxpy + Clarabel (issue 24's targets; docs/theory.md 8.3).

Each case runs ours and Clarabel in two subprocesses of their own (each peak resident memory its own):
ours (`certify_interpolation`: wall and CPU seconds, certified digits of OPT = -log10 of the relative
width, peak RSS; timed after a warm-up solve of a 2 x 4 problem, as cvxpy is imported before its
clock) with the independent checker's wall and CPU seconds; then cvxpy + Clarabel on
``pnorm(beta, p)`` with ``X beta == y``, cut after --clarabel-cap seconds: wall and CPU seconds end to
end (cvxpy's compilation included), Clarabel's own solve time, its peak RSS, status, and its TRUE
relative objective error against our enclosure (Clarabel proves nothing). CPU seconds are
``time.process_time()`` of the subprocess (all its threads); the 1-minute load is printed beside each
case. One run prints one JSON line per case and then the side-by-side markdown table.

With ``--repeats R`` both sides solve R times in their subprocess and report the minimum wall and
CPU seconds (the noise of a loaded machine only ever adds time).

Usage: python benchmarks/interpolation_bench.py [--case KIND,N,D,P ...] [--no-baselines] [--clarabel-cap S]
    [--repeats R]
Default cases: block (5,10) p=3/2 (closed form), gaussian (100,1000) p in {1.5,2,3}, gaussian
(300,3000) p=1.5, gaussian (1000,10000) p=1.5.
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
    "gaussian,300,3000,1.5",
    "gaussian,1000,10000,1.5",
]


def _rss_gb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2)


def ours(kind: str, N: int, D: int, p: str, repeats: int = 1) -> dict:
    from certify.regression import certify_interpolation, check_interpolation, regression_problem

    warm = regression_problem(
        "gaussian", N=2, D=4, seed=1
    )  # imports loaded (cvxpy's: before its clock)
    check_interpolation(warm, certify_interpolation(warm, p).certificate)
    pr = regression_problem(kind, N=N, D=D, seed=0)
    solve, check = [], []
    for _ in range(repeats):
        w0, c0 = time.perf_counter(), time.process_time()
        cert = certify_interpolation(pr, p).certificate
        w1, c1 = time.perf_counter(), time.process_time()
        ok = check_interpolation(pr, cert).ok
        w2, c2 = time.perf_counter(), time.process_time()
        solve.append((w1 - w0, c1 - c0))
        check.append((w2 - w1, c2 - c1))
    out = {
        "status": cert.status.value,
        "solve_s": round(min(w for w, _ in solve), 3),
        "solve_cpu_s": round(min(c for _, c in solve), 3),
        "check_s": round(min(w for w, _ in check), 3),
        "check_cpu_s": round(min(c for _, c in check), 3),
        "checker_ok": ok,
        "rss_gb": _rss_gb(),
    }
    if cert.opt_lower is not None and cert.opt_lower > 0:
        width = (cert.opt_upper - cert.opt_lower) / cert.opt_upper
        out["digits"] = "exact" if width == 0 else int(-math.log10(float(width)))
        out["opt"] = float(cert.opt_lower)
    return out


def clarabel(kind: str, N: int, D: int, p: str, repeats: int = 1) -> dict:
    import cvxpy as cp
    import numpy as np

    from certify.regression import regression_problem

    pr = regression_problem(kind, N=N, D=D, seed=0)
    pf = float(Fraction(p))
    times = []
    for _ in range(repeats):
        w0, c0 = time.perf_counter(), time.process_time()
        b = cp.Variable(D)
        prob = cp.Problem(cp.Minimize(cp.pnorm(b, pf)), [pr.X @ b == pr.y])
        try:
            prob.solve(solver=cp.CLARABEL)
            status = prob.status
        except Exception as exc:  # a failed peer is a result, not a crash
            status = f"failed: {type(exc).__name__}"
        times.append((time.perf_counter() - w0, time.process_time() - c0))
    out = {
        "clarabel_s": round(min(w for w, _ in times), 3),
        "clarabel_cpu_s": round(min(c for _, c in times), 3),
        "clarabel_status": status,
        "clarabel_rss_gb": _rss_gb(),
    }
    stats = getattr(prob, "solver_stats", None)
    if stats is not None and stats.solve_time is not None:
        out["clarabel_solve_s"] = round(stats.solve_time, 3)
    if b.value is not None:
        out["clarabel_value"] = float(np.sum(np.abs(b.value) ** pf) ** (1 / pf))
        out["clarabel_residual"] = float(np.abs(pr.X @ b.value - pr.y).max())
    return out


def _child(case: str, part: str, timeout: float, repeats: int = 1) -> dict:
    cmd = [sys.executable, __file__, "--one", case, "--part", part, "--repeats", str(repeats)]
    t0 = time.perf_counter()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    try:
        run = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:  # killed and waited for: its CPU time is in RUSAGE_CHILDREN
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
        return {
            f"{part}_error": f"cut after {time.perf_counter() - t0:.0f} s wall ({cpu:.0f} s CPU)"
        }
    if run.returncode != 0:
        return {f"{part}_error": f"failed: {run.stderr[-300:]}"}
    return json.loads(run.stdout.strip().splitlines()[-1])


def _row(case: str, r: dict) -> str:
    def cell(wall, cpu):
        return "-" if r.get(wall) is None else f"{r[wall]:.2f} / {r[cpu]:.2f}"

    ratio = "-"
    if r.get("clarabel_s") and r.get("solve_s") and r.get("clarabel_status") == "optimal":
        ratio = f"{r['clarabel_cpu_s'] / r['solve_cpu_s']:.1f}x"
    err = "-"
    if r.get("clarabel_value") is not None and r.get("opt"):
        err = f"{abs(r['clarabel_value'] - r['opt']) / r['opt']:.1e}"
    clar = r.get("clarabel_error") or cell("clarabel_s", "clarabel_cpu_s")
    return (
        f"| {case} | {r.get('ours_error') or cell('solve_s', 'solve_cpu_s')} | {r.get('digits', '-')} "
        f"| {cell('check_s', 'check_cpu_s')} | {r.get('rss_gb', '-')} GB | {clar} "
        f"| {r.get('clarabel_solve_s', '-')} | {r.get('clarabel_rss_gb', '-')} GB | {err} "
        f"| {ratio} | {r['load']:.1f} |"
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", action="append", help="KIND,N,D,P (repeatable)")
    ap.add_argument("--no-baselines", action="store_true")
    ap.add_argument(
        "--clarabel-cap", type=float, default=600.0, help="seconds before Clarabel's run is cut"
    )
    ap.add_argument("--repeats", type=int, default=1, help="solves per side; minimum times")
    ap.add_argument("--one", help=argparse.SUPPRESS)
    ap.add_argument("--part", choices=("ours", "clarabel"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        kind, N, D, p = args.one.split(",")
        run = ours if args.part == "ours" else clarabel
        print(json.dumps(run(kind, int(N), int(D), p, args.repeats)))
        return 0
    print(f"load average at start: {os.getloadavg()}")
    rows = []
    for case in args.case or DEFAULT:
        r = _child(case, "ours", 1800, args.repeats)
        if not args.no_baselines:
            r |= _child(case, "clarabel", args.clarabel_cap, args.repeats)
        r["load"] = os.getloadavg()[0]
        print(f"{case}: {json.dumps(r)}", flush=True)
        kind, N, D, p = case.split(",")
        rows.append(_row(f"{kind} ({N},{D}) p = {p}", r))
    print(
        "\n| case | ours wall / CPU (s) | digits | checker wall / CPU (s) | ours RSS "
        "| Clarabel wall / CPU (s) | Clarabel solve (s) | Clarabel RSS | Clarabel rel. error "
        "| Clarabel CPU / ours CPU | load |\n|" + "---|" * 11
    )
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
