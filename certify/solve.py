"""One certified solve of an exact constraint system (`certify.svm.certify_system`; docs/theory.md
section 4.5): the dense or working-set warm start, refinement at rising precision until the bounds
reach the digits asked for, and the certificate of the best bounds found."""

from __future__ import annotations

import math
import time
from fractions import Fraction

import numpy as np

from certify.bounds import Bounds, ball_bounds, exact_kkt_p2, make_feasible
from certify.certificate import Certificate, CertStatus, ExactVector
from certify.feasible import FeasibilityResult, feasibility_system
from certify.gordan import near_gordan
from certify.ops import ExactOps
from certify.refine import refine
from certify.structured import row_factors
from certify.warmstart import warm_start
from certify.workingset import working_set_bytes, working_set_start

__all__ = [
    "NUMERIC",
    "RESCUE_ENTRIES",
    "clarabel_rescue",
    "dense_warm",
    "good",
    "next_bits",
    "score",
    "solve",
    "target_bits",
    "width_ok",
    "ws_span",
]


#: float failures of the solver side (never of a proof): they end in NO_VERIFIED_RESULT, not a traceback
NUMERIC = (FloatingPointError, ValueError, ZeroDivisionError, np.linalg.LinAlgError, OverflowError)


def target_bits(p: Fraction, digits: int) -> int:
    """Working bits so that width ~1e-digits and direction error ~1e-(digits/2) or better.

    The direction error scales like sqrt(gap) (p <= 2) or gap^(1/p) (p > 2), hence p*digits/2 gap
    digits for p > 2.
    """
    gap_digits = digits if p <= 2 else math.ceil(float(p) * digits / 2)
    return int(math.ceil(gap_digits * 3.33)) + 24


def width_ok(b: Bounds, digits: int) -> bool:
    return b.opt_upper - b.opt_lower <= b.opt_lower * Fraction(1, 10**digits)


def good(b: Bounds, digits: int) -> bool:
    return width_ok(b, digits) and not b.support.undecided


def next_bits(bits: int, b: Bounds | None, p: Fraction, digits: int) -> int:
    """The working bits of the next refinement after ``b`` fell short at ``bits``.

    When the width was reached and the undecided rows all carry a multiplier, ``b.short_log2``
    says by how much the dual error must shrink to prove them tight; the dual error scales like
    ``gap^(1/q)`` (p <= 2) or ``gap^(1/2)`` (p > 2, docs/theory.md section 4, "Support
    classification") and the gap like ``2^-bits``, so ``k (short + 2)`` more bits (``k`` = q or 2)
    leave a factor 4 to spare; within [1.25, 4] times ``bits``. Otherwise twice ``bits``. (p =
    1.1 at (10^4,32,64): 124 -> 248 -> 496 bits by doubling, three refinements and three
    classifications where two would do.)"""
    short = None if b is None else b.short_log2
    if short is None or not width_ok(b, digits) or not math.isfinite(short):
        return 2 * bits
    k = float(p / (p - 1)) if p <= 2 else 2.0
    want = bits + k * (max(short, 0.0) + 2.0)
    return int(min(4 * bits, max(math.ceil(1.25 * bits), math.ceil(want))))


