"""Regularization paths of softmax attention with a fixed decoder (docs/theory.md section 5, Theorem 6).

``W(R) = argmin_{||W||_p <= R} L(W)`` for a geometric grid of radii R, warm-started along the
grid, several starts ("chains"), a per-R first-order optimality gap on the l_p ball, and the
directional Bregman divergence ``D_psi(Wbar_mm, W(R)/||W(R)||_p)`` to the certified attention-SVM
direction of the chosen tokens (default: the globally optimal ones).

The pieces: radius grids (`experiments.regpath.grid`), the log-domain objective ``log(L - L_*)``
(`experiments.regpath.excess_loss`), the l_p-sphere solver (`experiments.regpath.sphere`), the certified reference
(`experiments.regpath.svm_reference`) and the result records (`experiments.regpath.results`). This module
is the driver. Starts per radius: seeded random chains (warm-started along the grid), the reference
SVM direction, the SVM-free direction ``phi_q(A^T 1)`` and the previous radius' winner; the lowest
``log E`` wins and the others' gaps are reported. Random starts at large R sit on exp(-R)-flat
plateaus; the report shows it. All of this is float64 numerics (evidence for the measurement, not a
certificate); the reference direction comes from `certify.certify_svm`.
"""

from __future__ import annotations

import time

import numpy as np

from certify.blas import single_thread_blas
from certify.errors import MdcertError
from certify.exact import format_exact, parse_p
from experiments.regpath.excess_loss import ExcessLoss
from experiments.regpath.grid import as_radii, geometric_radii, parse_radii  # noqa: F401  (re-exported)
from experiments.regpath.results import RadiusResult, RegPath, rank_starts, start_queue
from experiments.regpath.sphere import theta_to_w  # noqa: F401  (benchmarks/regpath_bench.py imports it from here)
from experiments.regpath.sphere import (
    SphereSolve,
    sphere_kappa,
    w_to_theta,
    lp_norm_rows,
    solve_on_sphere,
)
from experiments.regpath.svm_reference import (
    Reference,
    bregman_directional,
    reference_direction,
    uniform_dual_direction,
)

__all__ = ["regularization_path"]


def regularization_path(
    problem,
    p,
    *,
    radii=(10.0, 1000.0, 9),
    starts: int = 3,
    seed: int = 0,
    alpha="opt",
    reference: Reference | None = None,
    svm_start: bool = True,
    dual_start: bool = True,
    loss: str = "logistic",
    param: str = "power",
    max_iter: int = 150,
    polish: int = 6,
    digits: int = 30,
    progress=None,
) -> RegPath:
    """Solve ``min L(W) s.t. ||W||_p <= R`` along a grid of R with several starts (Theorem 6).

    Args:
        problem: `certify.AttentionProblem` (its decoder v is fixed).
        p: exponent (exact; "1.75", "7/4", Fraction).
        radii: increasing radii, or a ``(start, stop, count)`` geometric triple.
        starts: number of random chains (each started at a seeded random direction at the first
            radius and warm-started along the grid).
        seed: seed of the random starts.
        alpha: reference tokens ("opt" = globally optimal; ties are an error).
        reference: a precomputed `Reference` (default: certified by `certify.certify_svm`).
        svm_start: also start at every radius from the reference direction ("svm" chain).
        dual_start: also start at every radius from the SVM-free direction ``phi_q(A^T 1)`` (the
            mirror image of uniform multipliers on alpha's constraint rows; "uniform-dual" chain).
        loss: "logistic" or "exponential".
        param: sphere parametrization (see `solve_on_sphere`).
        max_iter: L-BFGS iteration cap per solve.
        polish: Newton polishing steps per solve (see `solve_on_sphere`).
        digits: precision requested from `certify_svm`.
        progress: optional callable ``progress(RadiusResult)``.

    Returns:
        The path (winner per radius plus every start's summary).
    """
    with single_thread_blas():
        return _regularization_path(
            problem,
            p,
            radii=radii,
            starts=starts,
            seed=seed,
            alpha=alpha,
            reference=reference,
            svm_start=svm_start,
            dual_start=dual_start,
            loss=loss,
            param=param,
            max_iter=max_iter,
            polish=polish,
            digits=digits,
            progress=progress,
        )


