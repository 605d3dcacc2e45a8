"""Joint regularization path of attention W and decoder v (docs/theory.md section 5, Theorem 31).

``(W, v)(R) = argmin L(W, v) s.t. ||W||_p <= R, ||v||_p <= r(R)`` with the radius coupling
``r = f(R)`` given explicitly by the user (`experiments.regpath.radius_function`). Solved by block
minimization: the v-block (for fixed W a logistic regression on the attended features
``b_i = y_i X_i^T softmax(X_i W z_i)``, convex) and the W-block (the fixed-decoder problem of
`experiments.regpath.fixed`, log-domain) alternate until the loss settles; several starts as in
`regularization_path`. Measurements: directional Bregman divergences of W to the certified attention
SVM and of v to the certified decoder SVM (`certify.certify_svm(..., svm="decoder")`), selected
tokens, and the data quantities behind Theorem 31's geometric condition (`theorem31_quantities`),
reported as measured numbers; no verdict is asserted here. The joint mirror-descent path is
`experiments.regpath.joint_md`.
"""

from __future__ import annotations

import math
import time
from fractions import Fraction

import numpy as np

from certify.blas import single_thread_blas
from certify.errors import MdcertError
from certify.exact import parse_p
from experiments.regpath.joint_results import JointPath, JointRadiusResult
from experiments.regpath.theorem31 import theorem31_quantities
from experiments.regpath.joint_objective import DecoderLoss, JointObjective
from experiments.regpath.radius_function import RadiusFunction, parse_radius_function
from experiments.regpath.grid import as_radii
from experiments.regpath.results import rank_starts, start_queue
from experiments.regpath.sphere import (
    sphere_kappa,
    theta_to_w,
    w_to_theta,
    ball_gap,
    solve_on_sphere,
)
from experiments.regpath.svm_reference import (
    Reference,
    ReferenceCache,
    bregman_directional,
    reference_direction,
    uniform_dual_direction,
)

__all__ = [
    "joint_example",
    "JointRadiusResult",
    "JointPath",
    "joint_references",
    "joint_regularization_path",
    "theorem31_quantities",
]


# ---------------------------------------------------------------------------------------- data
def joint_example():
    """The paper's joint-training example: n=2, T=3, d=2, z_i = first token of X_i.

    The decoder is a variable in joint training; the stored ``v`` is zero and ``alpha = (0, 0)``
    (the first tokens) names the tokens whose SVMs the joint path is measured against.
    """
    from certify.problem import AttentionProblem

    X = np.array([[[-2.7, 1.2], [1.4, 2.1], [1.3, -0.1]], [[0.4, -2.2], [-1.1, -0.4], [0.9, 0.1]]])
    y = np.array([1.0, -1.0])
    z = X[:, 0, :].copy()
    return AttentionProblem(X, y, z, np.zeros(2), alpha=(0, 0))


# ---------------------------------------------------------------------------------------- joint path
def _block_solve(
    obj: JointObjective, thW, thv, R, r, p, *, rounds: int, max_iter: int, polish: int, param: str
):
    """Alternate the v-block and the W-block solves; returns the final state."""
    logL_prev = math.inf
    for k in range(1, rounds + 1):
        _, _, W = _unpack(thW, R, p, param)
        vs = solve_on_sphere(
            DecoderLoss(obj.features(W), obj.loss),
            thv,
            r,
            p,
            param=param,
            max_iter=max_iter,
            polish=polish,
        )
        thv = vs.theta
        Ws = solve_on_sphere(
            obj.excess_loss(vs.W), thW, R, p, param=param, max_iter=max_iter, polish=polish
        )
        thW = Ws.theta
        logL = obj.log_loss(Ws.W, vs.W)
        if abs(logL_prev - logL) <= 1e-13 * max(1.0, abs(logL)):
            break
        logL_prev = logL
    W, v = Ws.W, vs.W
    gW = obj.excess_loss(v).evaluate(W[None, :])
    gv = DecoderLoss(obj.features(W), obj.loss).evaluate(v[None, :])
    sW, _ = ball_gap(gW["grad"][0], W, R, p)
    sv, _ = ball_gap(gv["grad"][0], v, r, p)
    return {
        "thW": thW,
        "thv": thv,
        "W": W,
        "v": v,
        "log_loss": obj.log_loss(W, v),
        "sW": sW,
        "sv": sv,
        "selected": tuple(int(t) for t in gW["selected"][0]),
        "rounds": k,
    }


