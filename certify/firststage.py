"""The first stage of the working-set start (`certify.workingset`, docs/theory.md section 4.5): the
dual of ``min ||w||_p s.t. A w >= 1`` by L-BFGS-B over the nonnegative orthant, on the float factors
of the rows (`certify.structured.RowFactors`), optionally over a screened subset of many attention
rows. Float proposals only: nothing here is trusted, the rounds and the exact refinement decide."""

from __future__ import annotations

import math

import numpy as np

from certify.structured import RowFactors

__all__ = [
    "phi",
    "ones_start",
    "nonneg_lbfgs",
    "lbfgs_dual",
    "screened_lbfgs",
    "row_subset",
    "dual_ratio",
    "dual_gradient",
]


@np.errstate(over="ignore", invalid="ignore")
def phi(u: np.ndarray, q: float) -> np.ndarray:
    return np.sign(u) * np.abs(u) ** (q - 1.0)


def ones_start(N: int, b: float, q: float) -> np.ndarray:
    """The best multiple ``c 1`` of the all-ones vector for a dual ``1^T lam - ||A^T lam||_q^q / q``
    with ``b = ||A^T 1||_q^q`` (1 when b is 0 or not finite)."""
    return np.full(N, (N / b) ** (1.0 / (q - 1.0)) if b > 0 and math.isfinite(b) else 1.0)


def nonneg_lbfgs(fg, x0: np.ndarray, *, maxiter: int, tol: tuple[float, float], args=()):
    """scipy's L-BFGS-B on ``lam >= 0`` for ``fg(lam) -> (value, gradient)``; ``tol = (ftol, gtol)``."""
    from scipy.optimize import minimize

    options = {"maxiter": maxiter, "maxfun": 2 * maxiter, "ftol": tol[0], "gtol": tol[1]}
    bounds = [(0.0, None)] * len(x0)
    return minimize(
        fg,
        x0,
        args=args,
        jac=True,
        method="L-BFGS-B",
        bounds=bounds,
        options={**options, "maxcor": 10},
    )


def lbfgs_dual(
    rf: RowFactors, q: float, sigma: float, maxiter: int, x0: np.ndarray | None = None
) -> tuple[np.ndarray, int]:
    N = rf.N

    @np.errstate(over="ignore", invalid="ignore")
    def fg(lam):
        u = rf.rmatvec(lam) / sigma
        au = np.abs(u)
        f = float(np.sum(au**q) / q - lam.sum())
        return f, rf.matvec(np.sign(u) * au ** (q - 1.0)) / sigma - 1.0

    b = float(np.sum(np.abs(rf.rmatvec(np.ones(N)) / sigma) ** q))
    res = nonneg_lbfgs(
        fg, ones_start(N, b, q) if x0 is None else x0, maxiter=maxiter, tol=(1e-15, 1e-10)
    )
    return np.maximum(res.x, 0.0), int(res.nit)


def screened_lbfgs(
    rf: RowFactors,
    q: float,
    sigma: float,
    maxiter: int,
    *,
    factor: int,
    first: int,
    start: tuple[np.ndarray, int] | None = None,
) -> tuple[np.ndarray, int]:
    """Stage 1 for many attention rows: ``first`` L-BFGS-B iterations over all N rows, then the
    remaining ones over the rows with a multiplier and the ``factor`` m rows of least slack
    (the others held at 0; an evaluation then touches only the examples of these rows). The
    working-set rounds check every row afterwards, so a row screened out wrongly only joins later.
    ``start``: the result ``(lam, iterations)`` of those first iterations, when already run."""
    lam, nit = lbfgs_dual(rf, q, sigma, first) if start is None else start
    if not np.all(np.isfinite(lam)) or not lam.any() or not dual_ratio(rf, q, sigma, lam) > 1e-6:
        return lam, nit  # diverging (likely infeasible): `_rounds` reports it
    g = dual_gradient(rf, q, sigma, lam)
    on = lam > 0
    rest = np.flatnonzero(~on)
    extra = max(0, factor * rf.m - int(on.sum()))
    keep = np.sort(
        np.concatenate([np.flatnonzero(on), rest[np.argsort(g[rest], kind="stable")[:extra]]])
    )
    sub = row_subset(rf, keep)
    lam_k, nit2 = lbfgs_dual(sub, q, sigma, maxiter - first, x0=lam[keep])
    out = np.zeros(rf.N)
    out[keep] = lam_k
    return out, nit + nit2


def row_subset(rf: RowFactors, rows: np.ndarray) -> RowFactors:
    """The float factors of the attention rows ``rows`` (sorted) with their examples' right factors."""
    groups, local = np.unique(rf.example[rows], return_inverse=True)
    local = local.ravel().astype(np.int64)  # rows sorted: the examples come in order
    return RowFactors(rf.kind, rf.d, rf.left[rows], rf.right[groups], local, None, None)


def dual_ratio(rf: RowFactors, q: float, sigma: float, lam: np.ndarray) -> float:
    """``||A^T lam||_q^q / 1^T lam``: 1 at a dual optimum, tending to 0 along a Gordan direction."""
    with np.errstate(over="ignore", invalid="ignore"):
        top = float(np.sum(np.abs(rf.rmatvec(lam) / sigma) ** q))
        return top / float(lam.sum()) if lam.sum() > 0 else math.nan


def dual_gradient(rf: RowFactors, q: float, sigma: float, lam: np.ndarray) -> np.ndarray:
    """The dual's gradient ``A phi(A^T lam / sigma) / sigma - 1``: each row's slack ``a_r^T w - 1``
    at the primal point ``w = phi(A^T lam / sigma)`` of ``lam`` (rows scaled by ``1/sigma``)."""
    return rf.matvec(phi(rf.rmatvec(lam) / sigma, q)) / sigma - 1.0
