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
from certify.certificate import Certificate, CertStatus
from certify.errors import MdcertError
from certify.exact import parse_p
from certify.feasible import constraint_system
from certify.problem import AttentionProblem, resolve_alpha
from certify.solve import solve, target_bits

__all__ = ["certify_svm", "certify_system", "target_bits", "DENSE_ENTRIES", "PATHS"]

#: attention systems with more than this many entries N * d^2 take the structured path under "auto"
DENSE_ENTRIES = 1 << 20
#: warm-start paths: "auto" (by size), "dense" (N x m rows, N x N Hessians), "working-set" (structured)
PATHS = ("auto", "dense", "working-set")


def certify_svm(
    problem: AttentionProblem,
    p,
    *,
    svm: str = "attention",
    alpha=None,
    digits: int = 60,
    time_limit: float | None = None,
    memory_budget: int | None = None,
    path: str = "auto",
    progress=None,
) -> Certificate:
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
    if memory_budget is not None and (
        isinstance(memory_budget, bool)
        or not isinstance(memory_budget, (int, np.integer))
        or memory_budget <= 0
    ):
        raise MdcertError(
            f"invalid memory_budget {memory_budget!r}; give a positive number of bytes"
        )
    opts = dict(
        svm=svm,
        digits=digits,
        time_limit=time_limit,
        memory_budget=memory_budget,
        path=path,
        progress=progress,
    )
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
    if not (
        np.array_equal(np.ldexp(X, -kx), problem.X) and np.array_equal(np.ldexp(z, -kz), problem.z)
    ):
        return None  # scaling would round some entry: solve the data as given
    return (
        AttentionProblem(X, problem.y, z, problem.v, lengths=problem.lengths),
        kx,
        kz,
    )  # padding stays 0


def _unscale(cert: Certificate, problem: AttentionProblem, k: int, kx: int, kz: int) -> Certificate:
    """The certificate of the scaled rows ``A' = 2**k A`` as one about ``A``: ``w = 2**k w'``,
    ``OPT = 2**k OPT'``, the same ``lam`` (``2**(2k) lam'`` for the exact p = 2 KKT), the same
    Gordan vector, direction and Bregman bounds."""
    from dataclasses import replace

    c = Fraction(2) ** k
    mul = {
        f: getattr(cert, f) * c
        for f in ("opt_lower", "opt_upper", "distance_upper")
        if getattr(cert, f) is not None
    }
    w = None if cert.w is None else replace(cert.w, exp=cert.w.exp + k)
    lam = (
        None
        if cert.lam is None
        else replace(cert.lam, exp=cert.lam.exp + (2 * k if cert.exact_kkt else 0))
    )
    return replace(
        cert,
        data_hash=problem.data_hash(),
        w=w,
        lam=lam,
        info={**cert.info, "rescaled": [kx, kz]},
        **mul,
    )


def _structured(problem: AttentionProblem, svm: str, path: str) -> tuple[bool, int]:
    """(take the structured path?, number of rows N) from the sizes alone."""
    N = int(np.sum(problem.valid_lengths - 1)) if svm == "attention" else problem.n
    m = problem.d**2 if svm == "attention" else problem.d
    return svm == "attention" and (
        path == "working-set" or (path == "auto" and N * m > DENSE_ENTRIES)
    ), N


def _certify_svm(
    problem, p, *, svm, alpha, digits, time_limit, memory_budget, path, progress
) -> Certificate:
    if not isinstance(problem, AttentionProblem):
        raise MdcertError(f"certify_svm needs an AttentionProblem, got {type(problem).__name__}")
    parse_p(p)
    _check_digits(digits)
    a = resolve_alpha(problem, alpha)
    if svm not in ("attention", "decoder"):
        constraint_system(problem, svm, a)  # the one error message for an unknown svm
    structured, N = _structured(problem, svm, path)
    m = problem.d**2 if svm == "attention" else problem.d
    need = solve_bytes(N=N, d=problem.d, m=m, n=problem.n, T=problem.T, structured=structured)
    return certify_system(
        lambda: constraint_system(problem, svm, a),
        p,
        svm=svm,
        alpha=a,
        data_hash=problem.data_hash(),
        d=problem.d,
        N=N,
        m=m,
        need=need,
        structured=structured,
        digits=digits,
        time_limit=time_limit,
        memory_budget=memory_budget,
        progress=progress,
    )


def _check_digits(digits) -> int:
    if (
        isinstance(digits, bool)
        or not isinstance(digits, (int, np.integer))
        or not 1 <= digits <= 2000
    ):
        raise MdcertError(f"invalid digits {digits!r}; give an integer between 1 and 2000")
    return int(digits)


def certify_system(
    build,
    p,
    *,
    svm: str,
    data_hash: str,
    d: int,
    N: int,
    m: int,
    need: int,
    alpha=(),
    structured: bool = True,
    digits: int = 60,
    time_limit: float | None = None,
    memory_budget: int | None = None,
    progress=None,
    sample: bool = False,
) -> Certificate:
    """The certified pipeline on one system of N rows and m variables (docs/theory.md sections 4.5, 7).

    ``build()`` returns the exact `ConstraintSystem` (called after the memory check). The other
    arguments name the certificate (``svm``, ``alpha``, ``data_hash``, ``d``) and size the solve:
    ``structured`` takes the working-set warm start (memory O(N m) for the rows, never N x N);
    ``need`` is the estimated peak bytes (`certify.budget.solve_bytes`); ``sample``: the working set
    starts from a sample of the rows (`certify.workingset.working_set_start`; binary classification
    rows). See `certify_svm` for the rest."""
    t0 = time.perf_counter()
    pf = parse_p(p)
    digits = _check_digits(digits)
    progress = progress if progress is not None else _no_progress
    budget = default_budget() if memory_budget is None else int(memory_budget)
    base = dict(svm=svm, p=pf, alpha=tuple(alpha), data_hash=data_hash, d=d, digits=digits)
    if need > budget:
        return Certificate(
            status=CertStatus.NO_VERIFIED_RESULT,
            **base,
            info={
                "reason": f"too large for the memory budget: N = {N} rows x {m} variables needs about "
                f"{format_bytes(need)}, the budget is {format_bytes(budget)}; raise memory_budget "
                f"(mdcert certify --memory-budget) or certify fewer examples",
                "memory_estimate_bytes": need,
                "memory_budget_bytes": budget,
            },
        )
    try:
        return solve(
            build(),
            pf,
            base,
            digits=digits,
            time_limit=time_limit,
            t0=t0,
            structured=structured,
            budget=budget,
            need=need,
            progress=progress,
            sample=sample,
        )
    except MemoryError:
        return Certificate(
            status=CertStatus.NO_VERIFIED_RESULT,
            **base,
            info={
                "reason": f"ran out of memory (N = {N} rows x {m} variables, estimate {format_bytes(need)}, "
                f"budget {format_bytes(budget)}); lower memory_budget to what is free, or certify fewer examples",
                "memory_estimate_bytes": need,
                "memory_budget_bytes": budget,
                "seconds": round(time.perf_counter() - t0, 4),
            },
        )
