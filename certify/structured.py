"""Float products with the structured rows of a constraint system (solver side; docs/theory.md section 4.5).

An attention row is ``a_r = vec(l_r z_e(r)^T)`` (row-major, so ``a_r^T vec(W) = l_r^T W z_e(r)``),
with one right factor ``z_e`` per example. Hence, for N rows, n examples and d x d variables,

- ``A w = rowwise l_r^T (W z_e(r))``: ``U = Z W^T`` (n x d), then a row-wise dot product, O(n d^2 + N d);
- ``A^T lam = S^T Z`` with ``S_e = sum_{r in e} lam_r l_r`` (n x d), O(N d + n d^2);

never the N x d^2 matrix. Dense rows are formed only for a working set of rows (`RowFactors.rows`).
Decoder rows are plain ``l_r`` (the variable has d entries). Floats are for solvers only, never
evidence: the exact products live in `certify.ops`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from certify.rows import ConstraintSystem

__all__ = ["RowFactors", "row_factors"]


def _to_float(ints: np.ndarray, exp: int) -> np.ndarray:
    """Nearest float64 of ``ints * 2**exp`` (int64 or object integers); +-inf/0 beyond the range."""
    from certify.exact import ldexp_array

    if ints.dtype == object:
        try:  # fast path: float(int) rounds correctly, ldexp by a power of two is exact in range
            with np.errstate(over="ignore", under="ignore"):
                return np.ldexp(ints.astype(np.float64), exp)
        except OverflowError:  # integers beyond the float range (subnormal data)
            pass
    return ldexp_array(ints, exp)


@dataclass(frozen=True, eq=False)
class RowFactors:
    """Float64 factors of the rows of one `ConstraintSystem` (solver use only).

    Attributes:
        kind: "attention" or "decoder".
        d: token dimension (the variable has ``m = d*d`` or ``d`` entries).
        left: (N, d) left factors ``l_r``.
        right: (n, d) distinct right factors ``z_e`` (attention), else None.
        example: (N,) int64 index into ``right`` of each row (attention), else None.
        padded: the left factors grouped by example, (n, k, d) with k the most rows of an example
            (zero rows pad the others; a view of ``left`` when every example has k rows in order);
            None when the rows are sorted by example and every example has one (a subset of rows,
            `certify.workingset`: products by gathering and summing rows instead).
        slot: (N,) position of each row in ``padded.reshape(n * k, d)``, or None when it is the
            identity.
    """

    kind: str
    d: int
    left: np.ndarray
    right: np.ndarray | None = None
    example: np.ndarray | None = None
    padded: np.ndarray | None = None
    slot: np.ndarray | None = None

    @property
    def N(self) -> int:
        return self.left.shape[0]

    @property
    def m(self) -> int:
        return self.d * self.d if self.kind == "attention" else self.d

    def matvec(self, w: np.ndarray) -> np.ndarray:
        """``A w`` (length N) for ``w`` of length m."""
        w = np.asarray(w, dtype=np.float64)
        if self.right is None:
            return self.left @ w
        U = self.right @ w.reshape(self.d, self.d).T  # (n, d): W z_e
        if self.padded is None:  # rows sorted by example, not padded: one gathered row product
            return np.einsum("rd,rd->r", self.left, U[self.example])
        out = np.einsum("ekd,ed->ek", self.padded, U).ravel()
        return out if self.slot is None else out[self.slot]

    def rmatvec(self, lam: np.ndarray) -> np.ndarray:
        """``A^T lam`` (length m) for ``lam`` of length N."""
        lam = np.asarray(lam, dtype=np.float64)
        if self.right is None:
            return self.left.T @ lam
        if self.padded is None:  # rows sorted by example, every example present
            starts = np.flatnonzero(np.r_[True, self.example[1:] != self.example[:-1]])
            S = np.add.reduceat(self.left * lam[:, None], starts, axis=0)
            return (S.T @ self.right).ravel()
        n, k, _ = self.padded.shape
        if self.slot is None:
            lp = lam.reshape(n, k)
        else:
            lp = np.zeros(n * k)
            lp[self.slot] = lam
            lp = lp.reshape(n, k)
        S = np.einsum("ek,ekd->ed", lp, self.padded)  # (n, d): sum_{r in e} lam_r l_r
        return (S.T @ self.right).ravel()

    def rows(self, idx: np.ndarray) -> np.ndarray:
        """Dense float rows ``A[idx]`` (len(idx) x m): for a working set of rows only."""
        idx = np.asarray(idx, dtype=np.int64)
        if self.right is None:
            return self.left[idx]
        return (self.left[idx, :, None] * self.right[self.example[idx]][:, None, :]).reshape(
            len(idx), self.m
        )

    def row_norms(self) -> np.ndarray:
        """Euclidean norms ``||a_r||_2 = ||l_r|| ||z_e(r)||``."""
        out = np.linalg.norm(self.left, axis=1)
        if self.right is not None:
            out = out * np.linalg.norm(self.right, axis=1)[self.example]
        return out


def row_factors(cs: ConstraintSystem) -> RowFactors:
    """The float factors of ``cs`` (cached on the system)."""

    def build() -> RowFactors:
        left = _to_float(cs.left.ints, cs.left.exp)
        if cs.kind != "attention":
            return RowFactors(cs.kind, cs.d, left, None, None)
        else:
            ex = np.fromiter((r[0] for r in cs.index), dtype=np.int64, count=cs.N)
            _, first, local = np.unique(ex, return_index=True, return_inverse=True)
            local = local.astype(np.int64).ravel()
            if not np.array_equal(cs.right.ints[first][local], cs.right.ints):
                raise ValueError("attention rows of one example must share their right factor")
            right = _to_float(cs.right.ints[first], cs.right.exp)
            n = len(first)
            counts = np.bincount(local, minlength=n)
            k = int(counts.max())
            order = np.argsort(local, kind="stable")
            rank = np.empty(cs.N, dtype=np.int64)
            rank[order] = np.arange(cs.N) - np.repeat(np.cumsum(counts) - counts, counts)
            slot = local * k + rank
            if cs.N == n * k and np.array_equal(
                slot, np.arange(cs.N)
            ):  # only the last examples short: padded
                padded, slot = left.reshape(n, k, cs.d), None
            else:
                padded = np.zeros((n * k, cs.d))
                padded[slot] = left
                padded = padded.reshape(n, k, cs.d)
            return RowFactors(cs.kind, cs.d, left, right, local, padded, slot)

    return cs.derived("row_factors", build)
