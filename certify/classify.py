"""Exact integer tests of the support classification at scale (docs/theory.md section 4.3).

Both tests are proofs in exact integer (and rational) arithmetic; floats only choose the
approximate inverse of the second one, and any choice gives a valid bound.

- Certainly inactive (row i with no multiplier): ``a_i^T w - 1 > ||a_i||_q dist``. Here ``||a_i||_q``
  is replaced by an integer upper bound: ``||vec(l z^T)||_q <= ||l||_2 ||z||_2`` for q >= 2 and
  ``<= m^(1/q - 1/2) ||l||_2 ||z||_2`` for q < 2, with ``||l||_2 <= isqrt(sum l_j^2) + 1``. One
  vectorized pass over the N rows, no ball per row.
- Certainly tight needs upper bounds of ``(M^-1)_ii`` for the exact integer Gram matrix M of the
  rows not certified inactive: `certify.check.verified.inverse_diagonal_upper` (the checker's own, trusted
  verification, shared here), one ``fmpz_mat`` product of 53-bit integers instead of a ball inverse.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

__all__ = ["row_norm_bounds", "inactive_mask"]


def _norm2_upper(M: np.ndarray) -> list[int]:
    """Per row, an integer >= the Euclidean norm of the integer row (object or int64 array)."""
    if not M.shape[1]:
        return [0] * M.shape[0]
    if M.dtype != object:  # int64: exact in int64 when the sums of squares stay below 2**62
        top = int(np.abs(M).max()) if M.size else 0
        if 2 * top.bit_length() + M.shape[1].bit_length() <= 62:
            sq = np.einsum("ij,ij->i", M, M).tolist()
            return [math.isqrt(s) + 1 if s else 0 for s in sq]
    out: list[int] = []
    for r0 in range(0, M.shape[0], 8192):  # a block of rows: no N x d array of squares
        sq = (M[r0 : r0 + 8192].astype(object) ** 2).sum(axis=1)
        out += [math.isqrt(int(s)) + 1 if s else 0 for s in sq]
    return out


def row_norm_bounds(ops) -> tuple[list[int], int]:
    """``(B, e)``: ``||a_i||_2 <= B_i * 2**e`` for the rows of ``ops`` (an `ExactOps`)."""

    def build() -> tuple[list[int], int]:
        cs = ops.cs
        left = _norm2_upper(cs.left.ints)
        if cs.right is None:
            return left, cs.left.exp
        from certify.structured import row_factors

        ex = row_factors(cs).example
        first = np.unique(ex, return_index=True)[1]
        zn = _norm2_upper(cs.right.ints[first])
        return [a * zn[int(e)] for a, e in zip(left, ex)], cs.left.exp + cs.right.exp

    full = ops.cs.derived("row_norm_bounds", build)
    B, e = full
    return [B[int(r)] for r in ops.rows], e


def inactive_mask(
    ops, Aw: list[int], e_aw: int, lam_ints, dist_upper: Fraction, mfac_upper: Fraction
) -> np.ndarray:
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
    return np.array(
        [lam_ints[i] == 0 and (Aw[i] - D) * den > B[i] * num for i in range(ops.N)], dtype=bool
    )
