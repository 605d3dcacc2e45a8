"""Float warm starts for ``min ||w||_p s.t. A w >= 1`` (docs/theory.md section 4.5). Never evidence.

The psi-form dual ``min_{lam >= 0} f(lam) = (1/q)||A^T lam||_q^q - 1^T lam`` (N variables, smooth)
is solved with L-BFGS-B, then polished by a projected (active-set) Newton method on
``grad f = A phi(A^T lam) - 1``, ``phi(u) = sign(u)|u|^{q-1}``. cvxpy + Clarabel
(``pnorm(w, p, approx=False)``) is the fallback when this does not converge. The solver's p is a
float; the certified p is the exact Fraction used later.
"""

from __future__ import annotations

import warnings
from typing import NamedTuple

import numpy as np

from certify.lagged import LAG_ENTRIES, newton_direction

__all__ = [
    "hessian_weights",
    "kkt_residual",
    "newton_direction",
    "WarmStart",
    "warm_start",
    "dual_lbfgs",
    "projected_newton",
    "smoothed_newton",
    "clarabel_start",
    "null_steps",
]


class WarmStart(NamedTuple):
    """A float dual estimate (psi form, unscaled data) and the float primal ``phi(A^T lam)``."""

    lam: np.ndarray
    w: np.ndarray
    method: str
    kkt_residual: float


@np.errstate(over="ignore", invalid="ignore")
def _phi(u: np.ndarray, q: float) -> np.ndarray:
    return np.sign(u) * np.abs(u) ** (q - 1.0)


@np.errstate(over="ignore", invalid="ignore")
def _dual(lam: np.ndarray, A: np.ndarray, q: float, eps: float = 0.0) -> tuple[float, np.ndarray]:
    """f and its gradient; ``eps > 0``: the smoothed dual with ``(u^2 + eps^2)^(q/2)`` for ``|u|^q``."""
    u = A.T @ lam
    if eps > 0:
        sq = u * u + eps * eps
        return float(np.sum(sq ** (q / 2.0)) / q - lam.sum()), A @ (u * sq ** (q / 2.0 - 1.0)) - 1.0
    au = np.abs(u)
    f = float(np.sum(au**q) / q - lam.sum())
    g = A @ (np.sign(u) * au ** (q - 1.0)) - 1.0
    return f, g


@np.errstate(over="ignore", invalid="ignore")
def kkt_residual(lam: np.ndarray, A: np.ndarray, q: float) -> float:
    """KKT residual of the psi-form dual at ``lam``: the largest ``|grad|`` on rows with a
    multiplier and the largest violation ``max(-grad, 0)`` (grad = ``A phi(A^T lam) - 1``)."""
    g = A @ _phi(A.T @ lam, q) - 1.0
    on = lam > 0
    r1 = float(np.max(np.abs(g[on]))) if on.any() else 1.0
    r2 = float(np.max(np.maximum(-g, 0.0)))
    return max(r1, r2)


@np.errstate(over="ignore", invalid="ignore")
def dual_lbfgs(A: np.ndarray, q: float, *, maxiter: int = 3000) -> np.ndarray:
    """L-BFGS-B on the smooth dual from the best multiple of the all-ones vector."""
    from certify.firststage import nonneg_lbfgs, ones_start

    b = float(np.sum(np.abs(A.sum(axis=0)) ** q))
    res = nonneg_lbfgs(
        _dual, ones_start(A.shape[0], b, q), maxiter=maxiter, tol=(1e-16, 1e-13), args=(A, q)
    )
    return np.maximum(res.x, 0.0)


def hessian_weights(u: np.ndarray, q: float, eps: float = 0.0) -> np.ndarray:
    """``phi'(u) / (q - 1) = |u|^(q-2)`` (capped at 1e30), or its smoothed twin for ``eps > 0``."""
    if eps > 0:
        sq = u * u + eps * eps
        return sq ** (q / 2.0 - 2.0) * ((q - 1.0) * u * u + eps * eps) / (q - 1.0)
    au = np.abs(u)
    with np.errstate(divide="ignore", over="ignore"):
        wt = np.where(au > 0, au ** (q - 2.0), 0.0)
    return np.minimum(wt, 1e30)


def _pg(lam: np.ndarray, g: np.ndarray) -> float:
    """Projected-gradient KKT measure ``||lam - max(lam - g, 0)||_inf``."""
    return float(np.max(np.abs(lam - np.maximum(lam - g, 0.0))))


