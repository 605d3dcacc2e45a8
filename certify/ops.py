"""Exact integer products with a constraint matrix (solver side; SPEC section 4).

``A = Z 2**eA`` with Z an integer matrix. For the attention SVM a row is ``vec(l_r r_r^T)`` so
``(Z w)_r = l_r^T W r_r`` and ``Z^T lam = L^T diag(lam) R``: d x d python-flint ``fmpz_mat``
products instead of an N x d^2 integer matrix. The checker (`certify.check`) has its own copy of
these few lines on purpose (independence).
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


class ExactOps:
    """Exact products ``Z w`` and ``Z^T lam`` for one `ConstraintSystem` (optionally a row subset)."""

    def __init__(self, cs: ConstraintSystem, rows: Sequence[int] | None = None) -> None:
        import flint

        self.cs = cs
        self.kind = cs.kind
        self.d = cs.d
        self.m = cs.m
        self.rows = np.arange(cs.N) if rows is None else np.asarray(rows, dtype=np.int64)
        self.N = len(self.rows)
        L = cs.left.as_object()[self.rows]
        self.L = L
        self.Lmat = flint.fmpz_mat(self.N, self.d, [int(k) for k in L.ravel()])
        self.LmatT = self.Lmat.transpose()
        if cs.kind == "attention":
            self.R = cs.right.as_object()[self.rows]
            self.exp = cs.left.exp + cs.right.exp
        else:
            self.R = None
            self.exp = cs.left.exp

    def subset(self, rows: Sequence[int]) -> "ExactOps":
        return ExactOps(self.cs, self.rows[np.asarray(rows, dtype=np.int64)])

    def matvec(self, w: Sequence[int]) -> list[int]:
        """Integers of ``Z w`` (value ``* 2**(exp + exp_w)``)."""
        import flint

        if self.kind == "attention":
            W = flint.fmpz_mat(self.d, self.d, [int(k) for k in w])
            P = np.array([int(x) for x in (self.Lmat * W).entries()], dtype=object).reshape(self.N, self.d)
            return [int(x) for x in (P * self.R).sum(axis=1)]
        col = flint.fmpz_mat(self.d, 1, [int(k) for k in w])
        return [int(x) for x in (self.Lmat * col).entries()]

    def rmatvec(self, lam: Sequence[int]) -> list[int]:
        """Integers of ``Z^T lam`` (length m; value ``* 2**(exp + exp_lam)``)."""
        import flint

        lam_arr = np.array([int(k) for k in lam], dtype=object)
        if self.kind == "attention":
            D = self.R * lam_arr[:, None]
            Dm = flint.fmpz_mat(self.N, self.d, [int(k) for k in D.ravel()])
            return [int(x) for x in (self.LmatT * Dm).entries()]
        col = flint.fmpz_mat(self.N, 1, [int(k) for k in lam_arr])
        return [int(x) for x in (self.LmatT * col).entries()]

    def gram(self):
        """Exact ``Z Z^T`` as an ``fmpz_mat`` (value ``* 2**(2 exp)``)."""
        import flint

        G = self.Lmat * self.LmatT
        if self.kind == "attention":
            Rm = flint.fmpz_mat(self.N, self.d, [int(k) for k in self.R.ravel()])
            H = Rm * Rm.transpose()
            g = [int(a) * int(b) for a, b in zip(G.entries(), H.entries())]
            return flint.fmpz_mat(self.N, self.N, g)
        return G

    def float_rows(self) -> np.ndarray:
        return self.cs.rows()[self.rows]

    def structural_zero_columns(self) -> np.ndarray:
        """Boolean mask of columns that are identically zero on these rows."""
        Lnz = (self.L != 0).astype(np.int64)
        if self.kind == "attention":
            Rnz = (self.R != 0).astype(np.int64)
            return ((Lnz.T @ Rnz) == 0).ravel()
        return ~Lnz.any(axis=0)
