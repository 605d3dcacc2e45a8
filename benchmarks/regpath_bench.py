"""Regularization-path benchmark (issue 5): divergence decay, time per p, and a plain-L-BFGS baseline.

Run: ``python benchmarks/regpath_bench.py [--quick] [--p 1.1,1.75,2,3] [--no-baseline] [--no-joint]``

1. Paper-size synthetic instance (``certify.synthetic_problem()``, n=6, T=8, d=10), radii 10..10^3
   (9 geometric), 3 random starts + SVM start + uniform-dual start + warm start (and again without the
   SVM start): the directional Bregman divergence
   ``D_psi(Wbar_mm(opt), W(R)/R)`` against the CERTIFIED SVM direction per R, time per p, the
   largest relative ball gap and the winning starts.
2. Baseline: the same sphere parametrization and warm starts, but L-BFGS on the plain float64 loss
   L(W) (no log domain): shows where it stalls.
3. The paper's joint example: the joint regularization path (r = R) and the joint mirror-descent
   path (W(0)=v(0)=0, normalized steps, lr 0.1) for p in {1.75, 2, 3}.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from certify import parse_p, synthetic_problem  # noqa: E402
from experiments.regpath.fixed import (  # noqa: E402
    sphere_kappa,
    theta_to_w,
    w_to_theta,
    bregman_directional,
    geometric_radii,
    reference_direction,
    regularization_path,
)


def plain_lbfgs_path(problem, p, radii, reference, *, max_iter: int = 300) -> list[float]:
    """Warm-started L-BFGS on the float64 loss L(W) itself on the sphere (starting at the SVM direction
    at the first radius, like the log-domain chain that wins): the divergence per radius."""
    from scipy.optimize import minimize

    from experiments.regpath.fixed import ExcessLoss

    obj = ExcessLoss(problem.X, problem.y, problem.z, problem.v)
    kappa = sphere_kappa(p, "power")
    pf = float(p)
    theta = w_to_theta(reference.direction, kappa)
    out = []
    for R in radii:

        def fun(th):
            U, N, W = theta_to_w(th, R, pf, kappa)
            ev = obj.evaluate(W[None, :])
            E = math.exp(float(ev["log_excess"][0]))
            G = ev["grad"][0] * E  # grad L = E * grad log E (underflows like plain L)
            L = float(ev["loss"][0])  # = L_* + E rounded to float64
            gradN = np.sign(U) * np.abs(U) ** (pf - 1.0) / N ** (pf - 1.0)
            dU = (R / N) * (G - gradN * (float(G @ U) / N))
            if kappa != 1.0:
                dU = dU * kappa * np.abs(th) ** (kappa - 1.0)
            return L, dU

        res = minimize(fun, theta, jac=True, method="L-BFGS-B", options={"maxiter": max_iter})
        theta = res.x
        _, _, W = theta_to_w(theta, R, pf, kappa)
        out.append(bregman_directional(reference, W, p))
    return out


def _fmt(x) -> str:
    return "-" if x is None else f"{float(x):.3e}"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--p", default="1.1,1.75,2,3")
    ap.add_argument("--quick", action="store_true", help="3 radii, 1 random start")
    ap.add_argument("--no-baseline", action="store_true")
    ap.add_argument("--no-joint", action="store_true")
    args = ap.parse_args()
    problem = synthetic_problem()
    count, starts = (3, 1) if args.quick else (9, 3)
    radii = geometric_radii(10.0, 1000.0, count)
    print(
        f"synthetic_problem(): n={problem.n} T={problem.T} d={problem.d}, optimal tokens "
        f"{list(problem.optimal_indices().indices)}; radii {', '.join(f'{r:.4g}' for r in radii)}; "
        f"{starts} random starts + svm + uniform-dual + previous-best"
    )
    for ps in args.p.split(","):
        p = parse_p(ps)
        t0 = time.perf_counter()
        ref = reference_direction(problem, p)
        t_ref = time.perf_counter() - t0
        t0 = time.perf_counter()
        path = regularization_path(problem, p, radii=radii, starts=starts, reference=ref)
        t_path = time.perf_counter() - t0
        d = path.decay()
        print(
            f"\np = {ps}: certified reference in {t_ref:.2f} s (direction error <= {ref.direction_error_upper:.1e}); "
            f"path {t_path:.1f} s; D(10)/D(1000) = {d['ratio_first_over_last']:.3g}; "
            f"monotone: {d['monotone_nonincreasing']}"
        )
        t0 = time.perf_counter()
        nosvm = regularization_path(
            problem, p, radii=radii, starts=starts, reference=ref, svm_start=False
        )
        t_nosvm = time.perf_counter() - t0
        print(f"  without the SVM start (random + uniform-dual + warm): {t_nosvm:.1f} s")
        base = None if args.no_baseline else plain_lbfgs_path(problem, p, radii, ref)
        print(
            "      R   D_psi(log-domain)   max rel. gap   winner          tokens == opt   D_psi(no SVM start)   "
            "D_psi(plain L-BFGS on L)"
        )
        for k, r in enumerate(path.results):
            b = "" if base is None else f"{base[k]:.3e}"
            print(
                f"{r.R:7.1f}   {r.bregman_to_svm:.3e}           {r.stationarity:.1e}        {r.winner:<15} "
                f"{str(r.selects_alpha):<15} {nosvm.results[k].bregman_to_svm:.3e} ({nosvm.results[k].winner:<13}) {b}"
            )
    if not args.no_joint:
        from experiments.regpath.joint import (
            joint_example,
            joint_md_path,
            joint_regularization_path,
        )

        J = joint_example()
        print("\njoint example (n=2, T=3, d=2, alpha=(0,0)):")
        for ps in ("1.75", "2", "3"):
            t0 = time.perf_counter()
            jp = joint_regularization_path(J, ps, radii=(1.0, 1000.0, 7), r_of_R="R", starts=starts)
            t_j = time.perf_counter() - t0
            t0 = time.perf_counter()
            md = joint_md_path(J, ps, steps=3000 if not args.quick else 300, lr=0.1)
            t_md = time.perf_counter() - t0
            print(f"  p = {ps}: joint path (r = R) {t_j:.1f} s")
            for r in jp.results:
                print(
                    f"     R = r = {r.R:7.1f}  D_W {r.bregman_to_svm:.3e}  D_v {r.bregman_v_to_svm:.3e}  "
                    f"gap {r.stationarity:.1e}  tokens {list(r.selected)}  winner {r.winner}  "
                    f"[vs SVMs of the selected tokens: D_W {_fmt(r.bregman_to_selected_svm)}  "
                    f"D_v {_fmt(r.bregman_v_to_selected_svm)}]"
                )
            print(
                f"    joint MD ({md.steps} steps, {t_md:.1f} s): W step skipped at {list(md.skipped_W)[:5]}"
            )
            shown = md.records[::8] + (() if (len(md.records) - 1) % 8 == 0 else (md.records[-1],))
            for rec in shown:
                print(
                    f"     k={rec['step']:5d}  ||W||={rec['norm_W']:.4g}  ||v||={rec['norm_v']:.4g}  "
                    f"D_W={_fmt(rec['bregman_W'])}  D_v={_fmt(rec['bregman_v'])}  tokens {rec['selected_tokens']}  "
                    f"[selected-token SVMs: D_W {_fmt(rec['bregman_W_to_selected_svm'])}  "
                    f"D_v {_fmt(rec['bregman_v_to_selected_svm'])}]"
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
