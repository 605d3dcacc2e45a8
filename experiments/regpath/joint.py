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
from dataclasses import dataclass
from fractions import Fraction
from typing import Sequence

import numpy as np

from certify.blas import single_thread_blas
from certify.errors import MdcertError
from certify.exact import format_fraction, parse_p
from experiments.regpath.joint_objective import DecoderLoss, JointObjective
from experiments.regpath.radius_function import RadiusFunction, parse_radius_function
from experiments.regpath.grid import as_radii
from experiments.regpath.results import StartSummary, json_number, rank_starts, start_queue
from experiments.regpath.sphere import sphere_kappa, theta_to_w, w_to_theta, ball_gap, solve_on_sphere
from experiments.regpath.svm_reference import (Reference, ReferenceCache, bregman_directional, reference_direction,
                                       reference_json, uniform_dual_direction)

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

    X = np.array([[[-2.7, 1.2], [1.4, 2.1], [1.3, -0.1]],
                  [[0.4, -2.2], [-1.1, -0.4], [0.9, 0.1]]])
    y = np.array([1.0, -1.0])
    z = X[:, 0, :].copy()
    return AttentionProblem(X, y, z, np.zeros(2), alpha=(0, 0))


# ---------------------------------------------------------------------------------------- joint path
@dataclass(frozen=True)
class JointRadiusResult:
    """Winner at one (R, r) and how the other starts fared (fields as `RadiusResult`, plus v)."""

    R: float
    r: float
    W: np.ndarray
    v: np.ndarray
    loss: float
    log_loss: float
    stationarity: float
    stationarity_W: float
    stationarity_v: float
    bregman_to_svm: float
    bregman_v_to_svm: float
    selected: tuple[int, ...]
    selects_alpha: bool
    winner: str
    rounds: int
    starts: tuple[StartSummary, ...]
    bregman_to_selected_svm: float | None = None
    bregman_v_to_selected_svm: float | None = None

    def to_json(self) -> dict:
        return {"R": self.R, "r": self.r, "bregman_to_svm": json_number(self.bregman_to_svm),
                "bregman_v_to_svm": json_number(self.bregman_v_to_svm),
                "bregman_to_selected_svm": json_number(self.bregman_to_selected_svm),
                "bregman_v_to_selected_svm": json_number(self.bregman_v_to_selected_svm), "loss": json_number(self.loss),
                "log_loss": json_number(self.log_loss), "stationarity": json_number(self.stationarity),
                "stationarity_W": json_number(self.stationarity_W), "stationarity_v": json_number(self.stationarity_v),
                "selected_tokens": list(self.selected), "selects_alpha": self.selects_alpha, "winner": self.winner,
                "rounds": self.rounds, "v": [float(x) for x in self.v],
                "starts": [s.to_json() for s in self.starts]}


@dataclass(frozen=True)
class JointPath:
    """A joint regularization path (W, v)(R) over a grid (Theorem 31): winners per radius, the
    certified attention and decoder references, and the measured Theorem 31 quantities."""

    p: Fraction
    alpha: tuple[int, ...]
    r_of_R: str
    reference: Reference
    v_reference: Reference
    results: tuple[JointRadiusResult, ...]
    quantities: dict
    elapsed_s: float
    settings: dict

    def decay(self) -> dict:
        b = np.array([r.bregman_to_svm for r in self.results])
        bv = np.array([r.bregman_v_to_svm for r in self.results])
        return {"bregman_first": json_number(b[0]), "bregman_last": json_number(b[-1]),
                "ratio_first_over_last": json_number(b[0] / b[-1] if b[-1] > 0 else math.inf),
                "monotone_nonincreasing": bool(np.all(np.diff(b) <= 0)),
                "bregman_v_first": json_number(bv[0]), "bregman_v_last": json_number(bv[-1]),
                "ratio_v_first_over_last": json_number(bv[0] / bv[-1] if bv[-1] > 0 else math.inf)}

    def to_json(self) -> dict:
        return {"p": format_fraction(self.p), "p_float": float(self.p), "alpha": list(self.alpha),
                "r_of_R": self.r_of_R, "reference": reference_json(self.reference), "v_reference": reference_json(self.v_reference),
                "theorem31_quantities": self.quantities, "settings": self.settings, "elapsed_s": self.elapsed_s,
                "decay": self.decay(), "path": [r.to_json() for r in self.results]}


