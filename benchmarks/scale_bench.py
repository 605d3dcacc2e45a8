"""Certification in the constraint-heavy regime N = n(T-1) >> d^2 (issue 12 item 3), side by side with
cvxpy + Clarabel and (p = 2) scipy SLSQP, in one run.

Every case runs in its own subprocess, so its peak resident memory (``ru_maxrss``) is its own; the
machine's 1-minute load average (``os.getloadavg``, what ``uptime`` prints) is recorded before and
after each case. Instances: ``random`` = `certify.synthetic_problem` (unit-sphere data; the attention
SVM at the globally optimal tokens is infeasible once N is well above d^2), ``planted`` =
`certify.synth.planted_problem` (feasible by construction). Ours: `certify_svm(digits=30)`, then the
independent checker on the written certificate (a separate subprocess: its time and memory). The
baselines get a wall-clock limit; a baseline past it is reported as such.

Usage:
  python benchmarks/scale_bench.py [--quick] [--case KIND,n,T,d[,p]] [--no-baselines] [--baseline-timeout S]
                                   [--json OUT.json]
  --case: only the rows of that instance (and p, any p), e.g. --case random,2000,32,64,2; an
          instance outside the plan runs without baselines
  --quick: (100,32,32) at p = 2 and (500,32,32) planted and random at p = 2, baselines at (100,32,32) only
Full run: (100,32,32) random and planted at p in {1.1, 1.75, 2, 3} (Clarabel at every p, SLSQP at p = 2),
(500,32,32) planted (Clarabel at every p) and random (Clarabel at p = 2), (2000,32,64) planted (Clarabel
at p = 2) and random at p = 2, (10^4,32,64) planted at p = 2.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PS = ("1.1", "1.75", "2", "3")


def _problem(kind: str, n: int, T: int, d: int):
    from certify import synthetic_problem
    from certify.synth import planted_problem

    return (
        planted_problem(n=n, T=T, d=d, seed=0)
        if kind == "planted"
        else synthetic_problem(n=n, T=T, d=d, seed=0)
    )


def _digits(rw) -> int | None:
    from certify.exact import decimal_digits

    return None if rw is None else (10**9 if rw == 0 else decimal_digits(rw))


def case_ours(spec: dict) -> dict:
    from certify import certify_svm

    pr = _problem(spec["kind"], spec["n"], spec["T"], spec["d"])
    t0, c0 = time.perf_counter(), time.process_time()
    c = certify_svm(pr, spec["p"], digits=30)
    out = {
        "seconds": time.perf_counter() - t0,
        "cpu_seconds": time.process_time() - c0,
        "status": c.status.value,
        "info": c.info,
    }
    if c.support is not None:
        out["support"] = c.support.counts()
        out["digits"] = _digits(c.relative_width())
        out["opt_mid"] = float((c.opt_lower + c.opt_upper) / 2)
    Path(spec["cert"]).write_text(json.dumps(c.to_json()))
    return out


def case_check(spec: dict) -> dict:
    from certify import Certificate, check_certificate

    pr = _problem(spec["kind"], spec["n"], spec["T"], spec["d"])
    cert = Certificate.load(spec["cert"])
    t0, c0 = time.perf_counter(), time.process_time()
    res = check_certificate(pr, cert)
    return {
        "seconds": time.perf_counter() - t0,
        "cpu_seconds": time.process_time() - c0,
        "ok": res.ok,
        "first_failure": res.first_failure,
    }


def case_clarabel(spec: dict) -> dict:
    import warnings

    import cvxpy as cp
    import numpy as np

    pr = _problem(spec["kind"], spec["n"], spec["T"], spec["d"])
    A = (
        pr.attention_constraints().rows()
    )  # the stored alpha (planted) or the globally optimal tokens
    t0, c0 = time.perf_counter(), time.process_time()
    w = cp.Variable(A.shape[1])
    prob = cp.Problem(cp.Minimize(cp.pnorm(w, float(spec["p"]), approx=False)), [A @ w >= 1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            prob.solve(solver=cp.CLARABEL)
        except cp.error.SolverError as exc:
            return {"seconds": time.perf_counter() - t0, "status": f"solver error: {str(exc)[:80]}"}
    out = {
        "seconds": time.perf_counter() - t0,
        "cpu_seconds": time.process_time() - c0,
        "status": prob.status,
    }
    if w.value is not None:
        wv = np.asarray(w.value)
        out["violation"] = float(max(0.0, 1.0 - float((A @ wv).min())))
        out["objective"] = float(prob.value)
    return out


def case_slsqp(spec: dict) -> dict:
    import numpy as np
    from scipy.optimize import minimize

    pr = _problem(spec["kind"], spec["n"], spec["T"], spec["d"])
    A = (
        pr.attention_constraints().rows()
    )  # the stored alpha (planted) or the globally optimal tokens
    p = float(spec["p"])
    t0, c0 = time.perf_counter(), time.process_time()
    x0 = np.linalg.lstsq(A, np.ones(A.shape[0]), rcond=None)[0] * 1.5
    res = minimize(
        lambda w: np.sum(np.abs(w) ** p) / p,
        x0,
        jac=lambda w: np.sign(w) * np.abs(w) ** (p - 1),
        constraints=[{"type": "ineq", "fun": lambda w: A @ w - 1, "jac": lambda w: A}],
        method="SLSQP",
        options={"maxiter": 1000, "ftol": 1e-10},
    )
    out = {
        "seconds": time.perf_counter() - t0,
        "cpu_seconds": time.process_time() - c0,
        "status": "optimal" if res.success else f"failed: {res.message}",
    }
    out["violation"] = float(max(0.0, 1.0 - float((A @ res.x).min())))
    out["objective"] = float(np.sum(np.abs(res.x) ** p) ** (1 / p))
    return out


CASES = {"ours": case_ours, "check": case_check, "clarabel": case_clarabel, "slsqp": case_slsqp}


def child(spec: dict) -> None:
    import resource

    from certify.blas import single_thread_blas

    if spec.get(
        "memory_limit"
    ):  # baselines: a hard address-space limit, so a huge dense model fails cleanly
        resource.setrlimit(
            resource.RLIMIT_AS, (int(spec["memory_limit"]), int(spec["memory_limit"]))
        )

    with single_thread_blas():
        out = CASES[spec["what"]](spec)
    out["rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print("RESULT " + json.dumps(out, default=str), flush=True)


def run_case(spec: dict, timeout: float) -> dict:
    load0 = os.getloadavg()[0]
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(
            [sys.executable, __file__, "--child", json.dumps(spec)],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
        )
        lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
        tail = proc.stderr.strip().splitlines()[-1:] or [f"exit {proc.returncode}"]
        out = (
            json.loads(lines[-1][7:])
            if lines
            else {"status": f"failed: {tail[0][:120]}", "seconds": None}
        )
    except subprocess.TimeoutExpired:
        out = {"status": f"not finished in {timeout:.0f} s", "seconds": None}
    out["wall_with_start"] = time.perf_counter() - t0
    out["load"] = [load0, os.getloadavg()[0]]
    return {**{k: v for k, v in spec.items() if k != "cert"}, **out}


def _cpu(r: dict) -> str:
    """`` (CPU x s)``: the case's own CPU seconds (``time.process_time``), when recorded."""
    return f" (CPU {r['cpu_seconds']:.1f})" if r.get("cpu_seconds") is not None else ""


