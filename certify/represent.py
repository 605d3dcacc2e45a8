"""Coinciding constraint rows (solver side; docs/theory.md section 4.3): the representative of each
row is the first row exactly equal to it. Attention rows ``l z^T`` are compared through the primitive
parts of l and z and the product of their contents (Gauss's lemma); many rows are first grouped by a
modular fingerprint, and only rows sharing one are compared exactly."""

from __future__ import annotations

import math

import numpy as np

__all__ = ["FINGERPRINT_ROWS", "PRIME", "fingerprint_representatives", "primitive"]

#: attention systems with more rows than this are keyed by fingerprints in `representatives`
FINGERPRINT_ROWS = 20_000
PRIME = 2_147_483_647  # 2^31 - 1: products of two residues stay below 2^62


def primitive(v) -> tuple[tuple[int, ...], int]:
    """``v = c * v0`` with v0 primitive and its first nonzero entry positive; returns (v0, c)."""
    ints = [int(k) for k in v]
    g = math.gcd(*ints)
    if g == 0:
        return tuple(ints), 0
    first = next(k for k in ints if k)
    g = g if first > 0 else -g
    return tuple(k // g for k in ints), g


def fingerprint_representatives(ops) -> np.ndarray | None:
    """`certify.ops.ExactOps.representatives` of many attention rows, without a tuple of Python
    ints per row: row ``l z^T`` is fingerprinted by the ratios ``l_j / l_j0`` and ``z_k / z_k0`` modulo a prime
    (j0, k0 the first nonzero entries) and the exact entry ``l_j0 z_k0``; equal rows have equal
    fingerprints, and rows sharing one are compared exactly (`primitive`). None (the caller
    then keys every row exactly) when a first entry is divisible by the prime."""

    def ratios(M: np.ndarray) -> tuple[np.ndarray, np.ndarray, list[int]] | None:
        nz = M != 0
        j0 = np.argmax(nz, axis=1)
        first = M[np.arange(M.shape[0]), j0]
        mod = np.empty(M.shape, dtype=np.int64)
        for r0 in range(0, M.shape[0], 8192):  # a block of rows: no N x d new Python ints
            mod[r0 : r0 + 8192] = M[r0 : r0 + 8192] % PRIME
        head = [int(k) % PRIME for k in first]
        if any(h == 0 and int(k) != 0 for h, k in zip(head, first)):
            return None
        inv = np.array([pow(h, PRIME - 2, PRIME) if h else 0 for h in head], dtype=np.int64)
        return j0, (mod * inv[:, None]) % PRIME, [int(k) for k in first]

    L = ops.L
    lr = ratios(L)
    zr = ratios(ops.Zu)
    if lr is None or zr is None:
        return None
    ex = ops.ex
    zkeys = [(int(j), zr[1][g].tobytes()) for g, j in enumerate(zr[0])]
    rep = np.empty(ops.N, dtype=np.int64)
    seen: dict = {}
    exact: dict = {}  # rows sharing a fingerprint: their exact keys
    for r in range(ops.N):
        g = int(ex[r])
        key = hash((int(lr[0][r]), lr[1][r].tobytes(), zkeys[g], lr[2][r] * zr[2][g]))
        if key not in seen:
            seen[key] = [r]
            rep[r] = r
            continue
        kr = _exact_key(ops, r)
        for s in seen[key]:
            if s not in exact:
                exact[s] = _exact_key(ops, s)
            if exact[s] == kr:
                rep[r] = rep[s]
                break
        else:
            seen[key].append(r)
            exact[r] = kr
            rep[r] = r
    return rep


def _exact_key(ops, r: int) -> tuple:
    kl, kz = primitive(ops.L[r]), primitive(ops.Zu[int(ops.ex[r])])
    return kl[0], kz[0], kl[1] * kz[1]
