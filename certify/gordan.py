"""Near-Gordan infeasibility certificates for constraint-heavy systems (docs/theory.md section 4.4).

Solver side. When ``A w >= 1`` is infeasible the psi-form dual is unbounded below, and L-BFGS-B on
it (`certify.workingset`) runs off along a Gordan direction: ``g = lam / 1^T lam`` then has
``A^T g`` at rounding level (measured: 2e-16 at N = 15,500, m = 1024 after 100 iterations) and a
large support. The certificate carries g rounded to a dyadic and a basis B of m rows with large
``g`` (QR with column pivoting on the weighted candidate rows); `certify.check.verified` proves with
exact integer products that a correction on B turns it into an exact Gordan vector. No exact
kernel vector (10^5-bit entries at m = 1024) is ever formed.
"""

from __future__ import annotations

import numpy as np

from certify.certificate import ExactVector
from certify.exact import dyadic
from certify.ops import ExactOps
from certify.structured import row_factors
from certify.check.verified import kron_solution_bound

__all__ = ["near_gordan"]


def _basis(cs, g: np.ndarray) -> np.ndarray | None:
    """m rows with large g whose rows are well conditioned together."""
    m = cs.m
    cand = np.argsort(-g, kind="stable")[: min(cs.N, 2 * m)]
    cand = cand[g[cand] > 0]
    if len(cand) < m:
        return None
    if m > 2048:  # QR of an m x 2m matrix costs 4 m^3: take the m largest multipliers
        return np.sort(cand[:m])
    import scipy.linalg as sla

    rows = row_factors(cs).rows(cand) * g[cand][:, None]
    _, piv = sla.qr(rows.T, mode="r", pivoting=True, check_finite=False)
    return np.sort(cand[piv[:m]])


def near_gordan(cs, lam: np.ndarray) -> tuple[ExactVector, tuple[int, ...]] | None:
    """A dyadic near-Gordan vector and its basis from a float vector ``lam >= 0`` (the direction of
    a diverging dual), verified as `certify.check.verified.gordan_check` verifies it; None if not proven."""
    lam = np.where(np.isfinite(lam), np.maximum(lam, 0.0), 0.0)
    if not lam.any() or cs.N < cs.m:
        return None
    g = lam / lam.max()
    g[g < 1e-30] = 0.0  # tiny entries only lengthen the integers
    B = _basis(cs, g)
    if B is None:
        return None
    dg = dyadic(g)
    G = [int(k) for k in dg.ints.ravel()]
    ops = ExactOps(cs)
    U = ops.rmatvec(G)  # exact Z^T G
    beta = kron_solution_bound(
        cs.left.ints[B].astype(object),
        None if cs.right is None else cs.right.ints[B].astype(object),
        U,
    )
    if beta is None or not beta < min(G[b] for b in B):
        return None
    return ExactVector(tuple(G), dg.exp, 1), tuple(int(b) for b in B)
