"""Exact integer products with a constraint matrix (solver side; docs/theory.md section 4).

``A = Z 2**eA`` with Z an integer matrix. For the attention SVM a row is ``vec(l_r r_r^T)`` and
all rows of example i share ``r_r = z_i``, so with the distinct right factors ``Zu`` (n x d):
``(Z w)_r = l_r^T (W Zu^T)[:, i(r)]`` and ``Z^T lam = (sum_{r in i} lam_r l_r)_i^T Zu``: python-flint
``fmpz_mat`` products of sizes d x d x n and N x d x n instead of an N x d^2 integer matrix.
The same structure gives the float Hessian ``A_S diag(D) A_S^T`` in O(n^2 d^2 + N^2 d) instead of
O(N^2 d^2). The checker (`certify.check`) has its own independent copy of the exact products.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from certify.problem import ConstraintSystem

__all__ = ["ExactOps", "ldexp_int", "int_vector_to_float"]


def ldexp_int(k: int, e: int) -> float:
    """``k * 2**e`` as float64 (no OverflowError on huge k; +-inf beyond the float range)."""
    k = int(k)
    if k == 0:
        return 0.0
    bits = abs(k).bit_length()
    shift = max(0, bits - 60)
    top = (abs(k) >> shift)
    sign = 1.0 if k > 0 else -1.0
    try:
        return sign * math.ldexp(float(top), e + shift)
    except OverflowError:
        return sign * math.inf


def int_vector_to_float(ints: Sequence[int], e: int) -> np.ndarray:
    return np.fromiter((ldexp_int(k, e) for k in ints), dtype=np.float64, count=len(ints))


def _fmpz(rows: int, cols: int, values) -> "object":
    import flint

    return flint.fmpz_mat(rows, cols, [int(k) for k in values])


class ExactOps:
    """Exact products ``Z w`` and ``Z^T lam`` for one `ConstraintSystem` (optionally a row subset)."""

    def __init__(self, cs: ConstraintSystem, rows: Sequence[int] | None = None) -> None:
        self.cs = cs
        self.kind = cs.kind
        self.d = cs.d
        self.m = cs.m
        self.rows = np.arange(cs.N) if rows is None else np.asarray(rows, dtype=np.int64)
        self.N = len(self.rows)
        self.L = cs.left.as_object()[self.rows]
        self.Lmat = _fmpz(self.N, self.d, self.L.ravel())
        self.LmatT = self.Lmat.transpose()
        if cs.kind == "attention":
            self.R = cs.right.as_object()[self.rows]
            self.exp = cs.left.exp + cs.right.exp
            ex = np.array([cs.index[r][0] for r in self.rows], dtype=np.int64)
            self.groups, self.ex = np.unique(ex, return_inverse=True)  # local example id per row
            first = np.array([np.flatnonzero(self.ex == g)[0] for g in range(len(self.groups))], dtype=np.int64)
            self.Zu = self.R[first]  # distinct right factors (one per example)
            self.Zmat = _fmpz(len(first), self.d, self.Zu.ravel())
        else:
            self.R = None
            self.exp = cs.left.exp

    def subset(self, rows: Sequence[int]) -> "ExactOps":
        return ExactOps(self.cs, self.rows[np.asarray(rows, dtype=np.int64)])

    def matvec(self, w: Sequence[int]) -> list[int]:
        """Integers of ``Z w`` (value ``* 2**(exp + exp_w)``)."""
        if self.kind == "attention":
            V = _fmpz(self.d, self.d, w) * self.Zmat.transpose()  # d x n: W z_i
            P = self.Lmat * V  # N x n
            n = len(self.groups)
            ent = P.entries()
            return [int(ent[r * n + int(g)]) for r, g in enumerate(self.ex)]
        return [int(x) for x in (self.Lmat * _fmpz(self.d, 1, w)).entries()]

    def rmatvec(self, lam: Sequence[int]) -> list[int]:
        """Integers of ``Z^T lam`` (length m; value ``* 2**(exp + exp_lam)``)."""
        if self.kind == "attention":
            n = len(self.groups)
            B = [0] * (n * self.N)
            for r, (g, v) in enumerate(zip(self.ex, lam)):
                B[int(g) * self.N + r] = int(v)
            S = _fmpz(n, self.N, B) * self.Lmat  # n x d: sum_{r in i} lam_r l_r
            return [int(x) for x in (S.transpose() * self.Zmat).entries()]
        return [int(x) for x in (self.LmatT * _fmpz(self.N, 1, lam)).entries()]

    def gram(self):
        """Exact ``Z Z^T`` as an ``fmpz_mat`` (value ``* 2**(2 exp)``)."""
        import flint

        G = self.Lmat * self.LmatT
        if self.kind == "attention":
            H = self.Zmat * self.Zmat.transpose()
            n = len(self.groups)
            he = np.array([int(x) for x in H.entries()], dtype=object).reshape(n, n)
            ge = np.array([int(x) for x in G.entries()], dtype=object).reshape(self.N, self.N)
            g = ge * he[np.ix_(self.ex, self.ex)]
            return flint.fmpz_mat(self.N, self.N, [int(x) for x in g.ravel()])
        return G

    def float_rows(self) -> np.ndarray:
        """Float64 rows (for solvers only; attention: products of the rounded float factors)."""
        if self.kind != "attention":
            return self.cs.rows()[self.rows]
        key = "float_rows_from_factors"
        if key not in self.cs._cache:
            full = ExactOps(self.cs) if self.N != self.cs.N else self
            Lf, Zf = full.float_factors()
            self.cs._cache[key] = (Lf[:, :, None] * Zf[full.ex][:, None, :]).reshape(full.N, full.m)
        return self.cs._cache[key][self.rows]

    def float_factors(self) -> tuple[np.ndarray, np.ndarray | None]:
        """Float64 left factors (N x d) and distinct right factors (n x d, attention only)."""
        Lf = int_matrix_to_float(self.L, self.cs.left.exp)
        Zf = int_matrix_to_float(self.Zu, self.cs.right.exp) if self.kind == "attention" else None
        return Lf, Zf

    def hessian(self, D: np.ndarray, free: np.ndarray | None = None, *, Lf=None, Zf=None) -> np.ndarray:
        """Float ``A_F diag(D) A_F^T`` for rows F (mask) of this system, D of length m (>= 0)."""
        F = np.arange(self.N) if free is None else np.flatnonzero(free)
        if Lf is None:
            Lf, Zf = self.float_factors()
        if self.kind != "attention":
            B = Lf[F] * np.sqrt(D)
            return B @ B.T
        Dm = D.reshape(self.d, self.d)
        # C[i, k, j] = sum_l Dm[j, l] z_i[l] z_k[l]
        C = np.einsum("il,kl,jl->ikj", Zf, Zf, Dm, optimize=True)
        exF = self.ex[F]
        LF = Lf[F]
        H = np.empty((len(F), len(F)))
        groups = [np.flatnonzero(exF == g) for g in range(len(self.groups))]
        for gi, ri in enumerate(groups):
            if not len(ri):
                continue
            for gk, rk in enumerate(groups):
                if len(rk) and gk >= gi:
                    blk = (LF[ri] * C[gi, gk]) @ LF[rk].T
                    H[np.ix_(ri, rk)] = blk
                    if gk != gi:
                        H[np.ix_(rk, ri)] = blk.T
        return H

    def representatives(self) -> np.ndarray:
        """For each row, the (local) index of the first row equal to it exactly (coinciding
        constraints, e.g. a duplicated token). Attention rows ``l z^T`` are compared through the
        primitive parts of l and z and the product of their contents (Gauss's lemma)."""
        keys: dict = {}
        rep = np.empty(self.N, dtype=np.int64)
        for r in range(self.N):
            key = _primitive(self.L[r])
            if self.R is not None:
                kz = _primitive(self.R[r])
                key = (key[0], kz[0], key[1] * kz[1])
            rep[r] = keys.setdefault(key, r)
        return rep

    def structural_zero_columns(self) -> np.ndarray:
        """Boolean mask of columns that are identically zero on these rows."""
        Lnz = (self.L != 0).astype(np.int64)
        if self.kind == "attention":
            Rnz = (self.R != 0).astype(np.int64)
            return ((Lnz.T @ Rnz) == 0).ravel()
        return ~Lnz.any(axis=0)


def _primitive(v) -> tuple[tuple[int, ...], int]:
    """``v = c * v0`` with v0 primitive and its first nonzero entry positive; returns (v0, c)."""
    ints = [int(k) for k in v]
    g = math.gcd(*ints)
    if g == 0:
        return tuple(ints), 0
    first = next(k for k in ints if k)
    g = g if first > 0 else -g
    return tuple(k // g for k in ints), g


def float_to_fixed(x: float, e: int) -> int:
    """Nearest integer to ``x * 2**-e`` computed exactly (no float overflow for large shifts)."""
    if x == 0 or not math.isfinite(x):
        return 0
    man, ex = math.frexp(x)
    k = int(man * (1 << 53))
    s = ex - 53 - e
    return k << s if s >= 0 else (k + (1 << (-s - 1))) >> (-s)


def int_matrix_to_float(M: np.ndarray, e: int) -> np.ndarray:
    if M.dtype != object:
        return np.ldexp(M.astype(np.float64), e)
    return np.array([[ldexp_int(k, e) for k in row] for row in M], dtype=np.float64).reshape(M.shape)
