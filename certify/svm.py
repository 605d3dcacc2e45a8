"""`certify_svm`: the certified attention-SVM / decoder-SVM pipeline (docs/theory.md section 4.5).

1. Canonicalize (exact p, exact integer rows, data hash). 2. Float warm start (smooth dual +
projected Newton; Clarabel fallback). 3. Mixed-precision Newton on the reduced dual system.
4. Exact/ball bounds and support classification; p = 2 also the exact rational KKT certificate.
Precision is raised (bits doubled) while the requested width is missed or a row is undecided.
If no rigorous enclosure results, feasibility is certified: infeasible problems get a Gordan
certificate (status INFEASIBLE), anything else is NO_VERIFIED_RESULT. Never a guess.
"""

from __future__ import annotations

import math
import time
from fractions import Fraction

import numpy as np

from certify.blas import single_thread_blas
from certify.bounds import Bounds, ball_bounds, exact_kkt_p2, make_feasible
from certify.certificate import Certificate, CertStatus, ExactVector
from certify.errors import MdcertError
from certify.exact import parse_p
from certify.feasible import constraint_system, feasibility_system
from certify.ops import ExactOps
from certify.problem import AttentionProblem, resolve_alpha
from certify.refine import refine
from certify.warmstart import warm_start

__all__ = ["certify_svm", "target_bits"]


#: float failures of the solver side (never of a proof): they end in NO_VERIFIED_RESULT, not a traceback
_NUMERIC = (FloatingPointError, ValueError, ZeroDivisionError, np.linalg.LinAlgError, OverflowError)


def target_bits(p: Fraction, digits: int) -> int:
    """Working bits so that width ~1e-digits and direction error ~1e-(digits/2) or better.

    The direction error scales like sqrt(gap) (p <= 2) or gap^(1/p) (p > 2), hence p*digits/2 gap
    digits for p > 2.
    """
    gap_digits = digits if p <= 2 else math.ceil(float(p) * digits / 2)
    return int(math.ceil(gap_digits * 3.33)) + 24


def _width_ok(b: Bounds, digits: int) -> bool:
    return b.opt_upper - b.opt_lower <= b.opt_lower * Fraction(1, 10 ** digits)


def _good(b: Bounds, digits: int) -> bool:
    return _width_ok(b, digits) and not b.support.undecided


def certify_svm(problem: AttentionProblem, p, *, svm: str = "attention", alpha=None, digits: int = 60,
                time_limit: float | None = None) -> Certificate:
    """Certified solution of the l_p attention SVM or decoder SVM (docs/theory.md sections 3-4).

    Args:
        problem: the data.
        p: exponent (exact: parsed with `parse_p`, "1.1" is 11/10).
        svm: "attention" (variable W, m = d^2) or "decoder" (variable v, m = d).
        alpha: token indices (None / "opt" / sequence / "0,3,1"); see `resolve_alpha`.
        digits: requested relative width ``(UB - LB)/LB <= 10**-digits`` of the OPT enclosure.
        time_limit: seconds after which no further precision increase is attempted.

    Returns:
        A `Certificate`: OPTIMAL (bounds proven), INFEASIBLE (Gordan certificate) or
        NO_VERIFIED_RESULT (nothing proven).
    """
    with single_thread_blas():  # small dense BLAS calls: a second spinning thread only costs time
        scaled = _rescaled(problem) if isinstance(problem, AttentionProblem) else None
        if scaled is None:
            return _certify_svm(problem, p, svm=svm, alpha=alpha, digits=digits, time_limit=time_limit)
        other, kx, kz = scaled
        a = resolve_alpha(problem, alpha)
        cert = _certify_svm(other, p, svm=svm, alpha=list(a), digits=digits, time_limit=time_limit)
        return _unscale(cert, problem, kx + (kz if svm == "attention" else 0), kx, kz)