def null_steps(A: np.ndarray, F: np.ndarray, lam: np.ndarray, g: np.ndarray) -> np.ndarray:
    """Caratheodory steps on free rows that are linearly dependent (docs/theory.md section 7.3).

    Along a vector v with ``A_F^T v = 0`` the dual f is linear (``A^T lam`` does not move), with
    slope ``g_F^T v``. From the left null space of ``A_F`` (SVD, relative tolerance 1e-9) the
    steepest such descent ``v = -P g_F`` is followed until a multiplier reaches 0 (ratio test);
    that row is then held at 0 (the null space restricted to ``v_i = 0``, one Householder
    reflection) and the next step follows, until the restricted null space is empty or offers no
    descent. Then the free rows with a multiplier are (numerically) independent, and Newton's
    matrix ``A_F D A_F^T`` is no longer singular: without these steps a working set with more rows
    than rank (text features of rank 382 in 384 columns: 432 rows) takes Newton steps of 1e16
    cut to 1e-13 by the line search and crawls. Returns the new lam (float; a warm start only)."""
    idx = np.flatnonzero(F)
    if idx.size < 2:
        return lam
    U, s, _ = np.linalg.svd(A[idx], full_matrices=True)
    rank = int(np.sum(s > 1e-9 * s[0])) if s.size and s[0] > 0 else 0
    Nb = U[:, rank:]
    lam = lam.copy()
    lF = lam[idx]
    gF = g[idx]
    scale = float(np.abs(gF).max()) + 1e-300
    for _ in range(idx.size):
        if not Nb.shape[1]:
            break
        v = -Nb @ (Nb.T @ gF)
        if not float(gF @ v) < -1e-20 * scale * scale:
            break  # g is orthogonal to the (restricted) null space: Newton takes over
        neg = np.flatnonzero(v < -1e-14 * float(np.abs(v).max()))
        if not neg.size:
            break  # v >= 0 with A^T v = 0 and descent: a Gordan direction (infeasible); no step
        ratios = lF[neg] / -v[neg]
        k = int(neg[np.argmin(ratios)])
        lF = np.maximum(lF + float(ratios.min()) * v, 0.0)
        lF[k] = 0.0
        r = Nb[k].copy()
        if float(np.linalg.norm(r)) > 0:
            Q, _ = np.linalg.qr(r[:, None], mode="complete")
            Nb = Nb @ Q[:, 1:]
        Nb[k] = 0.0
    lam[idx] = lF
    return lam


