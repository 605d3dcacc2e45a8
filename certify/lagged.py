"""Newton directions of the float warm start, also from an earlier step's factor (solver side; docs/theory.md
section 4.5). Never evidence: the directions only seed `certify.refine`.

In projected Newton on the psi-form dual (`certify.warmstart.projected_newton`) over a big working
set of rows (about m rows of m = 4,096 entries), each step forms ``H = (q-1) A_F diag(wt) A_F^T``
(a dsyrk of |F|^2 m products) and factors it; between steps with the same free rows only the weights
``wt = |A^T lam|^(q-2)`` move. Conjugate gradients on the new H, preconditioned by the Cholesky
factor of the last H formed, then need a few products with ``A_F`` (2 |F| m each) instead of the
dsyrk and the factorization; when they do not converge the caller forms H anew.
"""

from __future__ import annotations

import numpy as np

from certify.blas import row_gram

__all__ = [
    "LAG_ENTRIES",
    "LAG_ITERATIONS",
    "MAX_CHANGE",
    "gram_updated_solve",
    "lagged_solve",
    "newton_direction",
]


#: rows x columns from which `projected_newton` preconditions with an earlier step's factor
LAG_ENTRIES = 4_000_000
#: conjugate-gradient iterations `lagged_solve` tries before forming the Newton matrix anew
LAG_ITERATIONS = 12


def lagged_solve(A, F, wt, q, rhs, lag) -> np.ndarray | None:
    """Preconditioned conjugate gradients on ``(q-1) A_F diag(wt) A_F^T + shift I``, preconditioned
    by the Cholesky factor in ``lag`` (of the same free rows at an earlier step); None when the
    relative residual is not below 1e-11 within `LAG_ITERATIONS` (the caller then factors H)."""
    from scipy.linalg import cho_solve

    fac, shift = lag["factor"], lag["shift"]
    idx = np.flatnonzero(F) if F.dtype == bool else np.asarray(F)
    full = np.zeros(A.shape[0])

    def op(v):
        full[idx] = v
        return (q - 1.0) * (A @ (wt * (A.T @ full)))[idx] + shift * v

    b = np.asarray(rhs, dtype=np.float64)
    nb = float(np.linalg.norm(b))
    if not nb > 0 or not np.isfinite(nb):
        return None
    x = cho_solve(fac, b, check_finite=False)
    r = b - op(x)
    z = cho_solve(fac, r, check_finite=False)
    d = z.copy()
    rz = float(r @ z)
    for _ in range(LAG_ITERATIONS):
        if float(np.linalg.norm(r)) < 1e-11 * nb:
            return x
        Ad = op(d)
        dAd = float(d @ Ad)
        if not (np.isfinite(dAd) and dAd > 0):
            return None
        a = rz / dAd
        x += a * d
        r -= a * Ad
        z = cho_solve(fac, r, check_finite=False)
        rz, rz0 = float(r @ z), rz
        d = z + (rz / rz0) * d
    return x if float(np.linalg.norm(r)) < 1e-11 * nb else None


#: most rows that may leave or enter the free set before a q = 2 Gram factor is formed anew
MAX_CHANGE = 256