def _regularization_path(
    problem,
    p,
    *,
    radii,
    starts,
    seed,
    alpha,
    reference,
    svm_start,
    dual_start,
    loss,
    param,
    max_iter,
    polish,
    digits,
    progress,
) -> RegPath:
    from certify.problem import resolve_alpha

    t0 = time.perf_counter()
    p = parse_p(p)
    radii = as_radii(radii)
    if isinstance(starts, bool) or not isinstance(starts, (int, np.integer)) or starts < 0:
        raise MdcertError(f"invalid starts {starts!r}; give a number of random starts >= 0")
    if starts == 0 and not svm_start and not dual_start:
        raise MdcertError(
            "no starts: use at least one random start, the SVM start or the uniform-dual start"
        )
    alpha = resolve_alpha(problem, alpha)
    if reference is None:
        reference = reference_direction(problem, p, alpha=alpha, digits=digits)
    if reference.p != p or reference.svm != "attention":
        raise MdcertError(
            f"the reference is the {reference.svm} SVM at p = {format_exact(reference.p)}, "
            f"but the path needs the attention SVM at p = {format_exact(p)}"
        )
    if reference.direction.size != problem.d * problem.d:
        raise MdcertError(
            f"reference has {reference.direction.size} entries, expected d*d = {problem.d * problem.d}"
        )
    obj = ExcessLoss(problem.X, problem.y, problem.z, problem.v, loss=loss, mask=problem.token_mask)
    kappa = sphere_kappa(p, param)
    pf = float(p)
    rng = np.random.default_rng(seed)
    chains: dict[str, np.ndarray] = {
        f"random-{k}": w_to_theta(rng.standard_normal(obj.m), kappa) for k in range(starts)
    }
    svm_theta = w_to_theta(reference.direction, kappa)
    dual_theta = None
    if dual_start:
        u = uniform_dual_direction(problem.attention_constraints(alpha).rows(), p)
        dual_theta = w_to_theta(u, kappa) if np.any(u) else None
    prev_best: np.ndarray | None = None
    results = []
    for R in radii:
        R = float(R)
        todo = start_queue(
            chains, svm=svm_theta if svm_start else None, dual=dual_theta, previous=prev_best
        )
        runs: dict[str, SphereSolve] = {
            label: solve_on_sphere(obj, theta, R, p, param=param, max_iter=max_iter, polish=polish)
            for label, theta in todo
        }
        for label in chains:
            chains[label] = runs[label].theta
        best_label, summaries = rank_starts(
            {
                k: (r.log_excess, r.W, r.stationarity, r.iterations, r.selected)
                for k, r in runs.items()
            },
            R,
            pf,
        )
        best = runs[best_label]
        prev_best = best.theta
        res = RadiusResult(
            R=R,
            W=best.W.reshape(problem.d, problem.d),
            norm=float(lp_norm_rows(best.W[None, :], pf)[0]),
            loss=best.loss,
            log_excess=best.log_excess,
            stationarity=best.stationarity,
            gap_abs=best.gap_abs,
            bregman_to_svm=bregman_directional(reference, best.W, p),
            selected=best.selected,
            selects_alpha=tuple(best.selected) == tuple(alpha),
            winner=best_label,
            starts=summaries,
        )
        results.append(res)
        if progress is not None:
            progress(res)
    settings = {
        "starts": int(starts),
        "seed": int(seed),
        "svm_start": bool(svm_start),
        "dual_start": dual_theta is not None,
        "param": param,
        "max_iter": int(max_iter),
        "polish": int(polish),
        "radii": [float(r) for r in radii],
    }
    return RegPath(
        p,
        tuple(alpha),
        loss,
        obj.base_loss,
        reference,
        tuple(results),
        time.perf_counter() - t0,
        settings,
    )