def projected_newton(
    A: np.ndarray,
    q: float,
    lam: np.ndarray,
    *,
    tol: float = 1e-13,
    max_iter: int = 200,
    hess=None,
    eps: float = 0.0,
    dependent: bool = False,
) -> tuple[np.ndarray, float]:
    """Projected Newton (Bertsekas 1982) on ``min_{lam >= 0} f(lam)``: Newton on the free rows,
    rows in the epsilon-active set (at or near 0, positive gradient) moved towards 0, Armijo search
    along the projection arc ``lam(t)``. Returns (lam, KKT residual of `_kkt`).

    The arc moves the epsilon-active rows by ``(1 - t) lam_B`` rather than to 0 at once: zeroing a
    multiplier of size epsilon changes f to second order, which for large q (p near 1) outweighs
    the first-order decrease the Armijo test predicts, and the search then fails at every t. When
    the predicted decrease is below the float resolution of f (near the solution), a step is
    accepted by the decrease of the projected gradient instead: the Armijo test on f would then
    accept rounding noise (and stall). ``eps > 0`` minimizes the smoothed dual instead (see
    `smoothed_newton`); the returned residual is then its projected gradient. ``dependent``: the
    rows may be linearly dependent (a working set of constraint-heavy rows); whenever more rows are
    free than the rank of A, `null_steps` first makes the free rows with a multiplier independent."""
    lam = np.maximum(np.asarray(lam, dtype=np.float64), 0.0)
    if not np.any(lam > 0):
        lam = np.full(lam.size, 1.0)
    f, g = _dual(lam, A, q, eps)
    lag = (
        {} if A.size >= LAG_ENTRIES else None
    )  # big rows: lagged Newton matrices (`certify.lagged`)
    hist: list[float] = []
    rank = A.shape[0]
    if dependent and A.shape[0] > 1:
        sv = np.linalg.svd(A, compute_uv=False)
        rank = int(np.sum(sv > 1e-9 * sv[0])) if sv[0] > 0 else 0
    for _ in range(max_iter):
        pg = _pg(lam, g)
        if pg < tol * max(1.0, float(lam.max())) and (eps > 0 or kkt_residual(lam, A, q) < tol):
            break
        hist.append(pg)
        if len(hist) > 60 and pg > 0.5 * hist[-61]:
            break  # no progress (degenerate active set): refine() finishes from here
        epsb = min(1e-3 * float(lam.max()), pg)
        B = (lam <= epsb) & (g > 0)
        F = ~B
        if not F.any():
            break
        if int(F.sum()) > rank:
            lam2 = null_steps(A, F & (lam > 0), lam, g)
            if not np.array_equal(lam2, lam):
                f2, g2 = _dual(lam2, A, q, eps)
                if np.isfinite(f2) and f2 <= f + 1e-12 * (abs(f) + float(np.sum(lam))):
                    lam, f, g = lam2, f2, g2
                    hist.append(pg)
                    continue
        try:
            dF = newton_direction(
                A,
                F,
                hessian_weights(A.T @ lam, q, eps),
                q,
                -g[F],
                hess,
                singular=F.sum() > rank,
                lag=lag,
            )
        except np.linalg.LinAlgError:
            break
        slope = -float(g[F] @ dF) + float(g[B] @ lam[B])  # predicted decrease per unit t (> 0)
        if not (np.isfinite(slope) and slope > 0):
            break
        noise = 1e-13 * (abs(f) + float(np.sum(lam)))  # float resolution of f
        t, step = 1.0, None
        for _ls in range(60):
            cand = lam.copy()
            cand[F] = np.maximum(lam[F] + t * dF, 0.0)
            cand[B] = lam[B] * max(0.0, 1.0 - t)
            fc, gc = _dual(cand, A, q, eps)
            if np.isfinite(fc):
                if t * slope < noise:  # f cannot resolve the decrease: judge by the KKT measure
                    if _pg(cand, gc) < pg:
                        step = (cand, fc, gc)
                    if step is not None or _ls > 8:
                        break
                elif fc <= f - 1e-4 * t * slope:
                    step = (cand, fc, gc)
                    break
            t *= 0.5
        if step is None:
            break
        lam, f, g = step
    return lam, (_pg(lam, g) if eps > 0 else kkt_residual(lam, A, q))


def smoothed_newton(
    A: np.ndarray,
    q: float,
    lam: np.ndarray,
    *,
    tol: float = 1e-13,
    hess=None,
    max_iter: int = 200,
    dependent: bool = False,
) -> tuple[np.ndarray, float]:
    """Projected Newton that survives a near-cusp optimum (q < 2, i.e. p > 2).

    For q < 2 the dual gradient ``A phi(A^T lam)`` has ``phi'(u) = (q-1)|u|^(q-2)``, infinite at
    ``u = 0``: when an entry of the optimal ``u = A^T lam`` is tiny (seen: 3e-9 next to entries of
    order 1), Newton's curvature model is wrong a step away and the iteration crawls. Then the
    smoothed dual (``|u|^q -> (u^2 + eps^2)^(q/2)``, Hessian weights bounded by eps^(q-2)) is
    minimized for eps = 0.1 median|u|, 100x smaller each stage, warm-started, and the plain
    Newton finishes. On big rows (at least `certify.lagged.LAG_ENTRIES` entries; each step there
    factors a Newton matrix of about m rows) the stages come first, without 40 plain steps
    before them. Returns (lam, KKT residual of the plain dual)."""
    if q < 2.0 and A.size >= LAG_ENTRIES:
        # big rows: straight to the smoothing stages (measured at (2000,32,64) p = 3, 3,802 rows:
        # the 40 plain steps took 45 s of CPU to reach 1e-6 and the stages then ran all the same;
        # without them the working set took 129 s of CPU instead of 172)
        lam, res = np.maximum(np.asarray(lam, dtype=np.float64), 0.0), np.inf
    else:
        lam, res = projected_newton(
            A, q, lam, tol=tol, hess=hess, max_iter=min(max_iter, 40), dependent=dependent
        )
    if res < tol or q >= 2.0:
        return (
            (lam, res)
            if res < tol
            else projected_newton(
                A, q, lam, tol=tol, hess=hess, max_iter=max_iter, dependent=dependent
            )
        )
    if res < 1e-8:  # no crawl: plain Newton was converging when the 40 steps ran out (measured at
        # (2000,32,64) p = 3: 7e-8, 5e-9, 2e-11 at steps 38-40); a few more finish it, where the
        # smoothing stages below would take some 60 more steps
        lam2, res2 = projected_newton(
            A, q, lam, tol=tol, hess=hess, max_iter=10, dependent=dependent
        )
        if res2 < tol:
            return lam2, res2
        lam, res = (lam2, res2) if res2 < res else (lam, res)
    u = np.abs(A.T @ lam)
    eps = 0.1 * float(np.median(u)) if np.any(u > 0) else 1.0
    floor = 1e-10 * float(u.max()) if np.any(u > 0) else 0.0
    while eps > floor:
        lam, _ = projected_newton(
            A, q, lam, tol=tol, hess=hess, max_iter=max_iter, eps=eps, dependent=dependent
        )
        eps *= 0.01
    lam2, res2 = projected_newton(
        A, q, lam, tol=tol, hess=hess, max_iter=max_iter, dependent=dependent
    )
    return (lam2, res2) if res2 <= res else (lam, res)


