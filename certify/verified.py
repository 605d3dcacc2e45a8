"""Verified infeasibility without an exact kernel vector (docs/theory.md section 4.4). Trusted code.

Used by the independent checker (`certify.check`); imports no solver, only numpy and python-flint,
and proves with exact integer arithmetic (floats only choose an approximate inverse; any choice is
sound). An exact Gordan vector of a generic system with m variables has entries of about m times
the data's bit length (Cramer): 10^5 bits each at m = 1024, found by an exact solve costing
minutes. Instead a certificate may carry a dyadic ``g~ = G 2^e >= 0`` that is a Gordan vector up to
rounding, and a basis B of m rows. With ``A = Z 2^eA``, ``M = Z_B^T`` (m x m) and the exact residual
``R = Z^T G``, the unique x with ``M x = R`` gives ``g = g~ - x 2^e`` on B (g~ elsewhere) with
``A^T g = 0`` exactly; ``g >= 0`` and ``g != 0`` when ``|x_k| < G_{B_k}`` for every k.

The bound on ``||x||_inf`` (Rump's verification, with exact products): ``M = 2^k (Mp + F)`` with
Mp the integers of M shifted right by k (below 2^53) and ``0 <= F_ij < 1``; Y an integer
approximate inverse of Mp scaled by ``2^s``. Then ``Y 2^-(s+k) M = I - H`` with
``||H||_inf <= theta = (||2^s I - Y Mp||_inf + [k > 0] m ||Y||_inf) / 2^s``; if ``theta < 1``, M is
invertible and ``||x||_inf <= ||Y||_inf ||R||_inf 2^-(s+k) / (1 - theta)``.

The same verification bounds the diagonal of the inverse of an exact symmetric positive definite
Gram matrix G (tight rows, docs/theory.md section 4.3), with Frobenius norms: ``G = 2^k (Gp + F)``,
``Y (Gp + F) = 2^s (I - H)``, ``||H||_2 <= theta = (||2^s I - Y Gp||_F + [k > 0] n ||Y||_F) / 2^s``;
if ``theta < 1/2`` then ``((Gp + F)^-1)_ii <= 2^-s (Y_ii + theta/(1 - theta) ||Y||_F)``.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Sequence

import numpy as np

__all__ = ["solution_bound", "gordan_check", "inverse_diagonal_upper"]


def _scaled_inverse(entries: list[int], n: int) -> tuple[list[int], np.ndarray, int, int] | None:
    """``(Mp, Y, s, k)`` for the n x n integer matrix ``M`` given row-major: ``Mp = M >> k`` (floor, so
    ``M = 2^k (Mp + F)`` with ``0 <= F_ij < 1``, and ``|Mp| < 2^53``: exact in float64), ``Y`` an int64
    approximate inverse of Mp scaled by ``2^s`` (``|Y| <= 2^52``, ``s >= 0``). None when the float
    inverse fails. Floats only choose Y: the callers bound ``2^s I - Y Mp`` exactly."""
    top = max(abs(x).bit_length() for x in entries)
    k = max(0, top - 52)
    Mp = [x >> k for x in entries]
    try:
        Yf = np.linalg.inv(np.array(Mp, dtype=np.float64).reshape(n, n))
    except np.linalg.LinAlgError:
        return None
    big = float(np.max(np.abs(Yf))) if np.all(np.isfinite(Yf)) else 0.0
    if not big > 0:
        return None
    s = 52 - math.ceil(math.log2(big))
    if s < 0:
        return None
    return Mp, np.rint(np.ldexp(Yf, s)).astype(np.int64), s, k


def solution_bound(M: np.ndarray, R: Sequence[int]) -> Fraction | None:
    """An exact upper bound of ``||x||_inf`` for the solution of ``M x = R`` (M a square object array
    of Python ints, R integers); None when the verification fails (M singular or too ill-conditioned)."""
    import flint

    m = M.shape[0]
    if M.shape != (m, m) or len(R) != m or m == 0:
        return None
    approx = _scaled_inverse([int(v) for v in M.ravel()], m)
    if approx is None:
        return None
    Mp, Y, s, k = approx
    P = flint.fmpz_mat(Y.tolist()) * flint.fmpz_mat(m, m, Mp)  # exact
    E = np.array([int(v) for v in P.entries()], dtype=object).reshape(m, m)
    E[np.arange(m), np.arange(m)] -= 1 << s
    e_inf = int(np.max(np.abs(E).sum(axis=1)))
    y_inf = int(np.max(np.abs(Y).astype(object).sum(axis=1)))
    theta = Fraction(e_inf + (m * y_inf if k else 0), 1 << s)
    if theta >= Fraction(1, 2):
        return None
    r_inf = max(abs(int(v)) for v in R)
    return Fraction(y_inf * r_inf, 1 << (s + k)) / (1 - theta)


def gordan_check(rows, g, basis: Sequence[int] | None) -> tuple[bool, str]:
    """The checker's infeasibility test. ``rows``: the checker's exact rows (``N``, ``m``, ``L``, ``R``
    object arrays and ``ATlam``); ``g``: the certificate's `ExactVector`; ``basis``: None (g must be an
    exact Gordan vector) or m row positions (g is a near-Gordan vector, see the module docstring)."""
    if g is None or len(g) != rows.N or any(k < 0 for k in g.ints) or not any(g.ints):
        return False, "not a Gordan certificate (need g >= 0, g != 0 with one entry per row)"
    U = rows.ATlam(g.ints)
    if basis is None:
        ok = not any(U)
        return ok, ("g >= 0, g != 0, A^T g = 0 (exact): A w >= 1 is infeasible" if ok
                    else "not a Gordan certificate (need g >= 0, g != 0, A^T g = 0 exactly)")
    B = [int(b) for b in basis]
    if len(B) != rows.m or len(set(B)) != len(B) or not all(0 <= b < rows.N for b in B):
        return False, f"the Gordan basis must list {rows.m} distinct rows"
    cols = rows.L[B] if rows.R is None else (rows.L[B][:, :, None] * rows.R[B][:, None, :]).reshape(len(B), -1)
    beta = solution_bound(cols.T, U)  # M = Z_B^T: column k is row B_k
    ok = beta is not None and beta < min(g.ints[b] for b in B)
    return ok, ("g >= 0 plus a verified correction on the basis rows is an exact Gordan vector: A w >= 1 is "
                "infeasible" if ok else "the correction on the basis rows is not provably smaller than g there")


def inverse_diagonal_upper(G) -> list[Fraction] | None:
    """Rigorous upper bounds of the diagonal of ``G^-1`` for an exact symmetric positive definite
    integer matrix G (python-flint ``fmpz_mat``); None when the verification fails (G singular or
    too ill-conditioned for one float inverse)."""
    import flint

    n = G.nrows()
    if n == 0:
        return []
    approx = _scaled_inverse([int(x) for x in G.entries()], n)
    if approx is None:
        return None
    Gp, Y, s, k = approx
    Yl = Y.tolist()
    P = flint.fmpz_mat(Yl) * flint.fmpz_mat(n, n, Gp)  # exact
    two_s = 1 << s
    pe = [int(x) for x in P.entries()]
    e2 = sum((v - (two_s if i % (n + 1) == 0 else 0)) ** 2 for i, v in enumerate(pe))
    y2 = sum(int(v) * int(v) for v in Y.ravel())
    yf = math.isqrt(y2) + 1  # >= ||Y||_F
    theta = Fraction(math.isqrt(e2) + 1 + (n * yf if k else 0), two_s)  # F = 0 when nothing was shifted out
    if theta >= Fraction(1, 2):
        return None
    extra = theta / (1 - theta) * yf
    scale = Fraction(1, two_s) / (1 << k)
    return [(Yl[i][i] + extra) * scale for i in range(n)]
