"""Exact integer tests of the support classification at scale (docs/theory.md section 4.3).

Both tests are proofs in exact integer (and rational) arithmetic; floats only choose the
approximate inverse of the second one, and any choice gives a valid bound.

- Certainly inactive (row i with no multiplier): ``a_i^T w - 1 > ||a_i||_q dist``. Here ``||a_i||_q``
  is replaced by an integer upper bound: ``||vec(l z^T)||_q <= ||l||_2 ||z||_2`` for q >= 2 and
  ``<= m^(1/q - 1/2) ||l||_2 ||z||_2`` for q < 2, with ``||l||_2 <= isqrt(sum l_j^2) + 1``. One
  vectorized pass over the N rows, no ball per row.
- Certainly tight needs upper bounds of ``(M^-1)_ii`` for the exact integer Gram matrix M of the
  rows not certified inactive. With ``M = 2^k (G + F)``, G the integers of M shifted right by k
  (below 2^53), ``0 <= F_ij < 1``, and Y an integer approximate inverse of G scaled by ``2^s``:
  ``Y (G + F) = 2^s (I - H)``, ``||H||_2 <= theta = (||2^s I - Y G||_F + n ||Y||_F) / 2^s`` (no n term
  when k = 0: then F = 0);
  if ``theta < 1`` then ``(G + F)^-1 = (I - H)^-1 Y 2^-s`` and
  ``((G + F)^-1)_ii <= 2^-s (Y_ii + theta/(1 - theta) ||Y||_F)`` (Rump-style verification). The
  product ``Y G`` has entries below 2^53: one fast ``fmpz_mat`` product, no ball inverse.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

__all__ = ["row_norm_bounds", "inactive_mask", "inverse_diagonal_upper"]


def _norm2_upper(M: np.ndarray) -> list[int]:
    """Per row, an integer >= the Euclidean norm of the integer row (object or int64 array)."""
    sq = (M.astype(object) ** 2).sum(axis=1) if M.shape[1] else np.zeros(M.shape[0], dtype=object)
    return [math.isqrt(int(s)) + 1 if s else 0 for s in sq]


def row_norm_bounds(ops) -> tuple[list[int], int]:
    """``(B, e)``: ``||a_i||_2 <= B_i * 2**e`` for the rows of ``ops`` (an `ExactOps`)."""
    key = "row_norm_bounds"
    full = ops.cs._cache.get(key)
    if full is None:
        cs = ops.cs
        left = _norm2_upper(cs.left.ints)
        if cs.right is None:
            full = (left, cs.left.exp)
        else:
            from certify.structured import row_factors

            ex = row_factors(cs).example
            first = np.unique(ex, return_index=True)[1]
            zn = _norm2_upper(cs.right.ints[first])
            full = ([a * zn[int(e)] for a, e in zip(left, ex)], cs.left.exp + cs.right.exp)
        ops.cs._cache[key] = full
    B, e = full
    return [B[int(r)] for r in ops.rows], e


def inactive_mask(ops, Aw: list[int], e_aw: int, lam_ints, dist_upper: Fraction, mfac_upper: Fraction) -> np.ndarray:
    """Rows proven inactive: no multiplier and ``a_i^T w - 1 > mfac * ||a_i||_2 * dist``, where
    ``a_i^T w = Aw_i 2**e_aw`` exactly, ``dist_upper >= dist`` and ``mfac_upper >= m^(1/q-1/2)``
    (or 1 for q >= 2)."""
    B, e = row_norm_bounds(ops)
    c = dist_upper * mfac_upper * Fraction(2) ** (e - e_aw)  # test: Aw_i - 2**-e_aw > B_i * c
    one = Fraction(2) ** (-e_aw)
    if one.denominator != 1:  # w too coarse to resolve 1 (data of extreme scale): no row is proven
        return np.zeros(ops.N, dtype=bool)
    D = one.numerator
    num, den = c.numerator, c.denominator
    return np.array([lam_ints[i] == 0 and (Aw[i] - D) * den > B[i] * num for i in range(ops.N)], dtype=bool)


def inverse_diagonal_upper(G) -> list[Fraction] | None:
    """Rigorous upper bounds of the diagonal of ``G^-1`` for an exact symmetric positive definite
    integer matrix G (python-flint ``fmpz_mat``); None when the verification fails (G singular or
    too ill-conditioned for one float inverse)."""
    import flint

    n = G.nrows()
    if n == 0:
        return []
    ge = [int(x) for x in G.entries()]
    top = max(abs(x).bit_length() for x in ge)
    k = max(0, top - 52)
    Gp = [x >> k for x in ge]  # floor: G = 2^k (Gp + F), 0 <= F_ij < 1
    Gf = np.array(Gp, dtype=np.float64).reshape(n, n)  # exact (|Gp| < 2^53)
    try:
        Yf = np.linalg.inv(Gf)
    except np.linalg.LinAlgError:
        return None
    big = float(np.max(np.abs(Yf))) if np.all(np.isfinite(Yf)) else 0.0
    if not big > 0:
        return None
    s = 52 - math.ceil(math.log2(big))
    Y = np.round(np.ldexp(Yf, s)).astype(np.int64)
    Yl = Y.tolist()
    P = flint.fmpz_mat(Yl) * flint.fmpz_mat(n, n, Gp)  # exact
    two_s = 1 << s if s >= 0 else None
    if two_s is None:
        return None
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
