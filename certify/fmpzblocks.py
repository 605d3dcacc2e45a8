"""Exact integer row blocks for python-flint products, split to stay small (solver side; the
checker has its own products).

FLINT keeps an ``fmpz`` below 2^62 inline, 8 bytes, and a wider one as a pointer to a GMP integer:
about 57 bytes an entry, measured for 73-bit entries, against 24 for the two halves of a split
one. Float data of wide range gives such entries (at (10^4,32,64) planted: 73 bits, 900 MB of
blocks whole). A block ``B`` with wider entries is kept as ``S = [hi; lo]``, ``B = hi 2^k + lo``:
``B x`` is the first half of ``S x`` shifted by k plus the second, and ``v^T B`` is
``[v 2^k, v]^T S``, one FLINT product each, exact.
"""

from __future__ import annotations

import numpy as np

__all__ = ["rows_fmpz", "split_block", "block_times", "times_block"]


def rows_fmpz(ints: np.ndarray, rows: np.ndarray | None = None):
    """``fmpz_mat`` of the integer rows ``ints[rows]`` (all rows when None): int64 rows go to
    flint as the Python ints of ``tolist`` (no object copy of the system), object rows entry by
    entry as Python ints."""
    import flint

    sub = ints if rows is None else ints[rows]
    n, d = sub.shape
    vals = sub.ravel().tolist() if sub.dtype != object else [int(v) for v in sub.ravel()]
    return flint.fmpz_mat(n, d, vals)


def split_block(sub: np.ndarray) -> tuple[object, int]:
    """``(S, k)`` for the integer rows ``sub`` (T x d, int64 or Python ints): ``S`` the
    ``fmpz_mat`` of sub when every entry fits in 62 bits (k = 0), else ``S = [hi; lo]`` (2T x d)
    with ``sub = hi 2^k + lo``, ``0 <= lo < 2^k``, k half the widest entry's bits."""
    import flint

    T, d = sub.shape
    if sub.dtype != object:
        return rows_fmpz(sub), 0
    flat = sub.ravel().tolist()
    bits = max((abs(v).bit_length() for v in flat), default=0)
    if bits <= 62:
        return rows_fmpz(sub), 0
    k = (bits + 1) // 2
    hi = [v >> k for v in flat]  # floor: lo = v - hi 2^k lies in [0, 2^k)
    lo = [v - (h << k) for v, h in zip(flat, hi)]
    return flint.fmpz_mat(2 * T, d, hi + lo), k


def block_times(blk: tuple[object, int], x) -> list[int]:
    """The T integers of ``block x`` for an ``fmpz_mat`` column x (d x 1)."""
    S, k = blk
    vals = [int(v) for v in (S * x).entries()]
    if not k:
        return vals
    T = len(vals) // 2
    return [(a << k) + b for a, b in zip(vals[:T], vals[T:])]


def times_block(vec: list[int], blk: tuple[object, int]) -> list:
    """The d entries of ``vec^T block`` for T integers vec (python-flint integers)."""
    import flint

    S, k = blk
    if k:
        vec = [v << k for v in vec] + vec  # [v 2^k, v] [hi; lo] = v (hi 2^k + lo)
    return (flint.fmpz_mat(1, len(vec), vec) * S).entries()
