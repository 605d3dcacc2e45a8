"""Exact integer matrix products for the regression programs (docs/theory.md section 8.3). Trusted.

The data matrix is ``X = Z 2^e`` with Z an integer array (`certify.exact.dyadic`: int64, or Python
ints when the data span many binary orders; `IntMatrix.of_float` splits float64 data directly).
Products of Z with vectors of Python integers of any size are formed exactly from base-2^16 digits:

- ``Z = sum_j Z_j 2^(16j)`` and ``v = sum_k V_k 2^(16k)``, every digit in ``[0, 2^16)`` but the top
  one, which is signed in ``[-2^15, 2^15)`` (two's complement, floor shifts);
- every digit product is an integer below 2^32 in absolute value, so a sum of at most 2^21 of them
  is an integer below 2^53: float64 products of digit matrices are exact whatever the BLAS order
  (the error-free splitting of Ozaki, Ogita, Oishi and Rump; the BLAS assumption of section 4.6).
  Longer sums are cut into blocks of 2^21 terms. With ``MDCERT_EXACT_PRODUCTS=flint`` the digit
  products run in numpy int64 instead (no BLAS; below 2^53 by the same count) and the Gram matrix
  in python-flint;
- the data's digits are one (n, J, m) array: ``Z_j v`` for every j is one product of its (n J, m)
  reshape, ``Z_j^T v`` one of ``V^T`` with its (n, J m) reshape (the same sums of digit products);
- the block products (int64, below 2^53) are summed by ``t = j + k`` in int64 while at most 2^9 are
  added (below 2^62; else in Python ints), carried into base-2^16 digits (every carry below 2^47)
  and read as one two's-complement integer per entry.

Every function checks its size conditions and raises ValueError rather than round.
"""

from __future__ import annotations

import os
from typing import Sequence

import numpy as np

__all__ = ["IntMatrix", "exact_blas"]

_B = 16
_MASK = (1 << _B) - 1
_BLOCK = 1 << 21  # terms below 2^32 per exact float64 (or int64) block sum, below 2^53
_MAX_SUMMANDS = 1 << 9  # int64 sums of block products below 2^53 stay below 2^62


def exact_blas() -> bool:
    """Whether exact integer products run in float64 BLAS (False: ``MDCERT_EXACT_PRODUCTS=flint``)."""
    return os.environ.get("MDCERT_EXACT_PRODUCTS", "blas").strip().lower() != "flint"


