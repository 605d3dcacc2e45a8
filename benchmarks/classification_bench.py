"""Certified l_p max-margin classifiers (docs/theory.md section 7) against float peers (issue 23).

Cases (each in its own subprocess, so that its peak memory is its own):

- binary, (n, d) = (20,000, 256) by default, p in {1.5, 2, 3}, planted separable and random labels
  (`certify.synth.classification_problem`, seed 0): our `certify_max_margin` (wall and CPU seconds,
  peak resident memory, status, digits, undecided rows) and the independent checker (seconds, verdict);
- peers on the same data: cvxpy + Clarabel (``pnorm(w, p) s.t. A w >= 1``, capped at ``--cap``
  seconds) and, at p = 2, sklearn's LinearSVC (hinge loss, C = 1e6, no intercept: the soft-margin
  surrogate of the hard-margin program). Their OPT is measured against our enclosure (their point
  rescaled to be feasible in float64): they prove nothing;
- multiclass: sklearn's digits (1,797 x 64, K = 10) at p in {1.5, 2, 3}.

Every time is wall-clock on a shared machine: the script prints ``os.getloadavg()`` before each case.
Usage: python benchmarks/classification_bench.py [--n N --d D] [--ps 1.5,2,3] [--no-peers]
       [--only binary|digits] [--cap SECONDS] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _problem(spec: dict):
    import numpy as np

    if spec["data"] == "digits":
        from sklearn.datasets import load_digits

        from certify.classification import ClassificationProblem

        X, y = load_digits(return_X_y=True)
        return ClassificationProblem(X.astype(np.float64), y.astype(np.float64))
    from certify.synth import classification_problem

    return classification_problem(
        n=spec["n"], d=spec["d"], separable=spec["data"] == "planted", seed=0
    )


def _rss_gib() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def run_ours(spec: dict) -> dict:
    from certify.check import check_certificate
    from certify.exact import decimal_digits
    from certify.maxmargin import certify_max_margin

    prob = _problem(spec)
    t0, c0 = time.perf_counter(), time.process_time()
    cert = certify_max_margin(prob, spec["p"], digits=60)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    rss = _rss_gib()
    t0 = time.perf_counter()
    res = check_certificate(prob, cert)
    out = {
        "status": cert.status.value,
        "seconds": round(wall, 1),
        "cpu_seconds": round(cpu, 1),
        "peak_gib": round(rss, 2),
        "check_seconds": round(time.perf_counter() - t0, 1),
        "checked": res.ok,
        "peak_gib_with_check": round(_rss_gib(), 2),
    }
    if cert.support is not None:
        out["tight"], out["inactive"], out["undecided"] = cert.support.counts()
        rw = cert.relative_width()
        out["digits"] = "exact" if rw == 0 else decimal_digits(rw)
        out["opt"] = float(cert.opt_lower)
    return out


def _rows(prob):
    import numpy as np

    cs = prob.constraints()
    return cs.rows(), np.asarray(prob.y)


def run_clarabel(spec: dict) -> dict:
    import cvxpy as cp
    import numpy as np

    prob = _problem(spec)
    A, _ = _rows(prob)
    w = cp.Variable(A.shape[1])
    t0, c0 = time.perf_counter(), time.process_time()
    pr = cp.Problem(cp.Minimize(cp.pnorm(w, float(spec["p"]))), [A @ w >= 1])
    try:
        pr.solve(solver=cp.CLARABEL)
    except cp.error.SolverError as exc:
        return {
            "status": f"solver error: {str(exc)[:60]}",
            "seconds": round(time.perf_counter() - t0, 1),
        }
    out = {
        "status": pr.status,
        "seconds": round(time.perf_counter() - t0, 1),
        "cpu_seconds": round(time.process_time() - c0, 1),  # all of the process's threads
        "peak_gib": round(_rss_gib(), 2),
    }
    if w.value is not None and pr.status in ("optimal", "optimal_inaccurate"):
        out["opt"] = _feasible_norm(A, np.asarray(w.value), float(spec["p"]))
    return out


def run_linearsvc(spec: dict) -> dict:
    import numpy as np
    from sklearn.svm import LinearSVC

    prob = _problem(spec)
    A, _ = _rows(prob)
    t0 = time.perf_counter()
    clf = LinearSVC(C=1e6, loss="hinge", fit_intercept=False, dual=True, max_iter=100_000, tol=1e-8)
    clf.fit(prob.X, prob.y)
    out = {
        "status": "fit",
        "seconds": round(time.perf_counter() - t0, 1),
        "peak_gib": round(_rss_gib(), 2),
    }
    out["opt"] = _feasible_norm(A, np.asarray(clf.coef_).ravel(), 2.0)
    return out


def _feasible_norm(A, w, p: float) -> float | None:
    """``||w / min A w||_p`` in float64 (None when w separates nothing)."""
    import numpy as np

    s = float(np.min(A @ w))
    return None if not s > 0 else float(np.sum(np.abs(w / s) ** p) ** (1 / p))


RUNNERS = {"ours": run_ours, "clarabel": run_clarabel, "linearsvc": run_linearsvc}


def one(kind: str, spec: dict, cap: float) -> dict:
    """Run one case in a fresh interpreter (its own peak memory), at most ``cap`` seconds."""
    env = {**os.environ, "PYTHONPATH": ROOT}
    cmd = [sys.executable, __file__, "--one", kind, json.dumps(spec)]
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=cap, env=env, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return {
            "status": f"not finished in {cap:.0f} s",
            "seconds": round(time.perf_counter() - t0, 1),
        }
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode or not lines:
        return {"status": f"failed: {(proc.stderr.strip().splitlines() or ['?'])[-1][:80]}"}
    return json.loads(lines[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=20_000)
    ap.add_argument("--d", type=int, default=256)
    ap.add_argument("--ps", default="1.5,2,3")
    ap.add_argument("--only", choices=("binary", "digits"), default=None)
    ap.add_argument("--no-peers", action="store_true")
    ap.add_argument(
        "--peer-ps", default="1.5,2,3", help="p values at which Clarabel runs (default all)"
    )
    ap.add_argument("--cap", type=float, default=600.0, help="seconds per peer run (default 600)")
    ap.add_argument("--no-linearsvc", action="store_true", help="skip sklearn's LinearSVC at p = 2")
    ap.add_argument("--json", default=None)
    ap.add_argument("--one", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.one:
        kind, spec = args.one[0], json.loads(args.one[1])
        print(json.dumps(RUNNERS[kind](spec)), flush=True)
        return 0
    ps = [s.strip() for s in args.ps.split(",")]
    cases = []
    if args.only != "digits":
        cases += [
            dict(data=data, n=args.n, d=args.d, p=p) for data in ("planted", "random") for p in ps
        ]
    if args.only != "binary":
        cases += [dict(data="digits", p=p) for p in ps]
    results = []
    for spec in cases:
        load = os.getloadavg()
        row = {"case": spec, "load": [round(x, 1) for x in load], "ours": one("ours", spec, 3600)}
        if not args.no_peers and spec["data"] != "digits":
            if spec["p"] in args.peer_ps.split(","):
                row["clarabel"] = one("clarabel", spec, args.cap)
            if float(spec["p"]) == 2 and not args.no_linearsvc:
                row["linearsvc"] = one("linearsvc", spec, args.cap)
        results.append(row)
        print(_line(row), flush=True)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(results, fh, indent=1)
    return 0


def _line(row: dict) -> str:
    spec, o = row["case"], row["ours"]
    name = f"{spec['data']} " + (
        f"({spec['n']}, {spec['d']})" if spec["data"] != "digits" else "(1797, 64, K=10)"
    )
    text = (
        f"{name} p={spec['p']} load {row['load'][0]}: ours {o.get('status')} {o.get('seconds')} s "
        f"(CPU {o.get('cpu_seconds')} s), {o.get('peak_gib')} GiB, digits {o.get('digits', '-')}, "
        f"undecided {o.get('undecided', '-')}; checker {o.get('check_seconds')} s {o.get('checked')}"
    )
    for peer in ("clarabel", "linearsvc"):
        if peer in row:
            r = row[peer]
            rel = ""
            if r.get("opt") and o.get("opt"):
                rel = f", OPT rel. err {abs(r['opt'] - o['opt']) / o['opt']:.1e}"
            text += f" | {peer} {r.get('status')} {r.get('seconds')} s{rel}"
    return text


if __name__ == "__main__":
    sys.exit(main())