def solve(
    cs, pf, base, *, digits, time_limit, t0, structured, budget, need, progress, sample=False
) -> Certificate:
    progress(0.0, "warm start")
    ops = ExactOps(cs)
    info: dict = {}

    def infeasible_or_unknown(reason: str) -> Certificate:
        try:
            feas = feasibility_system(cs)
        except NUMERIC as exc:  # a float step failed (extreme data scale): nothing is claimed
            info.update(
                seconds=round(time.perf_counter() - t0, 4), reason=f"{reason}; feasibility: {exc}"
            )
            return Certificate(status=CertStatus.NO_VERIFIED_RESULT, info=info, **base)
        info.update(
            feasibility=feas.method, seconds=round(time.perf_counter() - t0, 4), reason=reason
        )
        if feas.feasible is False:
            return Certificate(
                status=CertStatus.INFEASIBLE, gordan=feas.gordan_exact, info=info, **base
            )
        if feas.feasible:
            info["reason"] = (
                reason + "; the SVM is feasible (proven), but no certified optimum was found"
            )
        return Certificate(status=CertStatus.NO_VERIFIED_RESULT, info=info, **base)

    # a zero row (duplicated token) is infeasible outright
    zero = ~np.asarray(cs.left.ints != 0).any(axis=1) if cs.N else np.zeros(0, dtype=bool)
    if cs.right is not None and cs.N:
        zero |= ~np.asarray(cs.right.ints != 0).any(axis=1)
    if zero.any():
        return infeasible_or_unknown("zero constraint row")
    if structured:
        rf = row_factors(cs)
        ws_budget = max(budget - need + working_set_bytes(min(cs.N, cs.m), cs.m), budget // 4)
        try:
            ws, rep = working_set_start(rf, float(pf), budget_bytes=ws_budget, sample=sample)
        except NUMERIC:
            return infeasible_or_unknown("warm start failed")
        info["warm_start"] = ws.method
        info["working_set"] = {
            "rows": rep.rows,
            "rounds": rep.rounds,
            "lbfgs_iterations": rep.lbfgs_iterations,
        }
        if rep.diverged or not ws.kkt_residual < 1e-3:
            # (a residual in [1e-6, 1e-3), e.g. p = 3 next to a zero column of text features where
            # the dual has a cusp, goes on to the exact refinement, as on the dense path)
            ng, source = (near_gordan(cs, ws.lam) if rep.diverged else None), "dual"
            if ng is None and pf != 2:
                # feasibility does not depend on p, and the p = 2 dual diverges where a p near 1 stalls
                # (measured: (500,32,32) at p = 1.1); any Gordan vector is re-proved exactly
                try:
                    ws2, rep2 = working_set_start(rf, 2.0, budget_bytes=ws_budget)
                    ng, source = (near_gordan(cs, ws2.lam) if rep2.diverged else None), "p = 2 dual"
                except NUMERIC:
                    pass
            if ng is not None:
                info.update(
                    feasibility=f"near-Gordan vector from the diverging {source}, correction on a basis "
                    "verified with exact integer products",
                    seconds=round(time.perf_counter() - t0, 4),
                )
                return Certificate(
                    status=CertStatus.INFEASIBLE,
                    gordan=ng[0],
                    gordan_basis=ng[1],
                    info=info,
                    **base,
                )
            alt = None if rep.diverged else clarabel_rescue(rf, pf)
            if alt is None:
                return infeasible_or_unknown(f"structured warm start: {ws.method}")
            info["warm_start_failed"] = ws.method
            ws = alt
    else:
        try:
            ws = dense_warm(cs, ops, pf)
        except NUMERIC:
            return infeasible_or_unknown("warm start failed")
        if isinstance(ws, FeasibilityResult):  # proven infeasible on the way
            info.update(feasibility=ws.method, seconds=round(time.perf_counter() - t0, 4))
            return Certificate(
                status=CertStatus.INFEASIBLE, gordan=ws.gordan_exact, info=info, **base
            )
    info["warm_start"] = ws.method
    rescued = "warm_start_failed" in info  # Clarabel's multipliers: the refinement judges them
    if not np.all(np.isfinite(ws.lam)) or not (ws.kkt_residual < 1e-3 or rescued):
        return infeasible_or_unknown(
            f"warm start did not converge (KKT residual {ws.kkt_residual:.1e})"
        )
    bits = target_bits(pf, digits)
    best: Bounds | None = None
    for attempt in range(4):

        def reached(
            lg: float, bits=bits, attempt=attempt
        ) -> None:  # the warm start is about 10% of the work
            progress(
                0.1 + 0.8 * min(1.0, max(0.0, -lg / bits)),
                f"refine to {bits} bits (attempt {attempt + 1})",
            )

        try:
            ref = refine(ops, pf, ws.lam, bits=bits, progress=reached)
            progress(0.9, "exact bounds")
            b = None
            if pf == 2 and len(ref.support) <= 64 and cs.m <= 4096:
                # exact rational KKT: denominators grow like |S| * 220 bits, so small supports only
                b = exact_kkt_p2(ops, ref.support, bits=bits, weights=ref.lam_ints)
            if b is None:
                w = make_feasible(ops, ref.w_ints, ref.w_exp, bits=bits)
                lam = ExactVector.from_dyadic(ref.lam_ints, ref.lam_exp)
                if w is not None and any(ref.lam_ints) and min(ref.lam_ints) >= 0:
                    b = ball_bounds(ops, pf, w, lam, bits=bits)
        except NUMERIC as exc:  # a float step of the refinement failed: keep what is proven so far
            info["refine_error"] = str(exc)
            break
        if b is not None and (best is None or score(b) > score(best)):
            best = b
        resid = float(ref.residual)
        info.update(
            bits=bits,
            refine_iterations=ref.iterations,
            active_set=len(ref.support),
            refine_residual=resid if math.isfinite(resid) else None,  # strict JSON: no Infinity
            refine_residual_log2=ref.residual_log2 if math.isfinite(ref.residual_log2) else None,
        )
        if best is not None and good(best, digits):
            break
        if b is not None and b.singular and width_ok(b, digits):
            break  # A_S' A_S'^T is singular (dependent rows): more precision decides nothing
        if rescued and b is None and not ref.residual_log2 < 0:
            break  # the refinement diverged from Clarabel's multipliers: more bits will not help
        if time_limit is not None and time.perf_counter() - t0 > time_limit / 3:
            break
        bits = next_bits(bits, b, pf, digits)
    if best is None:
        why = "refinement did not yield a rigorous enclosure"
        if "warm_start_failed" in info:
            why = (
                f"structured warm start: {info['warm_start_failed']}; the exact refinement from "
                f"{ws.method} did not converge either (residual 2^"
                f"{info.get('refine_residual_log2') or 'inf'} after {info.get('refine_iterations')}"
                f" steps){ws_span(ws, pf)}"
            )
        return infeasible_or_unknown(why)
    info["seconds"] = round(time.perf_counter() - t0, 4)
    info["requested_width_reached"] = width_ok(best, digits)
    return Certificate(
        status=CertStatus.OPTIMAL,
        opt_lower=best.opt_lower,
        opt_upper=best.opt_upper,
        distance_upper=best.distance_upper,
        direction_error_upper=best.direction_error_upper,
        bregman_upper=best.bregman_upper,
        support=best.support,
        w=best.w,
        lam=best.lam,
        exact_kkt=best.exact_kkt,
        info=info,
        **base,
    )


def dense_warm(cs, ops: ExactOps, pf: Fraction):
    """The dense warm start (N x m float rows): a `WarmStart`, or the `FeasibilityResult` that
    proved the system infeasible when Newton converged too slowly."""
    A = ops.float_rows()
    hess = None
    if cs.kind == "attention" and cs.m >= 2500:  # structured Hessian pays off only for large m
        Lf, Zf = ops.float_factors()

        def hess(D, F):
            return ops.hessian(D, F, Lf=Lf, Zf=Zf)

    ws = warm_start(A, float(pf), fallbacks=False, hess=hess)
    if not ws.kkt_residual < 1e-6:  # refine() finishes the active set from here
        # slow convergence is typical of infeasible or degenerate systems: settle feasibility first
        feas = feasibility_system(cs)
        if feas.feasible is False:
            return feas
        ws2 = warm_start(A, float(pf), hess=hess, previous=ws)
        ws = ws2 if ws2.kkt_residual < ws.kkt_residual else ws
    return ws


def score(b: Bounds) -> tuple[int, Fraction]:
    return (-len(b.support.undecided), -(b.opt_upper - b.opt_lower) / b.opt_lower)


#: a failed structured warm start is retried by Clarabel on the full rows up to this many entries N m
RESCUE_ENTRIES = 2_000_000


def clarabel_rescue(rf, pf: Fraction):
    """A `WarmStart` from cvxpy + Clarabel on all rows (docs/theory.md section 7.4), for small systems
    whose working-set Newton did not converge; None when too large or when Clarabel fails. Extreme
    p (1.1, 10 on network features): the float64 psi-form dual stalls, but the exact refinement
    converges from Clarabel's multipliers at p = 1.1 (their float KKT residual is large all the
    same). Never evidence: the refinement and the bounds decide."""
    from certify.warmstart import WarmStart, clarabel_start

    if rf.right is not None or rf.N * rf.m > RESCUE_ENTRIES:
        return None
    A = rf.left
    sigma = float(np.median(np.linalg.norm(A, axis=1)))
    if not (sigma > 0 and math.isfinite(sigma)):
        return None
    p = float(pf)
    lam = clarabel_start(A / sigma, p)
    if lam is None or not np.all(np.isfinite(lam)) or not lam.any():
        return None
    # interior-point multipliers are positive everywhere: keep the rows above the widest gap (in
    # log scale) among the largest 2m; the refinement's active-set updates add missed rows
    r = np.sort(lam)[::-1][: 2 * rf.m + 1]
    r = r[r > 1e-14 * r[0]]
    if r.size > 1:
        k = int(np.argmax(np.log(r[:-1]) - np.log(r[1:])))
        lam = np.where(lam >= r[k], lam, 0.0)
    lam = lam / sigma**p
    q = p / (p - 1.0)
    with np.errstate(over="ignore", invalid="ignore"):
        u = A.T @ lam
        w = np.sign(u) * np.abs(u) ** (q - 1.0)
    return WarmStart(lam, w, "cvxpy + Clarabel multipliers", math.inf)


def ws_span(ws, pf: Fraction) -> str:
    """Why float64 cannot settle it at p > 2, when that is the reason: ``w = phi(u) = |u|^(1/(p-1))``
    of ``u = A^T lam`` is resolved only to ``(1e-16)^(1/(p-1))`` of its largest entry (products
    cancel to about 1e-16 of the largest term), and the float estimate has entries of u far below
    that noise (docs/theory.md section 7.4)."""
    if pf <= 2:
        return ""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        w = np.abs(np.asarray(ws.w, dtype=np.float64))
        if not w.size or not np.all(np.isfinite(w)) or not w.max() > 0:
            return ""
        u = (w / w.max()) ** (float(pf) - 1.0)
        small = float(np.mean((u > 0) & (u < 1e-8)))
    if small <= 0:
        return ""
    res = 1e-16 ** (1.0 / (float(pf) - 1.0))
    return (
        f"; at p = {pf} float64 resolves w = |u|^(1/(p-1)) of u = A^T lam only to about {res:.0e} "
        f"of its largest entry, and {100 * small:.0f}% of the entries of u lie below 1e-8 of the "
        f"largest (float64 Newton steps cannot follow them)"
    )