def joint_references(
    problem,
    p: Fraction,
    alpha,
    reference: Reference | None,
    v_reference: Reference | None,
    digits: int,
) -> tuple[Reference, Reference, ReferenceCache]:
    """The attention and decoder SVM references of ``alpha`` (certified unless given) and a cache
    of further certified references (per selected tokens) holding both."""
    if reference is None:
        reference = reference_direction(problem, p, alpha=alpha, digits=digits)
    if v_reference is None:
        v_reference = reference_direction(problem, p, alpha=alpha, svm="decoder", digits=digits)
    refs = ReferenceCache(problem, p, digits)
    refs.add(reference)
    refs.add(v_reference)
    return reference, v_reference, refs


def _unpack(theta, R, p, param):
    return theta_to_w(theta, R, float(p), sphere_kappa(p, param))


def joint_regularization_path(
    problem,
    p,
    *,
    radii=(1.0, 100.0, 9),
    r_of_R: RadiusFunction | str = "R",
    starts: int = 3,
    seed: int = 0,
    alpha=None,
    reference: Reference | None = None,
    v_reference: Reference | None = None,
    svm_start: bool = True,
    dual_start: bool = True,
    loss: str = "logistic",
    param: str = "power",
    rounds: int = 30,
    max_iter: int = 150,
    polish: int = 6,
    digits: int = 30,
    progress=None,
) -> JointPath:
    """``min L(W, v) s.t. ||W||_p <= R, ||v||_p <= r(R)`` along a grid of R (Theorem 31).

    Args:
        problem: data (its stored v is not used except to resolve alpha="opt").
        p: exponent (exact).
        radii: increasing radii or a geometric ``(start, stop, count)`` triple.
        r_of_R: the coupling, a `RadiusFunction` or an expression string (e.g. "R", "sqrt(R)").
        starts: random starts; seed: their seed.
        alpha: reference tokens (default: problem.alpha, else the globally optimal ones).
        reference, v_reference: certified attention / decoder SVM references (default: certify_svm).
        svm_start: also start at every radius from (W_mm, v_mm).
        dual_start: also start at every radius from the SVM-free uniform-dual directions of both SVMs.
        rounds: block-minimization rounds per solve.
    """
    with single_thread_blas():
        return _joint_regularization_path(
            problem,
            p,
            radii=radii,
            r_of_R=r_of_R,
            starts=starts,
            seed=seed,
            alpha=alpha,
            reference=reference,
            v_reference=v_reference,
            svm_start=svm_start,
            dual_start=dual_start,
            loss=loss,
            param=param,
            rounds=rounds,
            max_iter=max_iter,
            polish=polish,
            digits=digits,
            progress=progress,
        )