def _block_solve(obj: JointObjective, thW, thv, R, r, p, *, rounds: int, max_iter: int, polish: int, param: str):
    """Alternate the v-block and the W-block solves; returns the final state."""
    logL_prev = math.inf
    for k in range(1, rounds + 1):
        _, _, W = _unpack(thW, R, p, param)
        vs = solve_on_sphere(DecoderLoss(obj.features(W), obj.loss), thv, r, p, param=param, max_iter=max_iter,
                             polish=polish)
        thv = vs.theta
        Ws = solve_on_sphere(obj.excess_loss(vs.W), thW, R, p, param=param,
                             max_iter=max_iter, polish=polish)
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
    return {"thW": thW, "thv": thv, "W": W, "v": v, "log_loss": obj.log_loss(W, v), "sW": sW, "sv": sv,
            "selected": tuple(int(t) for t in gW["selected"][0]), "rounds": k}


def joint_references(problem, p: Fraction, alpha, reference: Reference | None, v_reference: Reference | None,
                     digits: int) -> tuple[Reference, Reference, ReferenceCache]:
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


def joint_regularization_path(problem, p, *, radii=(1.0, 100.0, 9), r_of_R: RadiusFunction | str = "R",
                              starts: int = 3, seed: int = 0, alpha=None, reference: Reference | None = None,
                              v_reference: Reference | None = None, svm_start: bool = True, dual_start: bool = True,
                              loss: str = "logistic",
                              param: str = "power", rounds: int = 30, max_iter: int = 150, polish: int = 6,
                              digits: int = 30, progress=None) -> JointPath:
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
        return _joint_regularization_path(problem, p, radii=radii, r_of_R=r_of_R, starts=starts, seed=seed,
                                          alpha=alpha, reference=reference, v_reference=v_reference,
                                          svm_start=svm_start, dual_start=dual_start, loss=loss, param=param,
                                          rounds=rounds,
                                          max_iter=max_iter, polish=polish, digits=digits, progress=progress)