def _fmt_ours(r: dict, chk: dict) -> str:
    status = r.get("status")
    if status == "optimal":
        t, i, u = r["support"]
        verdict = f"optimal, {r['digits']} digits, {t}/{i}/{u} tight/inactive/undecided"
    else:
        verdict = (
            status
            if status != "no_verified_result"
            else f"no verified result ({r['info'].get('reason', '')[:60]})"
        )
    check = (
        f"{chk['seconds']:.1f} s{_cpu(chk)} {'ok' if chk.get('ok') else 'REJECTED'}, "
        f"{chk['rss_mb']:.0f} MB"
        if chk.get("seconds")
        else chk.get("status", "-")
    )
    sec = f"{r['seconds']:.1f}{_cpu(r)}" if r.get("seconds") is not None else "-"
    return (
        f"| ({r['n']},{r['T']},{r['d']}) {r['kind']} | {r['n'] * (r['T'] - 1)} x {r['d'] ** 2} | {r['p']} | ours | {sec} | "
        f"{r.get('rss_mb', 0):.0f} | {verdict} | checker {check} | {r['load'][0]:.1f}-{r['load'][1]:.1f} |"
    )


def _fmt_base(r: dict, name: str) -> str:
    sec = f"{r['seconds']:.1f}" if r.get("seconds") is not None else "-"
    extra = f", violation {r['violation']:.1e}" if "violation" in r else ""
    return (
        f"| ({r['n']},{r['T']},{r['d']}) {r['kind']} | {r['n'] * (r['T'] - 1)} x {r['d'] ** 2} | {r['p']} | {name} | {sec} | "
        f"{r.get('rss_mb', 0):.0f} | {r.get('status')}{extra} | - | {r['load'][0]:.1f}-{r['load'][1]:.1f} |"
    )


