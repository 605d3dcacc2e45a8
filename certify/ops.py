"""Exact integer products with a constraint matrix (solver side; docs/theory.md section 4).

``A = Z 2**eA`` with Z an integer matrix. For the attention SVM a row is ``vec(l_r r_r^T)`` and
all rows of example i share ``r_r = z_i``, so with the distinct right factors ``Zu`` (n x d):
``(Z w)_r = l_r^T (W Zu^T)[:, i(r)]`` and ``Z^T lam = (sum_{r in i} lam_r l_r)_i^T Zu``: one python-flint
``fmpz_mat`` product of sizes n x d x d and, per example i, one of its rows' left factors
(k_i x d) with a d-vector: O(N d + n d^2) integer operations, never an N x d^2 or N x n matrix.
The same structure gives the float Hessian ``A_S diag(D) A_S^T`` in O(n^2 d^2 + N^2 d) instead of
O(N^2 d^2). The checker (`certify.check`) has its own independent copy of the exact products.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from certify.problem import ConstraintSystem
from certify import represent
from certify.represent import primitive
from certify.fmpzblocks import block_times, rows_fmpz, split_block, times_block
from certify.splitdot import MAX_TERMS, limb_product, matrix_limbs

__all__ = ["ExactOps", "ldexp_int", "int_vector_to_float"]


def ldexp_int(k: int, e: int) -> float:
    """``k * 2**e`` as float64 (no OverflowError on huge k; +-inf beyond the float range)."""
    k = int(k)
    if k == 0:
        return 0.0
    bits = abs(k).bit_length()
    shift = max(0, bits - 60)
    top = abs(k) >> shift
    sign = 1.0 if k > 0 else -1.0
    try:
        return sign * math.ldexp(float(top), e + shift)
    except OverflowError:
        return sign * math.inf


def int_vector_to_float(ints: Sequence[int], e: int) -> np.ndarray:
    return np.fromiter((ldexp_int(k, e) for k in ints), dtype=np.float64, count=len(ints))


def _fmpz(rows: int, cols: int, values) -> "object":
    """``fmpz_mat`` of ``values``, each taken as a Python int."""
    import flint

    return flint.fmpz_mat(rows, cols, [int(k) for k in values])


class _Layout:
    """Per-system exact data shared by every `ExactOps` of one `ConstraintSystem` (cached on it):
    object copies of the factors, the example of each row and its offset in the example, and the
    per-example ``fmpz_mat`` blocks of left factors (built on first use)."""

    def __init__(self, cs: ConstraintSystem) -> None:
        self._cs = cs
        self._L = None
        self._R = None
        self.blocks: dict[int, object] = {}
        if cs.kind != "attention":
            return
        from certify.structured import row_factors

        rf = row_factors(cs)  # the example grouping (and the check that its rows share z)
        self.ex = rf.example
        n = int(self.ex.max()) + 1 if cs.N else 0
        counts = np.bincount(self.ex, minlength=n)
        order = np.argsort(self.ex, kind="stable")
        self.members = np.split(order, np.cumsum(counts)[:-1]) if n else []  # rows of each example
        self.offset = np.empty(cs.N, dtype=np.int64)
        for rows in self.members:
            self.offset[rows] = np.arange(len(rows))
        first = [int(r[0]) for r in self.members]
        self.Zu = _objects(cs.right.ints[first] if n else cs.right.ints[:0])

    @property
    def L(self) -> np.ndarray:
        """Object copy of the left factors, made on first use (plain int64 rows rarely need it:
        48 bytes an entry, 2.4 GB at 10^5 x 512)."""
        if self._L is None:
            self._L = _objects(self._cs.left.ints)
        return self._L

    @property
    def R(self) -> np.ndarray | None:
        """Object copy of the right factors (one per row; attention), made on first use."""
        if self._R is None and self._cs.right is not None:
            self._R = _objects(self._cs.right.ints)
        return self._R

    def left_rows(self, rows: np.ndarray) -> np.ndarray:
        """The left factors of ``rows`` as Python ints, without an object copy of the whole
        system when the factors are int64."""
        return _objects((self._cs.left.ints if self._L is None else self._L)[rows])

    def right_rows(self, rows: np.ndarray) -> np.ndarray | None:
        """The right factors of ``rows`` (attention) as Python ints, else None (as `left_rows`)."""
        if self._cs.right is None:
            return None
        return _objects((self._cs.right.ints if self._R is None else self._R)[rows])

    def block(self, e: int) -> tuple[object, int]:
        """``(S, k)``: the left factors of example e's rows (in their order) as an ``fmpz_mat``,
        kept for reuse (rebuilding the blocks at each product costs ten times the product,
        measured at (2000,32,64) with 73-bit float data: 5.0 s against 0.4 s of CPU). Entries of
        more than 62 bits are split, ``l = hi 2^k + lo`` with ``S = [hi; lo]`` (2T x d): FLINT
        keeps an entry below 2^62 inline, 8 bytes, and a wider one as a pointer to a GMP integer,
        about 57 bytes (measured); at (10^4,32,64) with 73-bit data the blocks took about 900 MB
        whole. ``k = 0``: S is the block itself. See `certify.fmpzblocks`."""
        if e not in self.blocks:
            self.blocks[e] = split_block(self._cs.left.ints[self.members[e]])
        return self.blocks[e]


def _objects(ints: np.ndarray) -> np.ndarray:
    """``ints`` as an object array of Python ints (itself when it is one: no copy; never mutated)."""
    return ints if ints.dtype == object else ints.astype(object)


def _layout(cs: ConstraintSystem) -> _Layout:
    return cs.derived("exact_layout", lambda: _Layout(cs))


class ExactOps:
    """Exact products ``Z w`` and ``Z^T lam`` for one `ConstraintSystem` (optionally a row subset).

    Attention products go example by example (``fmpz_mat`` blocks of d columns), so they cost
    O(N d + n d^2) integer operations and memory: never an N x d^2 or N x n matrix."""

    def __init__(self, cs: ConstraintSystem, rows: Sequence[int] | None = None) -> None:
        self.cs = cs
        self.kind = cs.kind
        self.d = cs.d
        self.m = cs.m
        self.rows = np.arange(cs.N) if rows is None else np.asarray(rows, dtype=np.int64)
        self.N = len(self.rows)
        self._lay = _layout(cs)
        self._cache: dict = {}
        if cs.kind == "attention":
            self.exp = cs.left.exp + cs.right.exp
            self.groups, self.ex = np.unique(
                self._lay.ex[self.rows], return_inverse=True
            )  # local example id per row
            self.ex = self.ex.ravel()
            self.Zu = self._lay.Zu[self.groups]  # distinct right factors (one per example)
            self.Zmat = _fmpz(len(self.groups), self.d, self.Zu.ravel())
            order = np.argsort(self.ex, kind="stable")
            counts = np.bincount(self.ex, minlength=len(self.groups))
            self._members = np.split(order, np.cumsum(counts)[:-1]) if len(self.groups) else []
        else:
            self.exp = cs.left.exp

    @property
    def L(self) -> np.ndarray:
        """Exact left factors of these rows (object array of Python ints, N x d)."""
        return self._lay.L if self.N == self.cs.N else self._lay.left_rows(self.rows)

    @property
    def R(self) -> np.ndarray | None:
        """Exact right factors of these rows (attention), else None."""
        return self._lay.R if self.N == self.cs.N else self._lay.right_rows(self.rows)

    def subset(self, rows: Sequence[int]) -> "ExactOps":
        return ExactOps(self.cs, self.rows[np.asarray(rows, dtype=np.int64)])

    def _lmat(self):
        if "Lmat" not in self._cache:

            def build():
                return rows_fmpz(self.cs.left.ints, None if self.N == self.cs.N else self.rows)

            # one fmpz_mat of the whole system, shared by its ExactOps
            self._cache["Lmat"] = self.cs.derived("Lmat", build) if self.N == self.cs.N else build()
        return self._cache["Lmat"]

    def _limbs(self) -> list[np.ndarray] | None:
        """Float64 limbs of plain int64 rows (`certify.splitdot`), None for other systems."""
        if "limbs" not in self._cache:
            ints = self.cs.left.ints
            limbs = None
            if self.kind != "attention" and ints.dtype == np.int64 and self.d <= MAX_TERMS:
                full = self.cs.derived("split_limbs", lambda: matrix_limbs(ints))
                limbs = full if self.N == self.cs.N else [a[self.rows] for a in full]
            self._cache["limbs"] = limbs
        return self._cache["limbs"]

    def matvec(self, w: Sequence[int]) -> list[int]:
        """Integers of ``Z w`` (value ``* 2**(exp + exp_w)``)."""
        import flint

        if self.kind != "attention":
            limbs = self._limbs()
            if limbs is not None:  # exact through float64 BLAS (16-bit limbs)
                return limb_product(limbs, w)
            return [int(x) for x in (self._lmat() * _fmpz(self.d, 1, w)).entries()]
        d = self.d
        U = (self.Zmat * _fmpz(d, d, w).transpose()).entries()  # row g: (W z_g)^T
        out = [0] * self.N
        for g, mine in enumerate(self._members):
            rows = self.rows[mine]
            blk = self._lay.block(int(self.groups[g]))
            vals = block_times(blk, flint.fmpz_mat(d, 1, U[g * d : (g + 1) * d]))
            for r, o in zip(mine.tolist(), self._lay.offset[rows].tolist()):
                out[r] = vals[o]
        return out

    def rmatvec(self, lam: Sequence[int]) -> list[int]:
        """Integers of ``Z^T lam`` (length m; value ``* 2**(exp + exp_lam)``)."""
        import flint

        if self.kind != "attention":
            limbs = self._limbs()
            if limbs is not None:
                nz = [i for i, k in enumerate(lam) if k]  # a sparse lam: only its rows
                if not nz:
                    return [0] * self.d
                if len(nz) <= MAX_TERMS:
                    return limb_product(
                        [a[nz] for a in limbs], [lam[i] for i in nz], transpose=True
                    )
            return [int(x) for x in (self._lmat().transpose() * _fmpz(self.N, 1, lam)).entries()]
        S = []
        for g, mine in enumerate(self._members):
            e = int(self.groups[g])
            rows = self.rows[mine]
            vec = [0] * len(self._lay.members[e])
            for r, o in zip(mine.tolist(), self._lay.offset[rows].tolist()):
                vec[o] = int(lam[r])
            S.extend(times_block(vec, self._lay.block(e)))  # sum_r lam_r l_r
        Sm = flint.fmpz_mat(len(self.groups), self.d, S)
        return [int(x) for x in (Sm.transpose() * self.Zmat).entries()]

    def gram_factors(self) -> tuple:
        """Exact ``Z Z^T`` (value ``* 2**(2 exp)``) as the arguments of
        `certify.check.verified.inverse_diagonal_upper`: ``L L^T`` (decoder), or the factors of
        ``(L L^T) o (Z_g Z_g^T)`` (attention: a `certify.check.verified.KronGram`)."""
        if self.kind == "attention":  # formed a block of rows at a time from the factors
            from certify.check.kron import KronGram

            return (KronGram(self.L, self.Zu, self.ex),)
        Lmat = self._lmat()
        return (np.array((Lmat * Lmat.transpose()).tolist(), dtype=object).reshape(self.N, self.N),)

    def gram(self):
        """Exact ``Z Z^T`` as an ``fmpz_mat`` (value ``* 2**(2 exp)``)."""
        import flint

        Lmat = self._lmat()
        G = Lmat * Lmat.transpose()
        if self.kind == "attention":
            H = self.Zmat * self.Zmat.transpose()
            n = len(self.groups)
            he = np.array([int(x) for x in H.entries()], dtype=object).reshape(n, n)
            ge = np.array([int(x) for x in G.entries()], dtype=object).reshape(self.N, self.N)
            g = ge * he[np.ix_(self.ex, self.ex)]
            return flint.fmpz_mat(self.N, self.N, [int(x) for x in g.ravel()])
        return G

    def float_rows(self) -> np.ndarray:
        """Dense float64 rows of this subset (solvers only; attention: products of the rounded
        float factors). N x m memory: for working sets, not for a whole large system."""
        from certify.structured import row_factors

        return row_factors(self.cs).rows(self.rows)

    def float_factors(self) -> tuple[np.ndarray, np.ndarray | None]:
        """Float64 left factors (N x d) and distinct right factors (n x d, attention only)."""
        from certify.structured import row_factors

        rf = row_factors(self.cs)
        return rf.left[self.rows], (rf.right[self.groups] if self.kind == "attention" else None)

    def hessian(
        self, D: np.ndarray, free: np.ndarray | None = None, *, Lf=None, Zf=None
    ) -> np.ndarray:
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
        primitive parts of l and z and the product of their contents (Gauss's lemma); a zero row
        is matched only with zero rows of its own example (a zero row makes ``A w >= 1``
        infeasible, and the solve refuses it before this runs)."""
        if "rep" not in self._cache:
            full = self.N == self.cs.N  # the whole system's are shared by its ExactOps
            self._cache["rep"] = (
                self.cs.derived("representatives", self._representatives)
                if full
                else self._representatives()
            )
        return self._cache["rep"]

    def _representatives(self) -> np.ndarray:
        if (
            self.cs.right is None and self.cs.left.ints.dtype != object
        ):  # plain int64 rows: equal keys = equal rows
            M = np.ascontiguousarray(self.cs.left.ints[self.rows])
            seen: dict = {}  # equal bytes = equal int64 rows; 10x faster than np.unique(axis=0)
            return np.fromiter(
                (seen.setdefault(M[r].tobytes(), r) for r in range(self.N)),
                dtype=np.int64,
                count=self.N,
            )
        if self.kind == "attention" and self.N > represent.FINGERPRINT_ROWS:
            rep = represent.fingerprint_representatives(self)
            if rep is not None:
                return rep
        keys: dict = {}
        rep = np.empty(self.N, dtype=np.int64)
        L, R = self.L, self.R
        zkeys = {}
        for r in range(self.N):
            key = primitive(L[r])
            if R is not None:
                g = int(self.ex[r]) if self.kind == "attention" else r
                if g not in zkeys:
                    zkeys[g] = primitive(R[r])
                kz = zkeys[g]
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
    return np.array([[ldexp_int(k, e) for k in row] for row in M], dtype=np.float64).reshape(
        M.shape
    )
