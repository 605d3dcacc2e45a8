"""Exact attention rows without Python integers per entry (solver side; docs/theory.md section 4.5).

A left factor ``l = x_{i alpha_i} - x_it`` of two float64 tokens is stored as two float64 arrays
``hi = fl(x_a - x_t)`` and ``lo = (x_a - x_t) - hi`` (Knuth's two-sum: exact, barring overflow), so
``l = hi + lo`` exactly: 16 bytes an entry instead of a Python integer of 70-80 bits (about 48 bytes
with its pointer) for data whose common-exponent integers exceed int64. `SplitDyadic` gives the
exact integers ``(hi + lo) * 2**-exp`` a block of rows at a time (`SplitDyadic.take`), and all of
them only on request (`SplitDyadic.ints`, for small systems). `attention_system` builds the
`ConstraintSystem` of `AttentionProblem.attention_constraints` with such a left factor (the same
rows, index and exponent); data whose integers fit int64 keep the int64 system.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from certify.exact import DyadicArray
from certify.rows import ConstraintSystem

__all__ = ["SplitDyadic", "attention_system", "take", "nonzero", "dyadic_exponent"]


def _float_ints(v: np.ndarray, exp: int) -> np.ndarray:
    """``v * 2**-exp`` as an object array of Python ints, for float64 entries that are multiples of
    ``2**exp`` (exact: mantissa and shift, no float scaling that could overflow)."""
    mant, ex = np.frexp(v)
    k = (mant * 2.0**53).astype(np.int64)
    sh = ex.astype(np.int64) - 53 - exp
    out = [
        (a << s if s >= 0 else a >> -s) if a else 0
        for a, s in zip(k.ravel().tolist(), sh.ravel().tolist())
    ]
    return np.array(out, dtype=object).reshape(v.shape)


@dataclass(frozen=True, eq=False)
class SplitDyadic:
    """The exact array ``(hi + lo) * 2**0 = ints * 2**exp`` (module docstring).

    Attributes:
        hi: float64, the correctly rounded values.
        lo: float64, the exact remainders (``hi + lo`` is the value; 0 where hi is exact).
        exp: the common binary exponent of the integers (every entry is a multiple of ``2**exp``).
    """

    hi: np.ndarray
    lo: np.ndarray
    exp: int

    @property
    def shape(self) -> tuple[int, ...]:
        return self.hi.shape

    def take(self, idx) -> np.ndarray:
        """The exact integers of rows ``idx`` (an object array of Python ints)."""
        return _float_ints(self.hi[idx], self.exp) + _float_ints(self.lo[idx], self.exp)

    @property
    def ints(self) -> np.ndarray:
        """All the exact integers (object array; N x d Python ints: small systems only)."""
        return self.take(slice(None))

    def as_object(self) -> np.ndarray:
        return self.ints

    def nonzero(self) -> np.ndarray:
        """Entries that are not 0 (``hi = 0`` exactly when the value is 0)."""
        return self.hi != 0

    def tiny_rows(self) -> np.ndarray:
        """Rows with a subnormal value (where ``hi`` and a rounding of the integer may differ)."""
        tiny = (self.hi != 0) & (np.abs(self.hi) < np.finfo(np.float64).tiny)
        return np.flatnonzero(tiny.reshape(len(self.hi), -1).any(axis=1))


def take(arr, idx) -> np.ndarray:
    """The integers of rows ``idx`` of a `DyadicArray` (its int64 or object array) or `SplitDyadic`."""
    return arr.take(idx) if isinstance(arr, SplitDyadic) else arr.ints[idx]


def nonzero(arr) -> np.ndarray:
    """Boolean mask of the nonzero entries of a `DyadicArray` or `SplitDyadic`."""
    return arr.nonzero() if isinstance(arr, SplitDyadic) else np.asarray(arr.ints != 0)


def dyadic_exponent(a: np.ndarray) -> tuple[int, bool]:
    """``(exp, fits)`` of `certify.exact.dyadic` on a finite float64 array, without its integers:
    the common exponent and whether the integers fit int64 (62 bits)."""
    mant, e = np.frexp(a)
    k = (mant * 2.0**53).astype(np.int64)
    nz = k != 0
    if not nz.any():
        return 0, True
    kn = k[nz]
    tz = np.round(np.log2(np.abs(kn & -kn).astype(np.float64))).astype(np.int64)
    low = e[nz].astype(np.int64) - 53 + tz  # exponent of each entry's lowest set bit
    common = int(low.min())
    bits = np.floor(np.log2(np.abs(kn >> tz).astype(np.float64))).astype(np.int64) + 1
    return common, int((bits + low - common).max()) <= 62


def attention_system(problem, alpha=None) -> ConstraintSystem:
    """``problem.attention_constraints(alpha)`` with, where the data's integers exceed int64, the
    left factors as a `SplitDyadic` (the same rows, index and exponent; never X's Python integers)."""
    from certify.problem import resolve_alpha

    X = problem.X
    exp, fits = dyadic_exponent(X)
    if fits or not np.all(np.isfinite(X)):
        return problem.attention_constraints(alpha)
    a = np.asarray(resolve_alpha(problem, alpha), dtype=np.int64)
    keep = problem.token_mask.copy()
    keep[np.arange(problem.n), a] = False
    ii, tt = np.nonzero(keep)  # row-major: example by example, tokens in order
    x, y = X[ii, a[ii]], -X[ii, tt]
    with np.errstate(over="ignore", invalid="ignore"):
        hi = x + y  # two-sum: hi + lo = x + y exactly
        bp = hi - x
        lo = (x - (hi - bp)) + (y - bp)
    if not (np.all(np.isfinite(hi)) and np.all(np.isfinite(lo))):  # overflow: the object rows
        return problem.attention_constraints(alpha)
    z = problem.exact("z")
    index = tuple(zip(ii.tolist(), tt.tolist()))
    d = problem.d
    left = SplitDyadic(hi.reshape(len(index), d), lo.reshape(len(index), d), exp)
    return ConstraintSystem(
        "attention", index, left, DyadicArray(z.ints[ii].reshape(len(index), d), z.exp), d
    )