def plan(quick: bool) -> list[tuple[str, int, int, int, tuple[str, ...], dict]]:
    """(kind, n, T, d, ps, {baseline: ps it runs at})."""
    both = {"clarabel": PS, "slsqp": ("2",)}
    if quick:
        return [
            ("random", 100, 32, 32, ("2",), {"clarabel": ("2",), "slsqp": ("2",)}),
            ("planted", 500, 32, 32, ("2",), {}),
            ("random", 500, 32, 32, ("2",), {}),
        ]
    return [
        ("random", 100, 32, 32, PS, both),
        ("planted", 100, 32, 32, PS, both),
        ("planted", 500, 32, 32, PS, {"clarabel": PS}),
        ("random", 500, 32, 32, PS, {"clarabel": ("2",)}),
        ("planted", 2000, 32, 64, PS, {"clarabel": ("2",)}),
        ("random", 2000, 32, 64, ("2",), {}),
        ("planted", 10_000, 32, 64, ("2",), {}),
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--baseline-timeout", type=float, default=600.0)
    ap.add_argument(
        "--timeout", type=float, default=1200.0, help="limit of each of our cases (default 1200 s)"
    )
    ap.add_argument(
        "--baseline-memory", type=float, default=8.0, help="address-space limit of a baseline, GiB"
    )
    ap.add_argument("--json", default=None)
    ap.add_argument("--case", default=None, help="KIND,n,T,d[,p]: only that instance (and p)")
    ap.add_argument("--no-baselines", action="store_true", help="ours and the checker only")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child is not None:
        child(json.loads(args.child))
        return
    print(
        f"# scale_bench {'--quick ' if args.quick else ''}{time.strftime('%Y-%m-%d %H:%M')}, {os.cpu_count()} CPUs, "
        f"load {os.getloadavg()[0]:.1f}"
    )
    print(
        "| instance (n,T,d) | N x m | p | method | time (s) | RSS (MB) | verdict | checker | load (1-min) |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    results = []
    want = None if args.case is None else args.case.split(",")
    cases = plan(args.quick)
    if want is not None:  # that instance: the plan's row (with its baselines), else any instance
        key = (want[0], int(want[1]), int(want[2]), int(want[3]))
        cases = [c for c in cases if tuple(c[:4]) == key] or [(*key, PS, {})]
    with tempfile.TemporaryDirectory() as tmp:
        for kind, n, T, d, ps, baselines in cases:
            for p in ps if want is None or len(want) < 5 else (want[4],):  # any p by --case
                if args.no_baselines:
                    baselines = {}
                spec = dict(kind=kind, n=n, T=T, d=d, p=p, cert=str(Path(tmp) / "cert.json"))
                ours = run_case({**spec, "what": "ours"}, args.timeout)
                chk = (
                    run_case({**spec, "what": "check"}, args.timeout)
                    if ours.get("seconds") is not None
                    else {}
                )
                print(_fmt_ours(ours, chk), flush=True)
                results += [ours, chk]
                for b, bps in baselines.items():
                    if p not in bps:
                        continue
                    r = run_case(
                        {**spec, "what": b, "memory_limit": int(args.baseline_memory * 2**30)},
                        args.baseline_timeout,
                    )
                    print(
                        _fmt_base(r, "cvxpy+Clarabel" if b == "clarabel" else "scipy SLSQP"),
                        flush=True,
                    )
                    results.append(r)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1, default=str))


if __name__ == "__main__":
    main()