def _rescaled(problem: AttentionProblem) -> tuple[AttentionProblem, int, int] | None:
    """``(problem with X * 2**kx and z * 2**kz, kx, kz)`` when the data's scale is extreme (1e150,
    subnormals) and the power-of-two scaling is exact; else None. A w >= 1 scales by 2**(kx + kz)."""
    def shift(a: np.ndarray) -> int:
        top = float(np.max(np.abs(a))) if a.size else 0.0
        return 0 if top == 0 else -math.frexp(top)[1]

    kx, kz = shift(problem.X), shift(problem.z)
    if abs(kx) <= 16 and abs(kz) <= 16:  # ordinary scales are solved as given
        return None
    X, z = np.ldexp(problem.X, kx), np.ldexp(problem.z, kz)
    if not (np.array_equal(np.ldexp(X, -kx), problem.X) and np.array_equal(np.ldexp(z, -kz), problem.z)):
        return None  # scaling would round some entry: solve the data as given
    return AttentionProblem(X, problem.y, z, problem.v, lengths=problem.lengths), kx, kz  # padding stays 0


def _unscale(cert: Certificate, problem: AttentionProblem, k: int, kx: int, kz: int) -> Certificate:
    """The certificate of the scaled rows ``A' = 2**k A`` as one about ``A``: ``w = 2**k w'``,
    ``OPT = 2**k OPT'``, the same ``lam`` (``2**(2k) lam'`` for the exact p = 2 KKT), the same
    Gordan vector, direction and Bregman bounds."""
    from dataclasses import replace

    c = Fraction(2) ** k
    mul = {f: getattr(cert, f) * c for f in ("opt_lower", "opt_upper", "distance_upper")
           if getattr(cert, f) is not None}
    w = None if cert.w is None else replace(cert.w, exp=cert.w.exp + k)
    lam = None if cert.lam is None else replace(cert.lam, exp=cert.lam.exp + (2 * k if cert.exact_kkt else 0))
    return replace(cert, data_hash=problem.data_hash(), w=w, lam=lam, info={**cert.info, "rescaled": [kx, kz]},
                   **mul)


