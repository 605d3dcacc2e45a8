"""A primal-dual interior point for ``min (1/p)||w||_p^p s.t. A w >= 1`` at p > 2, on the dense rows
of a working set (docs/theory.md section 4.5). A float proposal only, never evidence.

Why the primal at p > 2: the psi-form dual of `certify.warmstart` has the exponent q < 2, whose
curvature ``|u|^(q-2)`` is infinite where an entry of ``u = A^T lam`` vanishes, and its Newton
matrix ``A_F D A_F^T`` (|F| x |F|, rank <= m) is singular once more than m rows are free. The
primal objective is twice differentiable for p >= 2 (Hessian ``(p-1)|w|^(p-2)``), and the normal
matrix of a primal-dual interior point, ``H + A^T diag(lam / s) A``, is m x m whatever the number
of rows: a working set may hold twice as many rows as the support, so that one solve finds it.

Mehrotra's predictor-corrector on the perturbed KKT system

    grad f(w) - A^T lam = 0,   A w - s - 1 = 0,   s * lam = sigma mu,   s, lam > 0,

with the normal equations ``(H + A^T D A) dw = ...``, ``D = lam / s``. Rows whose weight ``D_i``
is below 1e-13 of the largest leave the product ``A^T D A`` (an inexact Newton matrix: far from
active rows, ``D_i ~ mu / s_i^2``, are negligible next to active ones, ``~ lam_i^2 / mu``), which
makes late iterations cost ``|active| m^2`` instead of ``|W| m^2`` (constraint reduction). The
multiplier ``lam`` at the end is the psi-form dual of `certify.warmstart` (stationarity
``sign(w)|w|^(p-1) = A^T lam``), with the rows of ``s > lam`` (strict complementarity says:
inactive) set to 0.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from certify.blas import row_gram
from certify.firststage import ones_start, phi
from certify.warmstart import kkt_residual

__all__ = [
    "InteriorResult",
    "interior_point",
    "active_newton",
    "primal_round",
    "interior_bytes",
]


class InteriorResult(NamedTuple):
    """Multipliers (zero on the rows judged inactive), the primal iterate, how it ended."""

    lam: np.ndarray
    w: np.ndarray
    iterations: int
    converged: bool
    mu: float  # the last complementarity gap s^T lam / |W|


def _normal_matrix(A: np.ndarray, D: np.ndarray, h: np.ndarray) -> np.ndarray:
    """``diag(h) + A^T diag(D) A`` over the rows with a weight above 1e-13 of the largest (dsyrk)."""
    from scipy.linalg.blas import dsyrk

    keep = D > 1e-13 * float(D.max())
    X = A[keep] * np.sqrt(D[keep])[:, None]
    M = dsyrk(1.0, X.T, trans=0)  # upper triangle of X^T X (X.T is Fortran-ordered: no copy)
    M[np.diag_indices_from(M)] += h
    return M


def _factor(M: np.ndarray):
    """Cholesky factor of the normal matrix; near the end the active rows' weights (``~1/mu``)
    swamp ``H`` and rounding can make a pivot nonpositive: then again with the diagonal raised by
    1e-14, 1e-12, 1e-10 of its largest entry (a float proposal; the caller judges the result)."""
    import scipy.linalg as sla

    top = float(np.max(np.diag(M)))
    for bump in (0.0, 1e-14, 1e-12, 1e-10):
        if bump:
            M[np.diag_indices_from(M)] += bump * top
        try:
            return sla.cho_factor(M, check_finite=False)
        except (np.linalg.LinAlgError, ValueError):
            continue
    return None


def _residual(A: np.ndarray, p: float, w: np.ndarray, s: np.ndarray, lam: np.ndarray) -> float:
    """``max(|grad f - A^T lam| / max(1, |grad f|), |A w - s - 1|) + s^T lam / k``."""
    grad = phi(w, p)
    scale = max(1.0, float(np.max(np.abs(grad))))
    r_d = float(np.max(np.abs(grad - A.T @ lam))) / scale
    return max(r_d, float(np.max(np.abs(A @ w - s - 1.0)))) + float(s @ lam) / len(s)


def _ratio_test(v: np.ndarray, dv: np.ndarray) -> tuple[float, int]:
    """``(t, j)``: the largest t <= 1 with ``v + t dv >= 0`` (v >= 0) and the entry j that blocks
    it (-1 when nothing does)."""
    neg = np.flatnonzero(dv < 0)
    if not neg.size:
        return 1.0, -1
    ratios = -v[neg] / dv[neg]
    j = int(np.argmin(ratios))
    return (float(ratios[j]), int(neg[j])) if ratios[j] < 1.0 else (1.0, -1)


def _step_to_boundary(v: np.ndarray, dv: np.ndarray) -> float:
    """The largest t <= 1 with ``v + t dv >= 0`` (v > 0)."""
    return _ratio_test(v, dv)[0]


@np.errstate(over="ignore", invalid="ignore", divide="ignore")
def interior_point(
    A: np.ndarray,
    p: float,
    w0: np.ndarray,
    lam0: np.ndarray | None = None,
    *,
    tol: float = 1e-11,
    max_iter: int = 80,
) -> InteriorResult:
    """Mehrotra predictor-corrector for ``min (1/p)||w||_p^p s.t. A w >= 1`` (p >= 2).

    Args:
        A: the dense rows (k x m, float64).
        p: the exponent (float, at least 2).
        w0: a primal start (length m; need not be feasible).
        lam0: a dual start (length k; nonnegative), e.g. the multipliers of an earlier round.
        tol: stop when ``mu``, the primal residual ``max |A w - s - 1|`` and the relative dual
            residual ``max |grad f - A^T lam| / max(1, max |grad f|)`` are all below it.
        max_iter: iterations before giving up.

    Returns:
        `InteriorResult`; ``converged`` False leaves a float estimate that the caller judges by
        its own KKT measure.
    """
    import scipy.linalg as sla

    if not p >= 2.0:
        raise ValueError(f"interior_point needs p >= 2, got {p}")
    k, m = A.shape
    w = np.asarray(w0, dtype=np.float64).copy()
    lam = np.zeros(k) if lam0 is None else np.maximum(np.asarray(lam0, dtype=np.float64), 0.0)
    if not np.all(np.isfinite(w)) or not w.any():
        # no start: the best multiple c 1 of the all-ones dual and its stationary point
        # w = phi(A^T c 1), so that grad f = A^T lam holds at the start (at w = 0 the curvature of
        # |w|^p, p > 2, vanishes; and Newton on |w_j|^(p-1) = c from w_j far below overshoots)
        q = p / (p - 1.0)
        lam = ones_start(k, float(np.sum(np.abs(A.T @ np.ones(k)) ** q)), q)
        w = phi(A.T @ lam, q)
    # Mehrotra's start: shift s and lam into the interior, then balance their products
    s = A @ w - 1.0
    s = s + max(0.0, -1.5 * float(s.min()))
    lam = lam + max(0.0, -1.5 * float(lam.min()))
    s = np.maximum(s, 1e-3 * max(1.0, float(s.max())))
    lam = np.maximum(lam, 1e-3 * max(1e-300, float(lam.max()), float(lam.mean()) or 1.0))
    sl = float(s @ lam)
    s += 0.5 * sl / float(lam.sum())
    lam += 0.5 * sl / float(s.sum())

    it, mu = 0, float(s @ lam) / k
    best, stale = (math.inf, w, s, lam, mu), 0
    for it in range(1, max_iter + 1):
        grad = phi(w, p)  # sign(w)|w|^(p-1)
        r_d = grad - A.T @ lam
        r_p = A @ w - s - 1.0
        mu = float(s @ lam) / k
        scale = max(1.0, float(np.max(np.abs(grad))))
        merit = max(mu, float(np.max(np.abs(r_p))), float(np.max(np.abs(r_d))) / scale)
        # late (merit below 1e-6) a step must halve the merit to count as progress: there
        # rounding in the normal matrix (weights ~1/mu) stalls the residuals
        stale = stale + 1 if best[0] < 1e-6 and not merit < 0.5 * best[0] else 0
        if merit < best[0]:
            best = (merit, w, s, lam, mu)
        if merit < tol:
            break
        if stale >= 4:
            break
        h = (p - 1.0) * np.abs(w) ** (p - 2.0)
        h = np.maximum(h, 1e-12 * max(float(h.max()), 1e-300))  # p > 2 and w_j = 0: keep M definite
        D = lam / s
        c = _factor(_normal_matrix(A, D, h))
        if c is None:
            break

        def direction(rc: np.ndarray):
            dw = sla.cho_solve(c, -r_d + A.T @ ((rc - lam * r_p) / s), check_finite=False)
            ds = A @ dw + r_p
            return dw, ds, (rc - lam * ds) / s

        _, ds_a, dl_a = direction(-s * lam)  # affine scaling (predictor)
        t_a = min(_step_to_boundary(s, ds_a), _step_to_boundary(lam, dl_a))
        mu_a = float((s + t_a * ds_a) @ (lam + t_a * dl_a)) / k
        sigma = (mu_a / mu) ** 3 if mu > 0 else 0.0
        dw, ds, dl = direction(sigma * mu - s * lam - ds_a * dl_a)  # corrector
        t = min(1.0, 0.995 * min(_step_to_boundary(s, ds), _step_to_boundary(lam, dl)))
        if not (t > 0 and np.all(np.isfinite(dw))):
            break
        # backtracking on the residuals: grad f is nonlinear (|w|^(p-1)), a full step can overshoot
        now = max(float(np.max(np.abs(r_d))) / scale, float(np.max(np.abs(r_p)))) + mu
        for _ in range(8):
            w1, s1, l1 = (
                w + t * dw,
                np.maximum(s + t * ds, 1e-300),
                np.maximum(lam + t * dl, 1e-300),
            )
            if _residual(A, p, w1, s1, l1) <= (1.0 - 1e-4 * t) * now:
                break
            t *= 0.5
        w, s, lam = w1, s1, l1
    merit, w, s, lam, mu = best
    out = np.where(lam > s, lam, 0.0)  # strict complementarity: s > lam marks an inactive row
    return InteriorResult(out, w, it, merit < tol, mu)


@np.errstate(over="ignore", invalid="ignore", divide="ignore")
def active_newton(
    A: np.ndarray, p: float, w: np.ndarray, lam: np.ndarray, *, max_iter: int = 20
) -> tuple[np.ndarray, np.ndarray]:
    """Newton on the equality-constrained KKT system of the rows with a multiplier,
    ``grad f(w) = A_F^T lam_F, A_F w = 1``, from an interior-point estimate (p >= 2).

    The Schur complement ``A_F H^-1 A_F^T`` is the dual Newton matrix of `certify.warmstart`, but w
    and lam move independently: the model linearizes ``grad f = sign(w)|w|^(p-1)``, smooth for
    p >= 2, instead of ``phi(u) = sign(u)|u|^(q-1)``, whose slope is infinite at u = 0 (there the
    dual Newton crawls). A step stops where a multiplier reaches 0 (ratio test); that row leaves F
    and the solve goes on.
    Returns (lam, w); the caller measures the KKT residual."""
    import scipy.linalg as sla

    lam = np.asarray(lam, dtype=np.float64).copy()
    w = np.asarray(w, dtype=np.float64).copy()
    F = np.flatnonzero(lam > 0)
    best, kept, stale = math.inf, (lam.copy(), w), 0
    for _ in range(max_iter):
        if not F.size:
            break
        AF = A[F]
        grad = phi(w, p)
        r_d = grad - AF.T @ lam[F]
        r_p = AF @ w - 1.0
        scale = max(1.0, float(np.max(np.abs(grad))))
        res = max(float(np.max(np.abs(r_d))) / scale, float(np.max(np.abs(r_p))))
        stale = 0 if res < 0.5 * best else stale + 1
        if res < best:
            best, kept = res, (lam.copy(), w)
        if res < 1e-14 or stale >= 3:  # converged, or rounding stops the gain
            break
        h = (p - 1.0) * np.abs(w) ** (p - 2.0)
        hinv = 1.0 / np.maximum(h, 1e-300 + 1e-14 * float(h.max()))
        S = row_gram(AF * np.sqrt(hinv))  # upper triangle of A_F H^-1 A_F^T
        try:
            c = sla.cho_factor(S, check_finite=False)
        except (np.linalg.LinAlgError, ValueError):
            break
        dl = sla.cho_solve(c, AF @ (hinv * r_d) - r_p, check_finite=False)
        dw = hinv * (AF.T @ dl - r_d)
        if not (np.all(np.isfinite(dl)) and np.all(np.isfinite(dw))):
            break
        # ratio test: the step stops where the first multiplier reaches 0, and that row leaves
        t, out = _ratio_test(lam[F], dl)
        w = w + t * dw
        lam[F] = np.maximum(lam[F] + t * dl, 0.0)
        if out >= 0:
            lam[F[out]] = 0.0
            F = F[lam[F] > 0]
            best, stale = math.inf, 0  # a new system: its residuals start afresh
    return kept


def primal_round(
    A: np.ndarray, p: float, lam: np.ndarray, *, tol: float
) -> tuple[np.ndarray, float]:
    """The solve of a working-set round at p > 2 (`certify.workingset`): `certify.interior.interior_point` from ``w = phi(A^T lam)``,
    then Newton on the rows with a multiplier (`certify.interior.active_newton`) to the dual's own
    tolerance. Every round starts cold (Mehrotra's start): measured at (10^4,32,64), p = 3, a start
    near the previous round's central path crawled (violated new rows block the steps), and an
    active-set continuation from the previous optimum (violated rows held at equality, Newton's
    ratio test dropping the wrong ones) grew the support past the optimum's instead of
    converging. Returns (lam, KKT residual)."""
    q = p / (p - 1.0)
    ip = interior_point(A, p, phi(A.T @ lam, q), lam, tol=max(1e-10, tol))
    lam, res = ip.lam, kkt_residual(ip.lam, A, q)
    if res < 1e-3 and not res < tol:
        lam2 = active_newton(A, p, ip.w, lam)[0]
        res2 = kkt_residual(lam2, A, q)
        if res2 < res:
            lam, res = lam2, res2
    return lam, res


def interior_bytes(rows: int, m: int) -> int:
    """Float memory of `interior_point` on ``rows`` x m rows: the rows' scaled copy and the m x m
    normal matrix with its factor, besides the rows themselves."""
    return 8 * (rows * m + 2 * m * m + 8 * rows + 8 * m)