def _count(top_bits: int) -> int:
    """Digits for integers of at most ``top_bits`` bits (signed top digit: one more bit)."""
    return max(1, -(-(top_bits + 1) // _B))


def _digits_of(Z: np.ndarray) -> list[np.ndarray]:
    """Base-2^16 int64 digits of an integer array (int64 or Python ints of any size), module docstring."""
    Z = np.asarray(Z)
    if Z.dtype != object and Z.dtype != np.int64:
        raise ValueError("integer arrays must be int64 or Python ints")
    if Z.dtype == np.int64:
        count = _count(max(abs(int(Z.max())), abs(int(Z.min()))).bit_length() if Z.size else 0)
        digits = [(Z >> (_B * k)) & _MASK for k in range(count - 1)]
        return digits + [Z >> (_B * (count - 1))]  # floor shift: -2^15 <= top digit < 2^15
    D = _vector_digits(Z.ravel())
    return [D[:, k].reshape(Z.shape) for k in range(D.shape[1])]


def _float_digits(k: np.ndarray, shift: np.ndarray) -> list[np.ndarray]:
    """Base-2^16 digits of ``Z = k << shift`` (int64 ``|k| < 2^53``, ``shift >= 0``) without forming Z:
    digit j is ``floor(k 2^(shift - 16j)) mod 2^16``, a right shift of k when ``16j >= shift`` and
    ``((k mod 2^16) << (shift - 16j)) mod 2^16`` (below 2^32 before the mask) otherwise."""
    if np.any(np.abs(k) >= 1 << 53) or np.any(shift < 0):
        raise ValueError("float digits need |k| < 2^53 and shift >= 0")
    bits = np.frexp(np.abs(k).astype(np.float64))[1].astype(np.int64)  # exact bit lengths
    count = _count(int((np.where(k != 0, bits + shift, 0)).max()) if k.size else 0)
    digits = []
    for j in range(count):
        n = _B * j - shift
        right = k >> np.clip(n, 0, 63)
        if j == count - 1:  # signed top digit: |Z| < 2^(16 count - 1), so no shift overflows
            digits.append(np.where(n >= 0, right, k * (1 << np.clip(-n, 0, 15))))
        else:
            left = (k & _MASK) << np.clip(-n, 0, _B)
            digits.append(np.where(n >= 0, right, left) & _MASK)
    return digits


def _exponents(X: np.ndarray) -> tuple[int, int] | None:
    """``(common, bits)`` with ``X = Z 2^common``, Z integers with ``|Z| < 2^bits`` and ``common`` the
    exponent of the lowest set bit over the nonzero entries (`certify.exact.dyadic`'s); None when X is
    0. ``frexp`` gives ``X = k 2^(e - 53)`` with k an exact int64, ``k & -k`` its lowest set bit, a
    power of two whose float64 ``frexp`` exponent is exact."""
    mant, e = np.frexp(X)
    k = (mant * 2.0**53).astype(np.int64)
    nz = k != 0
    if not nz.any():
        return None
    tz = np.frexp((k & -k).astype(np.float64))[1]  # log2(lowest bit) + 1
    common = int(np.where(nz, e + tz, 1 << 20).min()) - 54
    return common, int(np.where(nz, e, -(1 << 20)).max()) - common


def _scaled_digits(X: np.ndarray, common: int, bits: int) -> np.ndarray:
    """Base-2^16 digits of ``Z = X 2^-common`` (``|Z| < 2^bits <= 2^1022``) as a float64 (n, J, m)
    array, digit j at ``[:, j, :]``: ``A_j = floor(X 2^-(common + 16j)) = floor(Z / 2^(16j))`` is
    exact (a power-of-two scaling to at least 2^-1008 in absolute value when nonzero, a normal float,
    then floor), and digit ``j = A_j - 2^16 A_(j+1)``, an integer in ``[0, 2^16)``, is an exact
    float64 subtraction; the top digit ``A_(J-1)`` is signed in ``[-2^15, 2^15)``."""
    count = _count(bits)
    out = np.empty((X.shape[0], count, X.shape[1]))
    for j in range(count):
        np.floor(np.ldexp(X, -(common + _B * j), out=out[:, j, :]), out=out[:, j, :])
    tmp = np.empty(X.shape)
    for j in range(count - 1):
        out[:, j, :] -= np.multiply(out[:, j + 1, :], 65536.0, out=tmp)
    return out


def _vector_digits(v: Sequence[int]) -> np.ndarray:
    """The digits of a vector of Python ints as the columns of a (len(v), count) int64 array."""
    flat = list(map(int, v))
    count = _count(max(max(flat), -min(flat)).bit_length() if flat else 0)
    buf = b"".join([x.to_bytes(2 * count, "little", signed=True) for x in flat])
    D = np.frombuffer(buf, dtype="<u2").reshape(len(flat), count).astype(np.int64)
    D[:, -1] = np.frombuffer(buf, dtype="<i2").reshape(len(flat), count)[:, -1]
    return D


def _exact_product(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """``A @ B`` for digit matrices (integers below 2^16 in absolute value, int64 or float64) as int64,
    exact: blocks of at most 2^21 terms, each in float64 BLAS (or int64 without BLAS), then summed
    (at most 2^9 blocks: below 2^62)."""
    inner = A.shape[1]
    if _blocks(inner) > _MAX_SUMMANDS:
        raise ValueError("too many terms for exact block sums")
    blas = exact_blas()
    out = None
    for s in range(0, max(inner, 1), _BLOCK):
        a, b = A[:, s : s + _BLOCK], B[s : s + _BLOCK]
        if blas:
            a, b = a.astype(np.float64, copy=False), b.astype(np.float64, copy=False)
            P = (a @ b).astype(np.int64)
        else:
            P = a.astype(np.int64, copy=False) @ b.astype(np.int64, copy=False)
        out = P if out is None else out + P
    return out


def _blocks(inner: int) -> int:
    return max(1, -(-inner // _BLOCK))


def _to_ints(C: np.ndarray) -> list[int]:
    """Rows of a (n, T) array of digit sums (int64 below 2^62, or Python ints) as Python ints
    ``sum_t C[:, t] 2^(16t)``: carried into digits in ``[0, 2^16)`` plus a final signed carry, read
    as two's-complement bytes."""
    n, T = C.shape
    if C.dtype == object:
        out = [0] * n
        for t in reversed(range(T)):
            out = [(o << _B) + int(c) for o, c in zip(out, C[:, t])]
        return out
    W = T + 4  # the carry is below 2^47 in absolute value: three more digits take it to {-1, 0}
    digits = np.zeros((n, W), dtype=np.int64)
    carry = np.zeros(n, dtype=np.int64)
    for t in range(W - 1):
        c = (C[:, t] if t < T else 0) + carry
        digits[:, t] = c & _MASK
        carry = c >> _B
    if np.any((carry != 0) & (carry != -1)):
        raise ValueError("digit carry out of range")
    digits[:, W - 1] = carry & _MASK  # -1 -> 0xFFFF: the sign of the two's-complement integer
    buf = memoryview(digits.astype("<u2").tobytes())
    step = 2 * W
    return [
        int.from_bytes(buf[i : i + step], "little", signed=True) for i in range(0, n * step, step)
    ]


def _digit_sums(
    products: list[tuple[int, np.ndarray]], shape: tuple[int, int], blocks: int
) -> np.ndarray:
    """``C[:, t] = sum of the products at digit position t``, each a sum of ``blocks`` block products
    below 2^53: int64 when at most 2^9 such blocks meet at a position (below 2^62), else Python ints."""
    per = np.bincount([t for t, _ in products])
    dtype = np.int64 if per.max() * blocks <= _MAX_SUMMANDS else object
    C = np.zeros(shape, dtype=dtype)
    for t, P in products:
        C[:, t] += P if dtype == np.int64 else P.astype(object)
    return C


class IntMatrix:
    """An integer matrix Z (int64 or Python ints) with its base-2^16 digits split once; exact
    ``Z v``, ``Z^T v`` and ``Z Z^T`` (module docstring)."""

    def __init__(
        self,
        Z: np.ndarray | None,
        *,
        digits: list[np.ndarray] | None = None,
        stack: np.ndarray | None = None,
    ) -> None:
        if Z is not None:
            Z = np.asarray(Z)
            if Z.ndim != 2:
                raise ValueError("IntMatrix needs a 2-D integer array")
        self._Z = Z
        dtype = np.float64 if exact_blas() else np.int64  # exact either way: |digit| < 2^16
        # (n, J, m): digit j is [:, j, :]; reshaped to (n, J m) or (n J, m) without a copy, one
        # product with a vector's digits gives every Z_j v or Z_j^T v
        if stack is None:
            stack = np.stack(_digits_of(Z) if digits is None else digits, axis=1)
        self._stack = np.ascontiguousarray(stack, dtype=dtype)
        self.digits = [self._stack[:, j, :] for j in range(self._stack.shape[1])]
        self.shape = self.digits[0].shape

    @classmethod
    def of_float(cls, X: np.ndarray) -> tuple["IntMatrix", int]:
        """``(Z, e)`` with ``X = Z 2^e`` exactly (``e`` and Z those of `certify.exact.dyadic`), the
        digits split without forming Z: by exact float64 scalings and floors (`_scaled_digits`) when
        ``|Z| < 2^1022``, else from the int64 mantissas and shifts."""
        from certify.exact import dyadic_parts

        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2:
            raise ValueError("IntMatrix needs a 2-D array")
        found = _exponents(X)
        if found is not None and found[1] <= 1022:  # Z below 2^1022: its float64 scalings are exact
            common, bits = found
            M = cls(None, stack=_scaled_digits(X, common, bits))
        else:
            k, shift, common = dyadic_parts(X)
            M = cls(None, digits=_float_digits(k, shift))
        M._float = X
        return M, common

    @property
    def Z(self) -> np.ndarray:
        """The integer matrix (formed on first use when the digits came from floats)."""
        if self._Z is None:
            from certify.exact import dyadic

            self._Z = dyadic(self._float).ints
        return self._Z

    def matvec(self, v: Sequence[int]) -> list[int]:
        """``Z v`` exactly (v: Python ints of any size)."""
        return self._product(v, transpose=False)

    def rmatvec(self, v: Sequence[int]) -> list[int]:
        """``Z^T v`` exactly."""
        return self._product(v, transpose=True)

    def _product(self, v: Sequence[int], *, transpose: bool) -> list[int]:
        """Products of digit matrices, summed by digit position (module docstring)."""
        n, m = self.shape
        inner, outer = (n, m) if transpose else (m, n)
        if len(v) != inner:
            raise ValueError(f"{'rmatvec' if transpose else 'matvec'}: shapes do not match")
        V = _vector_digits(v)
        K, J = V.shape[1], self._stack.shape[1]
        if transpose:  # V^T [Z_0 | ... | Z_(J-1)]: row k, block j is (Z_j^T V_k)^T
            P = _exact_product(V.T, self._stack.reshape(n, J * m)).reshape(K, J, m)
            P = P.transpose(2, 1, 0)
        else:  # rows (i, j) of the (n J, m) stack: Z_j[i] V
            P = _exact_product(self._stack.reshape(n * J, m), V).reshape(n, J, K)
        per = min(J, K)  # products (j, k) at one digit position t = j + k
        dtype = np.int64 if per * _blocks(inner) <= _MAX_SUMMANDS else object
        C = np.zeros((outer, J + K - 1), dtype=dtype)
        for j in range(J):
            C[:, j : j + K] += P[:, j, :] if dtype == np.int64 else P[:, j, :].astype(object)
        return _to_ints(C)

    def gram(self) -> np.ndarray:
        """``Z Z^T`` exactly, as an n x n object array of Python ints."""
        n, m = self.shape
        if not exact_blas():
            import flint

            F = flint.fmpz_mat(n, m, [int(x) for x in self.Z.ravel()])
            G = F * F.transpose()
            return np.array([int(x) for x in G.entries()], dtype=object).reshape(n, n)
        J = len(self.digits)
        products = []
        for j in range(J):
            for k in range(j, J):
                P = _exact_product(self.digits[j], self.digits[k].T)
                products += [(j + k, P.ravel())] + ([(j + k, P.T.ravel())] if k != j else [])
        C = _digit_sums(products, (n * n, 2 * J - 1), _blocks(m))
        return np.array(_to_ints(C), dtype=object).reshape(n, n)
