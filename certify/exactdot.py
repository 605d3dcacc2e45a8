"""Exact products ``A @ b`` of float64 data through float64 matrix products of small integers
(docs/theory.md section 1.2).

A float64 ``x`` is ``k 2^e`` with an odd integer ``|k| < 2^53`` (`certify.exact.odd_mantissas`). Over
the common exponent ``c`` of its array (the `certify.exact.dyadic` exponent), ``x = k 2^s 2^c`` with
``s = e - c >= 0``. Writing ``s = 21 q + r`` (``0 <= r < 21``) and ``|k| = h 2^27 + l`` (``h < 2^26``,
``l < 2^27``): ``|k| 2^s = (l 2^r) 2^(21 q) + (h 2^(r + 6)) 2^(21 (q + 1))`` with ``l 2^r < 2^47`` and
``h 2^(r + 6) < 2^52``, two integers cut into 21-bit limbs at their place. So every entry is a
signed vector of limbs of magnitude below ``2^22`` (a limb sums at most two pieces below ``2^21``).
A product of two limbs is an integer below ``2^44``; a sum of 256 of them is below ``2^52``: the
float64 matrix product over 256 terms of ``d`` at a time is therefore exact (every partial sum is an
integer below ``2^53``, whatever the summation order of the BLAS). The pieces and the limb diagonals
``D_j = sum_{k + l = j} a_k b_l`` are summed in int64 while fewer than ``2^11`` terms below ``2^52``
meet (else as Python integers), and ``A @ b = sum_j D_j 2^(21 j)`` is formed as one Python integer
per entry of the result, not per entry of ``A``. The result equals ``dyadic(A).ints @
dyadic(b).ints`` exactly (tested against it and against Fractions), for a fraction of the time and
memory of products of Python integers.
"""

from __future__ import annotations

import numpy as np

from certify.exact import odd_mantissas

__all__ = ["exact_dot"]

LIMB = 21
_MASK = (1 << LIMB) - 1


def _limbs(k: np.ndarray, e: np.ndarray, nz: np.ndarray, c: int, K: int) -> np.ndarray:
    """Signed 21-bit limbs ``L`` (``K`` of them, ``|L| < 2^22``) of the values ``k 2^e`` (from
    `certify.exact.odd_mantissas`) over the exponent ``c <= e``: ``k 2^e == sum_j L[..., j] 2^(21 j)
    2^c`` exactly. ``K`` must exceed ``(max e - c) // 21 + 3``."""
    q, r = np.divmod(np.where(nz, e - c, 0), LIMB)
    mag = np.abs(k)
    base = np.arange(k.size, dtype=np.int64) * K
    index, value = [], []
    for part, at in (((mag & ((1 << 27) - 1)) << r, q), ((mag >> 27) << (r + 6), q + 1)):
        for j in range(3):  # part < 2^52: three 21-bit limbs from position ``at``
            index.append(base + (at + j).ravel())
            value.append(((part >> (LIMB * j)) & _MASK).ravel())
    # a limb receives at most two values below 2^21: their float64 sum is an exact integer
    sums = np.bincount(
        np.concatenate(index),
        weights=np.concatenate(value).astype(np.float64),
        minlength=k.size * K,
    )
    return sums.reshape(k.shape + (K,)) * np.sign(k)[..., None]


def _exponents(k: np.ndarray, e: np.ndarray, nz: np.ndarray) -> tuple[int, int]:
    """(the common exponent, the number of limbs) of an array's odd mantissas."""
    if not np.any(nz):
        return 0, 4
    c = int(e[nz].min())
    return c, 4 + (int(e[nz].max()) - c) // LIMB


def exact_dot(A: np.ndarray, b: np.ndarray, *, block_bytes: int = 1 << 25):
    """``(S, E)`` with ``A @ b == S * 2^E`` exactly: ``A`` float64 of shape ``(..., d)``, ``b``
    float64 of shape ``(d,)``, ``S`` an object array of Python ints of shape ``A.shape[:-1]``, ``E``
    the sum of the `dyadic` exponents of ``A`` and ``b`` (so ``S == dyadic(A).ints @ dyadic(b).ints``).

    Two passes over blocks of rows of ``A`` (about ``block_bytes`` of limbs each): the first finds
    the common exponent and the number of limbs, the second forms the products, so the memory is
    that of one block plus the result. The limb products go through float64 matrix products over
    pieces of 256 terms of ``d`` (module docstring: every partial sum is an integer below ``2^53``)."""
    A = np.asarray(A, dtype=np.float64)
    lead, d = A.shape[:-1], A.shape[-1]
    b = np.asarray(b, dtype=np.float64)
    if b.shape != (d,):
        raise ValueError(f"b must have shape ({d},) to match A's last axis, got {b.shape}")
    kb, eb, nzb = odd_mantissas(b)
    cb, Kb = _exponents(kb, eb, nzb)
    Lb = _limbs(kb, eb, nzb, cb, Kb)  # (d, Kb), float64 integers
    flat = A.reshape(-1, d)
    rows = max(1, block_bytes // (8 * 24 * max(1, d)))  # the first pass: a few int64 per entry
    lo = hi = None
    for start in range(0, flat.shape[0], rows):
        _, e, nz = odd_mantissas(flat[start : start + rows])
        if np.any(nz):
            lo = int(e[nz].min()) if lo is None else min(lo, int(e[nz].min()))
            hi = int(e[nz].max()) if hi is None else max(hi, int(e[nz].max()))
    ca, Ka = (0, 4) if lo is None else (lo, 4 + (hi - lo) // LIMB)
    out = np.zeros(flat.shape[0], dtype=object)
    rows = max(1, block_bytes // (8 * max(1, d) * (Ka + 8)))
    piece = 256
    small = -(-d // piece) * min(Ka, Kb) < 1 << 11
    for start in range(0, flat.shape[0], rows):
        sl = slice(start, start + rows)
        La = _limbs(*odd_mantissas(flat[sl]), ca, Ka)  # (r, d, Ka)
        P = np.zeros((La.shape[0], Ka, Kb), dtype=np.int64 if small else object)
        for d0 in range(0, d, piece):
            left = La[:, d0 : d0 + piece].transpose(0, 2, 1).reshape(-1, min(piece, d - d0))
            part = (left @ Lb[d0 : d0 + piece]).reshape(P.shape)  # one GEMM: exact, below 2^52
            P += part.astype(np.int64).astype(P.dtype)
        total = np.zeros(La.shape[0], dtype=object)
        for j in range(Ka + Kb - 1):  # int64 when `small`: fewer than 2^11 terms below 2^52
            diag = sum(P[:, m, j - m] for m in range(max(0, j - Kb + 1), min(Ka, j + 1)))
            total += diag.astype(object) << (LIMB * j)
        out[sl] = total
    return out.reshape(lead), ca + cb