def _joint_regularization_path(problem, p, *, radii, r_of_R, starts, seed, alpha, reference, v_reference, svm_start,
                               dual_start, loss, param, rounds, max_iter, polish, digits, progress) -> JointPath:
    from certify.problem import resolve_alpha

    t0 = time.perf_counter()
    p = parse_p(p)
    radii = as_radii(radii)
    rf = r_of_R if isinstance(r_of_R, RadiusFunction) else parse_radius_function(r_of_R)
    rs = rf.values(radii)
    alpha = resolve_alpha(problem, alpha)
    reference, v_reference, refs = joint_references(problem, p, alpha, reference, v_reference, digits)
    obj = JointObjective(problem.X, problem.y, problem.z, loss=loss, mask=problem.token_mask)
    kappa = sphere_kappa(p, param)
    m, d = problem.d * problem.d, problem.d
    rng = np.random.default_rng(seed)
    chains = {f"random-{k}": (w_to_theta(rng.standard_normal(m), kappa), w_to_theta(rng.standard_normal(d), kappa))
              for k in range(starts)}
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
        todo = start_queue(chains, svm=svm_theta if svm_start else None, dual=dual_theta, previous=prev_best)
        if not todo:
            raise MdcertError("no starts: use at least one random start, the SVM start or the uniform-dual start")
        runs = {label: _block_solve(obj, th[0], th[1], R, r, p, rounds=rounds, max_iter=max_iter, polish=polish,
                                    param=param) for label, th in todo}
        for label in chains:
            chains[label] = (runs[label]["thW"], runs[label]["thv"])
        best_label, summaries = rank_starts({k: (run["log_loss"], run["W"], max(run["sW"], run["sv"]), run["rounds"],
                                                 run["selected"]) for k, run in runs.items()}, R, float(p))
        best = runs[best_label]
        prev_best = (best["thW"], best["thv"])
        res = JointRadiusResult(
            R=R, r=float(r), W=best["W"].reshape(d, d), v=best["v"], loss=math.exp(best["log_loss"]),
            log_loss=best["log_loss"], stationarity=max(best["sW"], best["sv"]), stationarity_W=best["sW"],
            stationarity_v=best["sv"], bregman_to_svm=bregman_directional(reference, best["W"], p),
            bregman_v_to_svm=bregman_directional(v_reference, best["v"], p), selected=best["selected"],
            selects_alpha=tuple(best["selected"]) == tuple(alpha), winner=best_label, rounds=best["rounds"],
            starts=summaries, bregman_to_selected_svm=refs.bregman("attention", best["selected"], best["W"]),
            bregman_v_to_selected_svm=refs.bregman("decoder", best["selected"], best["v"]))
        results.append(res)
        if progress is not None:
            progress(res)
    quantities = theorem31_quantities(problem, v_reference, alpha)
    quantities["r_over_R"] = [float(r / R) for R, r in zip(radii, rs)]
    quantities["r_over_log_R"] = [float(r / math.log(R)) if R > 1 else None for R, r in zip(radii, rs)]
    settings = {"starts": int(starts), "seed": int(seed), "svm_start": bool(svm_start),
                "dual_start": dual_theta is not None, "param": param, "rounds": int(rounds), "max_iter": int(max_iter), "polish": int(polish),
                "radii": [float(x) for x in radii], "r": [float(x) for x in rs]}
    return JointPath(p, tuple(alpha), rf.text, reference, v_reference, tuple(results), quantities,
                     time.perf_counter() - t0, settings)


# ---------------------------------------------------------------------------------------- Theorem 31 numbers
def theorem31_quantities(problem, v_reference: Reference, alpha: Sequence[int]) -> dict:
    """Data quantities behind Theorem 31's geometric condition, measured (no verdict).

    With the certified decoder SVM point ``v_mm`` (exact rationals when certified): the token
    scores ``y_i v_mm^T x_it`` (1 on the decoder's support examples, > 1 off it), per example the
    alpha token's score, the best other token's score and their gap, and the decoder support set.
    Scores are computed exactly (rationals) and rounded to float64 for the report. Only valid tokens
    count (docs/theory.md section 1.3): row i of ``decoder_scores`` has ``lengths[i]`` entries.
    """
    X = problem.X
    n, _, d = X.shape
    lengths = [int(k) for k in problem.valid_lengths]
    if v_reference.exact is not None:
        v = list(v_reference.exact)
    else:
        v = [Fraction(float(x)) for x in v_reference.direction]
    Xq = [[[Fraction(float(X[i, t, k])) for k in range(d)] for t in range(lengths[i])] for i in range(n)]
    scores = [[int(problem.y[i]) * sum(Xq[i][t][k] * v[k] for k in range(d)) for t in range(lengths[i])]
              for i in range(n)]
    per = []
    for i in range(n):
        a = alpha[i]
        others = [scores[i][t] for t in range(lengths[i]) if t != a]
        best_other = max(others)
        per.append({"example": i, "alpha_token": a, "alpha_score": float(scores[i][a]),
                    "best_other_score": float(best_other), "score_gap": float(scores[i][a] - best_other),
                    "alpha_strictly_best": bool(scores[i][a] > best_other),
                    "on_decoder_margin": bool(scores[i][a] == 1)})
    support = v_reference.info.get("support_tight")
    return {"decoder_scores": [[float(s) for s in row] for row in scores], "per_example": per,
            "decoder_support_examples": [int(r[0]) for r in support] if support is not None else None,
            "decoder_vector_certified": bool(v_reference.certified),
            "note": "measured quantities; the geometric condition itself is not asserted"}