@np.errstate(over="ignore", invalid="ignore")
def clarabel_start(A: np.ndarray, p: float) -> np.ndarray | None:
    """cvxpy + Clarabel primal solve; returns a psi-form dual estimate (or None on failure)."""
    try:
        import cvxpy as cp

        m = A.shape[1]
        w = cp.Variable(m)
        cons = [A @ w >= 1]
        prob = cp.Problem(cp.Minimize(cp.pnorm(w, p, approx=False)), cons)
        with warnings.catch_warnings():  # "solution may be inaccurate": fine for a warm start
            warnings.simplefilter("ignore")
            prob.solve(solver=cp.CLARABEL, tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12)
        if prob.status not in ("optimal", "optimal_inaccurate") or cons[0].dual_value is None:
            return None
        mu = np.maximum(np.asarray(cons[0].dual_value, dtype=np.float64).ravel(), 0.0)
    except Exception:  # solver failures are not evidence of anything: fall back
        return None
    q = p / (p - 1.0)
    b = float(np.sum(np.abs(A.T @ mu) ** q))
    if b <= 0 or mu.sum() <= 0:
        return None
    return mu * (mu.sum() / b) ** (1.0 / (q - 1.0))


@np.errstate(over="ignore", invalid="ignore")
def warm_start(
    A: np.ndarray,
    p: float,
    *,
    tol: float = 1e-12,
    fallbacks: bool = True,
    hess=None,
    previous: WarmStart | None = None,
) -> WarmStart:
    """Float dual/primal estimate for ``min ||w||_p s.t. A w >= 1`` (A float64, N x m).

    Active-set Newton from the best multiple of the all-ones vector; with ``fallbacks``, L-BFGS-B
    and then Clarabel when Newton does not reach the tolerance. ``hess(D, free_mask)`` may supply
    ``A_F diag(D) A_F^T`` faster than the dense product (see `ExactOps.hessian`). ``previous``: the
    result of an earlier call without fallbacks (its Newton phase is not repeated)."""
    q = p / (p - 1.0)
    sigma = float(np.median(np.linalg.norm(A, axis=1)))
    sigma = sigma if sigma > 0 and np.isfinite(sigma) else 1.0
    As = A / sigma
    N = As.shape[0]
    b = float(np.sum(np.abs(As.sum(axis=0)) ** q))
    c = (N / b) ** (1.0 / (q - 1.0)) if b > 0 and np.isfinite(b) else 1.0
    hs = None if hess is None else (lambda D, F: hess(D, F) / sigma**2)
    if previous is not None:
        lam, res = previous.lam * sigma**p, previous.kkt_residual
    else:
        lam, res = projected_newton(As, q, np.full(N, c), tol=tol, hess=hs)
    method = "active-set Newton on the dual"
    if not res < 1e-10 and fallbacks:
        lam2, res2 = projected_newton(As, q, dual_lbfgs(As, q), tol=tol, hess=hs)
        if res2 < res:
            lam, res, method = lam2, res2, "L-BFGS-B dual + active-set Newton"
    if not res < 1e-8 and fallbacks:
        alt = clarabel_start(As, p)
        if alt is not None:
            lam2, res2 = projected_newton(As, q, alt, tol=tol, hess=hs)
            if res2 < res:
                lam, res, method = lam2, res2, "Clarabel + active-set Newton"
    lam_out = lam / sigma**p
    w = _phi(A.T @ lam_out, q)
    return WarmStart(lam_out, w, method, res)