def _joint_regularization_path(
    problem,
    p,
    *,
    radii,
    r_of_R,
    starts,
    seed,
    alpha,
    reference,
    v_reference,
    svm_start,
    dual_start,
    loss,
    param,
    rounds,
    max_iter,
    polish,
    digits,
    progress,
) -> JointPath:
    from certify.problem import resolve_alpha

    t0 = time.perf_counter()
    p = parse_p(p)
    radii = as_radii(radii)
    rf = r_of_R if isinstance(r_of_R, RadiusFunction) else parse_radius_function(r_of_R)
    rs = rf.values(radii)
    alpha = resolve_alpha(problem, alpha)
    reference, v_reference, refs = joint_references(
        problem, p, alpha, reference, v_reference, digits
    )
    obj = JointObjective(problem.X, problem.y, problem.z, loss=loss, mask=problem.token_mask)
    kappa = sphere_kappa(p, param)
    m, d = problem.d * problem.d, problem.d
    rng = np.random.default_rng(seed)
    chains = {
        f"random-{k}": (
            w_to_theta(rng.standard_normal(m), kappa),
            w_to_theta(rng.standard_normal(d), kappa),
        )
        for k in range(starts)
    }
    svm_theta = (w_to_theta(reference.direction, kappa), w_to_theta(v_reference.direction, kappa))
    dual_theta = None
    if dual_start:
        uW = uniform_dual_direction(problem.attention_constraints(alpha).rows(), p)
        uv = uniform_dual_direction(problem.decoder_constraints(alpha).rows(), p)
        if np.any(uW) and np.any(uv):
            dual_theta = (w_to_theta(uW, kappa), w_to_theta(uv, kappa))
    prev_best = None
    results = []
    for R, r in zip(radii, rs):
        R = float(R)
        todo = start_queue(
            chains, svm=svm_theta if svm_start else None, dual=dual_theta, previous=prev_best
        )
        if not todo:
            raise MdcertError(
                "no starts: use at least one random start, the SVM start or the uniform-dual start"
            )
        runs = {
            label: _block_solve(
                obj,
                th[0],
                th[1],
                R,
                r,
                p,
                rounds=rounds,
                max_iter=max_iter,
                polish=polish,
                param=param,
            )
            for label, th in todo
        }
        for label in chains:
            chains[label] = (runs[label]["thW"], runs[label]["thv"])
        best_label, summaries = rank_starts(
            {
                k: (
                    run["log_loss"],
                    run["W"],
                    max(run["sW"], run["sv"]),
                    run["rounds"],
                    run["selected"],
                )
                for k, run in runs.items()
            },
            R,
            float(p),
        )
        best = runs[best_label]
        prev_best = (best["thW"], best["thv"])
        res = JointRadiusResult(
            R=R,
            r=float(r),
            W=best["W"].reshape(d, d),
            v=best["v"],
            loss=math.exp(best["log_loss"]),
            log_loss=best["log_loss"],
            stationarity=max(best["sW"], best["sv"]),
            stationarity_W=best["sW"],
            stationarity_v=best["sv"],
            bregman_to_svm=bregman_directional(reference, best["W"], p),
            bregman_v_to_svm=bregman_directional(v_reference, best["v"], p),
            selected=best["selected"],
            selects_alpha=tuple(best["selected"]) == tuple(alpha),
            winner=best_label,
            rounds=best["rounds"],
            starts=summaries,
            bregman_to_selected_svm=refs.bregman("attention", best["selected"], best["W"]),
            bregman_v_to_selected_svm=refs.bregman("decoder", best["selected"], best["v"]),
        )
        results.append(res)
        if progress is not None:
            progress(res)
    quantities = theorem31_quantities(problem, v_reference, alpha)
    quantities["r_over_R"] = [float(r / R) for R, r in zip(radii, rs)]
    quantities["r_over_log_R"] = [
        float(r / math.log(R)) if R > 1 else None for R, r in zip(radii, rs)
    ]
    settings = {
        "starts": int(starts),
        "seed": int(seed),
        "svm_start": bool(svm_start),
        "dual_start": dual_theta is not None,
        "param": param,
        "rounds": int(rounds),
        "max_iter": int(max_iter),
        "polish": int(polish),
        "radii": [float(x) for x in radii],
        "r": [float(x) for x in rs],
    }
    return JointPath(
        p,
        tuple(alpha),
        rf.text,
        reference,
        v_reference,
        tuple(results),
        quantities,
        time.perf_counter() - t0,
        settings,
    )
