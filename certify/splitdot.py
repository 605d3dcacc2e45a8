"""Exact integer products of an int64 matrix through float64 BLAS (solver side; docs/theory.md
section 4.5).

``M v`` and ``M^T v`` for an int64 matrix M and a vector v of Python ints of any size, exactly.
M is split into signed 16-bit limbs (``M = sum_a M_a 2**(16 a)``, entries in [-2**15, 2**16)) and
v into 16-bit limbs (``v = sum_b V_b 2**(16 b)``, entries in (-2**16, 2**16)). Every float64
product ``M_a V_b`` over a contraction of k < 2**21 terms is a sum of integers of magnitude at most
``k 2**32 < 2**53``: each partial sum is an integer float64 holds, so BLAS computes it exactly, in
any order. The limb products are then recombined in int64 with carries (16-bit digits) and read as
Python ints per row. At (20,000, 256) this replaces an ``fmpz_mat`` of the N x m rows (1.3 s to
build from Python ints) by one float copy of the rows and a BLAS product per call.

The checker (`certify.check`) keeps its own independent products; this module only speeds the
solver's exact steps, whose results `certify.bounds` re-proves with exact integers anyway.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

__all__ = ["MAX_TERMS", "matrix_limbs", "limb_product"]

#: longest contraction for which every partial sum of limb products is exact in float64
MAX_TERMS = 1 << 20


def matrix_limbs(M: np.ndarray) -> list[np.ndarray]:
    """Float64 limbs of an int64 matrix: ``M = sum_a limbs[a] 2**(16 a)`` exactly, the last limb
    signed in [-2**15, 2**15), the others in [0, 2**16)."""
    if M.dtype != np.int64:
        raise TypeError("matrix_limbs needs an int64 matrix")
    top = max(int(M.max()), -int(M.min()), 0) if M.size else 0
    t = top.bit_length()
    n = 1 if t <= 15 else 1 + -(-(t - 15) // 16)
    out = [((M >> (16 * a)) & 0xFFFF).astype(np.float64) for a in range(n - 1)]
    out.append((M >> (16 * (n - 1))).astype(np.float64))
    return out


def _vector_limbs(v: Sequence[int]) -> np.ndarray:
    """``(len(v), L)`` float64 limbs with ``v_j = sum_b out[j, b] 2**(16 b)``, |entries| < 2**16."""
    ints = [int(k) for k in v]
    top = max((abs(k).bit_length() for k in ints), default=0)
    L = max(1, -(-top // 16))
    buf = b"".join(abs(k).to_bytes(2 * L, "little") for k in ints)
    limbs = np.frombuffer(buf, dtype="<u2").reshape(len(ints), L).astype(np.float64)
    neg = np.fromiter((k < 0 for k in ints), dtype=bool, count=len(ints))
    limbs[neg] *= -1.0
    return limbs


def limb_product(
    limbs: list[np.ndarray], v: Sequence[int], *, transpose: bool = False
) -> list[int]:
    """Exact ``M v`` (or ``M^T v``) as Python ints, M given by `matrix_limbs`.

    Raises ValueError when the contraction is longer than `MAX_TERMS` (the caller then uses
    exact integer products instead)."""
    k = limbs[0].shape[0 if transpose else 1]
    if k != len(v):
        raise ValueError(f"shape mismatch: {k} columns, vector of {len(v)}")
    if k > MAX_TERMS:
        raise ValueError(f"contraction of {k} terms is beyond {MAX_TERMS}")
    V = _vector_limbs(v)
    L = V.shape[1]
    rows = limbs[0].shape[1 if transpose else 0]
    S = len(limbs) + L + 3
    D = np.zeros((rows, S), dtype=np.int64)
    for a, Ma in enumerate(limbs):
        P = (Ma.T @ V) if transpose else (Ma @ V)  # exact integers below 2**53 in magnitude
        D[:, a : a + L] += P.astype(np.int64)
    for s in range(S - 1):  # carries: digits 0..S-2 in [0, 2**16), the rest in the top digit
        c = D[:, s] >> 16
        D[:, s] -= c << 16
        D[:, s + 1] += c
    low = np.ascontiguousarray(D[:, : S - 1].astype("<u2")).tobytes()
    top = D[:, S - 1].tolist()
    width = 2 * (S - 1)
    shift = 16 * (S - 1)
    return [
        int.from_bytes(low[i * width : (i + 1) * width], "little") + (t << shift)
        for i, t in enumerate(top)
    ]
