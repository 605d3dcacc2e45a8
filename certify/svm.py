"""`certify_svm`: the certified attention-SVM / decoder-SVM pipeline (docs/theory.md section 4.5).

1. Canonicalize (exact p, exact integer rows, data hash). 2. Float warm start (smooth dual +
projected Newton; Clarabel fallback). 3. Mixed-precision Newton on the reduced dual system.
4. Exact/ball bounds and support classification; p = 2 also the exact rational KKT certificate.
Constraint-heavy attention systems (N d^2 beyond `DENSE_ENTRIES`) take the structured path: no
N x d^2 or N x N matrix, a working set of rows (`certify.workingset`); the memory a solve needs is
estimated first (`certify.budget`) and a solve over the budget, or one that runs out of memory,
is NO_VERIFIED_RESULT with the reason in ``info``.
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
from certify.budget import solve_bytes
from certify.memory import default_budget, format_bytes
from certify.bounds import Bounds, ball_bounds, exact_kkt_p2, make_feasible
from certify.certificate import Certificate, CertStatus, ExactVector
from certify.errors import MdcertError
from certify.exact import parse_p
from certify.feasible import FeasibilityResult, constraint_system, feasibility_system
from certify.gordan import near_gordan
from certify.ops import ExactOps
from certify.problem import AttentionProblem, resolve_alpha
from certify.refine import refine
from certify.structured import row_factors
from certify.warmstart import warm_start
from certify.workingset import working_set_bytes, working_set_start

__all__ = ["certify_svm", "certify_system", "target_bits", "DENSE_ENTRIES", "PATHS"]

#: attention systems with more than this many entries N * d^2 take the structured path under "auto"
DENSE_ENTRIES = 1 << 20
#: warm-start paths: "auto" (by size), "dense" (N x m rows, N x N Hessians), "working-set" (structured)
PATHS = ("auto", "dense", "working-set")


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
                time_limit: float | None = None, memory_budget: int | None = None,
                path: str = "auto", progress=None) -> Certificate:
    """Certified solution of the l_p attention SVM or decoder SVM (docs/theory.md sections 3-4).

    Args:
        problem: the data.
        p: exponent (exact: parsed with `parse_p`, "1.1" is 11/10).
        svm: "attention" (variable W, m = d^2) or "decoder" (variable v, m = d).
        alpha: token indices (None / "opt" / sequence / "0,3,1"); see `resolve_alpha`.
        digits: requested relative width ``(UB - LB)/LB <= 10**-digits`` of the OPT enclosure.
        time_limit: seconds after which no further precision increase is attempted.
        memory_budget: bytes the solve may use (default: 80% of the available memory, see
            `certify.memory.default_budget`); a larger estimated need gives NO_VERIFIED_RESULT.
        path: warm start, one of `PATHS`; "auto" takes "working-set" for attention systems with
            more than `DENSE_ENTRIES` entries. Both give certificates with the same claims.
        progress: optional callable ``progress(fraction, stage)`` told the estimated fraction of the
            work done (0..1, from the bits the refinement has reached) and what runs now.

    Returns:
        A `Certificate`: OPTIMAL (bounds proven), INFEASIBLE (Gordan certificate) or
        NO_VERIFIED_RESULT (nothing proven).
    """
    if path not in PATHS:
        raise MdcertError(f"invalid path {path!r}; use one of {', '.join(PATHS)}")
    if memory_budget is not None and (isinstance(memory_budget, bool) or not isinstance(memory_budget, (int, np.integer))
                                      or memory_budget <= 0):
        raise MdcertError(f"invalid memory_budget {memory_budget!r}; give a positive number of bytes")
    opts = dict(svm=svm, digits=digits, time_limit=time_limit, memory_budget=memory_budget, path=path,
                progress=progress)
    with single_thread_blas():  # small dense BLAS calls: a second spinning thread only costs time
        scaled = _rescaled(problem) if isinstance(problem, AttentionProblem) else None
        if scaled is None:
            return _certify_svm(problem, p, alpha=alpha, **opts)
        other, kx, kz = scaled
        a = resolve_alpha(problem, alpha)
        cert = _certify_svm(other, p, alpha=list(a), **opts)
        return _unscale(cert, problem, kx + (kz if svm == "attention" else 0), kx, kz)


def _no_progress(fraction: float, stage: str) -> None:
    return None


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


def _structured(problem: AttentionProblem, svm: str, path: str) -> tuple[bool, int]:
    """(take the structured path?, number of rows N) from the sizes alone."""
    N = int(np.sum(problem.valid_lengths - 1)) if svm == "attention" else problem.n
    m = problem.d ** 2 if svm == "attention" else problem.d
    return svm == "attention" and (path == "working-set" or (path == "auto" and N * m > DENSE_ENTRIES)), N


def _certify_svm(problem, p, *, svm, alpha, digits, time_limit, memory_budget, path, progress) -> Certificate:
    if not isinstance(problem, AttentionProblem):
        raise MdcertError(f"certify_svm needs an AttentionProblem, got {type(problem).__name__}")
    parse_p(p)
    _check_digits(digits)
    a = resolve_alpha(problem, alpha)
    if svm not in ("attention", "decoder"):
        constraint_system(problem, svm, a)  # the one error message for an unknown svm
    structured, N = _structured(problem, svm, path)
    m = problem.d ** 2 if svm == "attention" else problem.d
    need = solve_bytes(N=N, d=problem.d, m=m, n=problem.n, T=problem.T, structured=structured)
    return certify_system(lambda: constraint_system(problem, svm, a), p, svm=svm, alpha=a,
                          data_hash=problem.data_hash(), d=problem.d, N=N, m=m, need=need,
                          structured=structured, digits=digits, time_limit=time_limit,
                          memory_budget=memory_budget, progress=progress)


def _check_digits(digits) -> int:
    if isinstance(digits, bool) or not isinstance(digits, (int, np.integer)) or not 1 <= digits <= 2000:
        raise MdcertError(f"invalid digits {digits!r}; give an integer between 1 and 2000")
    return int(digits)


def certify_system(build, p, *, svm: str, data_hash: str, d: int, N: int, m: int, need: int, alpha=(),
                   structured: bool = True, digits: int = 60,
                   time_limit: float | None = None, memory_budget: int | None = None,
                   progress=None) -> Certificate:
    """The certified pipeline on one system of N rows and m variables (docs/theory.md sections 4.5, 7).

    ``build()`` returns the exact `ConstraintSystem` (called after the memory check). The other
    arguments name the certificate (``svm``, ``alpha``, ``data_hash``, ``d``) and size the solve:
    ``structured`` takes the working-set warm start (memory O(N m) for the rows, never N x N);
    ``need`` is the estimated peak bytes (`certify.budget.solve_bytes`). See `certify_svm` for the rest."""
    t0 = time.perf_counter()
    pf = parse_p(p)
    digits = _check_digits(digits)
    progress = progress if progress is not None else _no_progress
    budget = default_budget() if memory_budget is None else int(memory_budget)
    base = dict(svm=svm, p=pf, alpha=tuple(alpha), data_hash=data_hash, d=d, digits=digits)
    if need > budget:
        return Certificate(status=CertStatus.NO_VERIFIED_RESULT, **base, info={
            "reason": f"too large for the memory budget: N = {N} rows x {m} variables needs about "
                      f"{format_bytes(need)}, the budget is {format_bytes(budget)}; raise memory_budget "
                      f"(mdcert certify --memory-budget) or certify fewer examples",
            "memory_estimate_bytes": need, "memory_budget_bytes": budget})
    try:
        return _solve(build(), pf, base, digits=digits, time_limit=time_limit, t0=t0,
                      structured=structured, budget=budget, need=need, progress=progress)
    except MemoryError:
        return Certificate(status=CertStatus.NO_VERIFIED_RESULT, **base, info={
            "reason": f"ran out of memory (N = {N} rows x {m} variables, estimate {format_bytes(need)}, "
                      f"budget {format_bytes(budget)}); lower memory_budget to what is free, or certify fewer examples",
            "memory_estimate_bytes": need, "memory_budget_bytes": budget,
            "seconds": round(time.perf_counter() - t0, 4)})


def _solve(cs, pf, base, *, digits, time_limit, t0, structured, budget, need, progress) -> Certificate:
    progress(0.0, "warm start")
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
    zero = ~np.asarray(cs.left.ints != 0).any(axis=1) if cs.N else np.zeros(0, dtype=bool)
    if cs.right is not None and cs.N:
        zero |= ~np.asarray(cs.right.ints != 0).any(axis=1)
    if zero.any():
        return infeasible_or_unknown("zero constraint row")
    if structured:
        rf = row_factors(cs)
        ws_budget = max(budget - need + working_set_bytes(min(cs.N, cs.m), cs.m), budget // 4)
        try:
            ws, rep = working_set_start(rf, float(pf), budget_bytes=ws_budget)
        except _NUMERIC:
            return infeasible_or_unknown("warm start failed")
        info["warm_start"] = ws.method
        info["working_set"] = {"rows": rep.rows, "rounds": rep.rounds, "lbfgs_iterations": rep.lbfgs_iterations}
        if not ws.kkt_residual < 1e-6:
            ng, source = (near_gordan(cs, ws.lam) if rep.diverged else None), "dual"
            if ng is None and pf != 2:
                # feasibility does not depend on p, and the p = 2 dual diverges where a p near 1 stalls
                # (measured: (500,32,32) at p = 1.1); any Gordan vector is re-proved exactly
                try:
                    ws2, rep2 = working_set_start(rf, 2.0, budget_bytes=ws_budget)
                    ng, source = (near_gordan(cs, ws2.lam) if rep2.diverged else None), "p = 2 dual"
                except _NUMERIC:
                    pass
            if ng is not None:
                info.update(feasibility=f"near-Gordan vector from the diverging {source}, correction on a basis "
                                        "verified with exact integer products", seconds=round(time.perf_counter() - t0, 4))
                return Certificate(status=CertStatus.INFEASIBLE, gordan=ng[0], gordan_basis=ng[1], info=info, **base)
            return infeasible_or_unknown(f"structured warm start: {ws.method}")
    else:
        try:
            ws = _dense_warm(cs, ops, pf)
        except _NUMERIC:
            return infeasible_or_unknown("warm start failed")
        if isinstance(ws, FeasibilityResult):  # proven infeasible on the way
            info.update(feasibility=ws.method, seconds=round(time.perf_counter() - t0, 4))
            return Certificate(status=CertStatus.INFEASIBLE, gordan=ws.gordan_exact, info=info, **base)
    info["warm_start"] = ws.method
    if not np.all(np.isfinite(ws.lam)) or not ws.kkt_residual < 1e-3:
        return infeasible_or_unknown(f"warm start did not converge (KKT residual {ws.kkt_residual:.1e})")
    bits = target_bits(pf, digits)
    best: Bounds | None = None
    for attempt in range(4):
        def reached(lg: float, bits=bits, attempt=attempt) -> None:  # the warm start is about 10% of the work
            progress(0.1 + 0.8 * min(1.0, max(0.0, -lg / bits)), f"refine to {bits} bits (attempt {attempt + 1})")
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


def _dense_warm(cs, ops: ExactOps, pf: Fraction):
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


def _score(b: Bounds) -> tuple[int, Fraction]:
    return (-len(b.support.undecided), -(b.opt_upper - b.opt_lower) / b.opt_lower)