def gram_updated_solve(G: np.ndarray, F: np.ndarray, rhs: np.ndarray, lag: dict):
    """``G_FF^-1 rhs`` (q = 2: the Newton matrix is a principal submatrix of the Gram matrix G of the
    working set) from the Cholesky factor of ``G_OO`` for an earlier free set O in ``lag``: with
    K = O n F, the rows R = O - F leave by ``A^-1 = (G_OO^-1)_KK - (G_OO^-1)_KR ((G_OO^-1)_RR)^-1
    (G_OO^-1)_RK`` (A = G_KK), the rows S = F - O enter by the Schur complement
    ``G_SS - G_SK A^-1 G_KS``: |R| + |S| + 1
    triangular solves instead of a factorization. None when more than `MAX_CHANGE` rows changed or
    the residual is not below 1e-9 (the caller then factors G_FF)."""
    from scipy.linalg import cho_solve

    old, new = lag.get("gidx"), np.flatnonzero(F)
    if old is None:
        return None
    kept = np.isin(old, new)
    pK, pR = np.flatnonzero(kept), np.flatnonzero(~kept)
    K, S = old[pK], new[~np.isin(new, old)]
    if len(pR) + len(S) > MAX_CHANGE:
        return None
    fac, n_o = lag["gfac"], len(old)
    if len(pR):
        E_R = np.zeros((n_o, len(pR)))
        E_R[pR, np.arange(len(pR))] = 1.0
        Z = cho_solve(fac, E_R, check_finite=False)
        W = Z[pR]

    def ainv(V: np.ndarray) -> np.ndarray:  # A^-1 V for A = (G_OO)_KK
        full = np.zeros((n_o, V.shape[1]))
        full[pK] = V
        Y = cho_solve(fac, full, check_finite=False)
        if len(pR):
            Y = Y - Z @ np.linalg.solve(W, Y[pR])
        return Y[pK]

    posK, posS = np.searchsorted(new, K), np.searchsorted(new, S)
    x = np.empty(len(new))
    Ab = ainv(rhs[posK][:, None])
    if len(S):
        E, D = G[np.ix_(K, S)], G[np.ix_(S, S)]
        AE = ainv(E)
        x2 = np.linalg.solve(D - E.T @ AE, rhs[posS][:, None] - E.T @ Ab)
        x[posK], x[posS] = (Ab - AE @ x2)[:, 0], x2[:, 0]
    else:
        x[posK] = Ab[:, 0]
    xf = np.zeros(G.shape[0])
    xf[new] = x
    r = (G @ xf)[new] - rhs
    ok = np.all(np.isfinite(x)) and float(np.linalg.norm(r)) <= 1e-9 * float(np.linalg.norm(rhs))
    return x if ok else None


def newton_direction(
    A: np.ndarray,
    F: np.ndarray,
    wt: np.ndarray,
    q: float,
    rhs: np.ndarray,
    hess,
    *,
    singular: bool = False,
    lag: dict | None = None,
) -> np.ndarray:
    """Solve ``(H + 1e-15 tr(H)/k I) d = rhs`` for the Newton matrix ``H = (q-1) A_F diag(wt) A_F^T``
    (or ``(q-1) hess(wt, F)``): Cholesky on the upper triangle that dsyrk writes (no symmetric copy,
    half the flops of LU; measured 1.5 -> 1.0 s a step on 3,800 x 4,096 rows), LU when H is not
    numerically positive definite. ``singular``: H is known to be singular (more free rows than
    rank): the least-squares (pseudo-inverse) solution, bounded where the 1e-15 shift is not.
    ``lag``: a dict kept across the steps of one solve (`projected_newton` on big rows): the
    Cholesky factor of an earlier step with the same free rows preconditions conjugate gradients
    on this step's H (`lagged_solve`: two products with A_F per iteration instead of a dsyrk and a
    factorization); when they do not converge in a few iterations H is formed and factored anew. At
    q = 2 with a ``hess`` that carries its Gram matrix (``hess.gram``), steps whose free rows differ
    from the last factored ones by a few rows solve by `gram_updated_solve`."""
    from scipy.linalg import cho_factor, cho_solve

    if lag is not None and hess is None and not singular and lag.get("F") is not None:
        if np.array_equal(lag["F"], F):
            d = lagged_solve(A, F, wt, q, rhs, lag)
            if d is not None:
                return d
    gram = getattr(hess, "gram", None) if lag is not None and q == 2.0 else None
    gram = gram if gram is not None and not singular and np.all(wt == 1.0) else None
    if gram is not None and lag.get("gidx") is not None:
        d = gram_updated_solve(gram, F, rhs, lag)
        if d is not None:
            return d
    if hess is not None:
        H = (q - 1.0) * hess(wt, F)
    else:
        H = row_gram(A[F] * np.sqrt(wt), q - 1.0)  # upper triangle of (q-1) X X^T
    k = H.shape[0]
    if singular:
        H = np.triu(H) + np.triu(H, 1).T if hess is None else H
        ev, V = np.linalg.eigh(H)
        keep = ev > 1e-12 * max(float(ev[-1]), 0.0)
        return V[:, keep] @ ((V[:, keep].T @ rhs) / ev[keep])
    shift = 1e-15 * np.trace(H) / max(1, k)
    H[np.diag_indices(k)] += shift
    try:
        fac = cho_factor(H, lower=False, check_finite=False)
        if lag is not None and hess is None:
            lag.update(F=F.copy(), factor=fac, shift=shift)
        if gram is not None:
            lag.update(gidx=np.flatnonzero(F), gfac=fac)
        return cho_solve(fac, rhs, check_finite=False)
    except np.linalg.LinAlgError:
        if lag is not None:
            lag["F"] = None
        if hess is None:
            H = np.triu(H) + np.triu(H, 1).T
        return np.linalg.solve(H, rhs)