def _certify_svm(problem, p, *, svm, alpha, digits, time_limit) -> Certificate:
    t0 = time.perf_counter()
    if not isinstance(problem, AttentionProblem):
        raise MdcertError(f"certify_svm needs an AttentionProblem, got {type(problem).__name__}")
    pf = parse_p(p)
    if isinstance(digits, bool) or not isinstance(digits, (int, np.integer)) or not 1 <= digits <= 2000:
        raise MdcertError(f"invalid digits {digits!r}; give an integer between 1 and 2000")
    digits = int(digits)
    a = resolve_alpha(problem, alpha)
    cs = constraint_system(problem, svm, a)
    base = dict(svm=svm, p=pf, alpha=a, data_hash=problem.data_hash(), d=cs.d, digits=digits)
    ops = ExactOps(cs)
    info: dict = {}

    def infeasible_or_unknown(reason: str) -> Certificate:
        try:
            feas = feasibility_system(cs)
        except _NUMERIC as exc:  # a float step failed (extreme data scale): nothing is claimed
            info.update(seconds=round(time.perf_counter() - t0, 4), reason=f"{reason}; feasibility: {exc}")
            return Certificate(status=CertStatus.NO_VERIFIED_RESULT, info=info, **base)
        info.update(feasibility=feas.method, seconds=round(time.perf_counter() - t0, 4), reason=reason)
        if feas.feasible is False:
            return Certificate(status=CertStatus.INFEASIBLE, gordan=feas.gordan_exact, info=info, **base)
        if feas.feasible:
            info["reason"] = reason + "; the SVM is feasible (proven), but no certified optimum was found"
        return Certificate(status=CertStatus.NO_VERIFIED_RESULT, info=info, **base)

    # a zero row (duplicated token) is infeasible outright
    if any(not any(ops.L[r]) or (ops.R is not None and not any(ops.R[r])) for r in range(ops.N)):
        return infeasible_or_unknown("zero constraint row")
    A = ops.float_rows()
    hess = None
    if cs.kind == "attention" and cs.m >= 2500:  # structured Hessian pays off only for large m
        Lf, Zf = ops.float_factors()

        def hess(D, F):
            return ops.hessian(D, F, Lf=Lf, Zf=Zf)
    try:
        ws = warm_start(A, float(pf), fallbacks=False, hess=hess)
        if not ws.kkt_residual < 1e-6:  # refine() finishes the active set from here
            # slow convergence is typical of infeasible or degenerate systems: settle feasibility first
            feas = feasibility_system(cs)
            if feas.feasible is False:
                info.update(feasibility=feas.method, seconds=round(time.perf_counter() - t0, 4))
                return Certificate(status=CertStatus.INFEASIBLE, gordan=feas.gordan_exact, info=info, **base)
            ws2 = warm_start(A, float(pf), hess=hess, previous=ws)
            ws = ws2 if ws2.kkt_residual < ws.kkt_residual else ws
    except _NUMERIC:
        return infeasible_or_unknown("warm start failed")
    info["warm_start"] = ws.method
    if not np.all(np.isfinite(ws.lam)) or not ws.kkt_residual < 1e-3:
        return infeasible_or_unknown(f"warm start did not converge (KKT residual {ws.kkt_residual:.1e})")
    bits = target_bits(pf, digits)
    best: Bounds | None = None
    for attempt in range(4):
        try:
            ref = refine(ops, pf, ws.lam, bits=bits)
            b = None
            if pf == 2 and len(ref.support) <= 64 and cs.m <= 4096:
                # exact rational KKT: denominators grow like |S| * 220 bits, so small supports only
                b = exact_kkt_p2(ops, ref.support, bits=bits, weights=ref.lam_ints)
            if b is None:
                w = make_feasible(ops, ref.w_ints, ref.w_exp, bits=bits)
                lam = ExactVector.from_dyadic(ref.lam_ints, ref.lam_exp)
                if w is not None and any(ref.lam_ints) and min(ref.lam_ints) >= 0:
                    b = ball_bounds(ops, pf, w, lam, bits=bits)
        except _NUMERIC as exc:  # a float step of the refinement failed: keep what is proven so far
            info["refine_error"] = str(exc)
            break
        if b is not None and (best is None or _score(b) > _score(best)):
            best = b
        resid = float(ref.residual)
        info.update(bits=bits, refine_iterations=ref.iterations, active_set=len(ref.support),
                    refine_residual=resid if math.isfinite(resid) else None,  # strict JSON: no Infinity
                    refine_residual_log2=ref.residual_log2 if math.isfinite(ref.residual_log2) else None)
        if best is not None and _good(best, digits):
            break
        if b is not None and b.singular and _width_ok(b, digits):
            break  # A_S' A_S'^T is singular (dependent rows): more precision decides nothing
        if time_limit is not None and time.perf_counter() - t0 > time_limit / 3:
            break
        bits *= 2
    if best is None:
        return infeasible_or_unknown("refinement did not yield a rigorous enclosure")
    info["seconds"] = round(time.perf_counter() - t0, 4)
    info["requested_width_reached"] = _width_ok(best, digits)
    return Certificate(status=CertStatus.OPTIMAL, opt_lower=best.opt_lower, opt_upper=best.opt_upper,
                       distance_upper=best.distance_upper, direction_error_upper=best.direction_error_upper,
                       bregman_upper=best.bregman_upper, support=best.support, w=best.w, lam=best.lam,
                       exact_kkt=best.exact_kkt, info=info, **base)


def _score(b: Bounds) -> tuple[int, Fraction]:
    return (-len(b.support.undecided), -(b.opt_upper - b.opt_lower) / b.opt_lower)
