"""Exact integer matrix products for the regression programs (docs/theory.md section 8.3). Trusted.

The data matrix is ``X = Z 2^e`` with Z an integer array (`certify.exact.dyadic`: int64, or Python
ints when the data span many binary orders). Products of Z with vectors of Python integers of any
size are formed exactly from base-2^18 digits:

- ``Z = sum_j Z_j 2^(18j)`` and ``v = sum_k V_k 2^(18k)``, every digit in ``[0, 2^18)`` but the top
  one, which is signed and below 2^18 in absolute value (floor shifts);
- each digit product ``Z_j V_k`` is an int64 matrix-vector product whose terms are below 2^36 in
  absolute value, so a sum of at most 2^26 terms stays below 2^62: no int64 operation can overflow.
- The Gram matrix ``Z Z^T`` is summed from float64 products of digit matrices: every term is an
  integer below 2^36 and every partial sum of at most 2^17 terms an integer below 2^53, so each
  float64 operation is exact whatever the BLAS order (the error-free splitting of Ozaki, Ogita,
  Oishi and Rump); ``MDCERT_EXACT_PRODUCTS=flint`` forms it with python-flint instead.

Every function checks its size conditions and raises ValueError rather than round.
"""

from __future__ import annotations

import os
from typing import Sequence

import numpy as np

__all__ = ["IntMatrix", "int_matvec", "int_rmatvec", "int_gram"]

_B = 18
_MASK = (1 << _B) - 1
_MAX_TERMS_INT = 1 << 26  # int64 sums of terms below 2^36
_MAX_TERMS_FLOAT = 1 << 17  # float64 sums of terms below 2^36 stay below 2^53


def _digits_of(Z: np.ndarray) -> list[np.ndarray]:
    """Base-2^18 int64 digits of an integer array (int64 or Python ints of any size): all in
    ``[0, 2^18)`` but the top one, which is signed with ``|top| < 2^18``; ``Z = sum_k D_k 2^(18k)``."""
    Z = np.asarray(Z)
    if Z.dtype != object and Z.dtype != np.int64:
        raise ValueError("integer arrays must be int64 or Python ints")
    top = (max(abs(int(Z.max())), abs(int(Z.min()))).bit_length() if Z.size else 0) + 1
    count = max(1, -(-top // _B))
    digits = [((Z >> (_B * k)) & _MASK).astype(np.int64) for k in range(count - 1)]
    digits.append((Z >> (_B * (count - 1))).astype(np.int64))  # floor shift: |top digit| < 2^18
    return digits


def _vector_digits(v: Sequence[int]) -> list[np.ndarray]:
    return _digits_of(np.array([int(x) for x in v], dtype=object))


def _combine(parts: list[tuple[int, np.ndarray]], size: int) -> list[int]:
    out = np.zeros(size, dtype=object)
    for shift, arr in parts:
        out += arr.astype(object) << shift if shift else arr.astype(object)
    return [int(x) for x in out]


class IntMatrix:
    """An integer matrix Z (int64 or Python ints) with its base-2^18 digits split once; exact
    ``Z v``, ``Z^T v`` and ``Z Z^T`` (module docstring)."""

    def __init__(self, Z: np.ndarray) -> None:
        Z = np.asarray(Z)
        if Z.ndim != 2:
            raise ValueError("IntMatrix needs a 2-D integer array")
        self.Z = Z
        self.shape = Z.shape
        self.digits = _digits_of(Z)

    def matvec(self, v: Sequence[int]) -> list[int]:
        """``Z v`` exactly (v: Python ints of any size)."""
        return self._product(v, transpose=False)

    def rmatvec(self, v: Sequence[int]) -> list[int]:
        """``Z^T v`` exactly."""
        return self._product(v, transpose=True)

    def _product(self, v: Sequence[int], *, transpose: bool) -> list[int]:
        """Sum over digit pairs of ``Z_j V_k`` (or ``V_k Z_j``) shifted by ``18 (j + k)`` bits."""
        n, m = self.shape
        inner, outer = (n, m) if transpose else (m, n)
        if len(v) != inner or inner > _MAX_TERMS_INT:
            raise ValueError(
                f"{'rmatvec' if transpose else 'matvec'}: shapes do not match, or too many terms "
                "for exact int64 sums"
            )
        vd = _vector_digits(v)
        return _combine(
            [
                (_B * (j + k), Vk @ Zj if transpose else Zj @ Vk)
                for j, Zj in enumerate(self.digits)
                for k, Vk in enumerate(vd)
            ],
            outer,
        )

    def gram(self) -> np.ndarray:
        """``Z Z^T`` exactly, as an n x n object array of Python ints."""
        n, m = self.shape
        if os.environ.get("MDCERT_EXACT_PRODUCTS") == "flint":
            import flint

            F = flint.fmpz_mat(n, m, [int(x) for x in self.Z.ravel()])
            G = F * F.transpose()
            return np.array([int(x) for x in G.entries()], dtype=object).reshape(n, n)
        if m > _MAX_TERMS_FLOAT:
            raise ValueError("gram: too many columns for exact float64 sums")
        digits = [d.astype(np.float64) for d in self.digits]
        out = np.zeros((n, n), dtype=object)
        for j, Zj in enumerate(digits):
            for k in range(j, len(digits)):
                Pi = (Zj @ digits[k].T).astype(np.int64).astype(object)  # exact integers below 2^53
                if k != j:
                    Pi = Pi + Pi.T
                out += Pi << (_B * (j + k)) if j + k else Pi
        return out


def int_matvec(Z, v: Sequence[int]) -> list[int]:
    """``Z v`` exactly (Z an `IntMatrix` or an integer array)."""
    return (Z if isinstance(Z, IntMatrix) else IntMatrix(Z)).matvec(v)


def int_rmatvec(Z, v: Sequence[int]) -> list[int]:
    """``Z^T v`` exactly (Z an `IntMatrix` or an integer array)."""
    return (Z if isinstance(Z, IntMatrix) else IntMatrix(Z)).rmatvec(v)


def int_gram(Z) -> np.ndarray:
    """``Z Z^T`` exactly (Z an `IntMatrix` or an integer array)."""
    return (Z if isinstance(Z, IntMatrix) else IntMatrix(Z)).gram()
