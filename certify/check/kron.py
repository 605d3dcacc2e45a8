"""The exact Gram matrix of Kronecker rows, a block of rows at a time (trusted code, part of
`certify.check`; docs/theory.md sections 4.3, 4.4 and 4.6): the tight-row proof of the solver and of
the checker (`certify.check.verified.inverse_diagonal_upper`) forms ``(L L^T) o (Z Z^T)`` from its
factors, so that no n x n array of Python integers is ever held.

``floor(M / 2^k)`` is formed in int64 base-``2^B`` limbs, never as Python integers: the factors are
cut into B-bit digits (``F = sum_a 2^(aB) F_a``, ``0 <= F_a < 2^B`` below a signed top digit,
``|F_top| <= 2^B``) with ``4 d 2^(2B) <= 2^53`` for d columns, so a float64 product of digit
matrices summing up to four digit pairs (``[F_a F_a'] [F'_b F'_b']^T``) adds at most 4d integers of
absolute value at most ``2^(2B)``: every partial sum is an integer of at most 2^53, exact in any
order (the BLAS assumption of section 4.6). The limbs are carried to the same digit form,
multiplied entrywise (products at most ``2^(2B)``) and carried again; the floor of the shift is
read from the limbs at and above position k (the limbs below add less than 1). The same digits,
taken exactly from the float data (`float_digits`), give the checker's row products ``l_r . v``."""

from __future__ import annotations

import numpy as np

__all__ = [
    "KronGram",
    "column_max_abs",
    "digit_bits",
    "float_digits",
    "int_digits",
    "split_digits",
    "limb_gram",
    "row_dots",
    "row_sums_abs",
    "shifted_product",
    "to_ints",
]


def digit_bits(d: int) -> int:
    """B with ``4 d 2^(2B) <= 2^53``: four digit-pair dot products of length d, summed, are exact."""
    return (53 - max(0, d - 1).bit_length() - 2) // 2


def split_digits(A: np.ndarray, B: int, n: int) -> list[np.ndarray]:
    """``A = sum_{k<n} 2^(kB) D_k`` for an integer (object or int64) array, exactly: ``0 <= D_k <
    2^B`` (the low B bits) for ``k < n - 1`` and a signed top digit (what the shifts leave)."""
    out = []
    for _ in range(n - 1):
        out.append(A & ((1 << B) - 1))
        A = A >> B  # floor division by 2^B
    return out + [A]


def int_digits(F: np.ndarray, B: int) -> list[np.ndarray]:
    """Float64 digits of an integer (object or int64) matrix: ``F = sum_a 2^(aB) D_a`` with
    ``0 <= D_a < 2^B`` for all but the last, ``|D_last| <= 2^B`` (checked)."""
    F = np.asarray(F)
    big = max([abs(int(F.max())), abs(int(F.min()))]) if F.size else 0
    n = max(1, -(-big.bit_length() // B))  # |F| < 2^(nB): the top digit is below 2^B
    *low, top = split_digits(F, B, n)
    top = np.asarray(top).astype(np.int64)
    if top.size and int(np.abs(top).max()) > 1 << B:
        raise ValueError("top digit exceeds 2^B")
    return [D.astype(np.float64) for D in low] + [top.astype(np.float64)]


def _carry(c: list[np.ndarray], B: int, at_least: int = 0) -> list[np.ndarray]:
    """``sum_t 2^(tB) c_t`` (int64, ``|c_t| < 2^62``) in limbs ``0 <= out_t < 2^B`` below a signed
    top limb ``|out_top| <= 2^B``; at least ``at_least`` limbs (sign-extended)."""
    mask, out, carry = (1 << B) - 1, [], 0
    for x in c:
        x = x + carry
        out.append(x & mask)
        carry = x >> B  # floor: x = 2^B carry + (x & mask)
    while len(out) + 1 < at_least or int(np.abs(carry).max()) > 1 << B:
        out.append(carry & mask)
        carry = carry >> B
    while len(out) + 1 > max(1, at_least) and carry.min() >= -1 and carry.max() <= 0:
        carry = out.pop() + (carry << B)  # a top limb of 0 / -1 joins the limb below: |.| <= 2^B
    return out + [np.asarray(carry, dtype=np.int64)]


def limb_gram(Ad: list[np.ndarray], Bd: list[np.ndarray], B: int) -> list[np.ndarray]:
    """Carried int64 limbs of ``A B^T`` from the float64 digits of A and B (`int_digits`, same B): the
    digit products of one weight ``2^(tB)`` are summed by one float64 product ``[A_a ...] [B_b
    ...]^T`` over up to ``2^53 / (d 2^(2B))`` pairs ``a + b = t``: exact (module docstring)."""
    if min(len(Ad), len(Bd)) > 256:
        raise ValueError("too many digits")  # every sum below stays under 2^61
    group = max(1, (1 << 53) // (Ad[0].shape[1] << (2 * B)))
    c = []
    for t in range(len(Ad) + len(Bd) - 1):
        pairs = [(a, t - a) for a in range(len(Ad)) if 0 <= t - a < len(Bd)]
        acc = np.zeros((len(Ad[0]), len(Bd[0])), dtype=np.int64)
        for g0 in range(0, len(pairs), group):
            left = np.hstack([Ad[a] for a, _ in pairs[g0 : g0 + group]])
            right = np.hstack([Bd[b] for _, b in pairs[g0 : g0 + group]])
            acc += (left @ right.T).astype(np.int64)  # integers of at most 2^53: exact
        c.append(acc)
    return _carry(c, B)


_WIDE = 28  # limb bits of the entrywise product: products at most 2^56, 16 of them below 2^60


def _rebase(c: list[np.ndarray], B: int, W: int) -> list[np.ndarray]:
    """Carried base-``2^B`` limbs (`_carry` form) as carried base-``2^W`` limbs, ``B <= W``: limb t
    at bit ``tB = uW + o`` is ``x = c_t 2^o`` (``|x| <= 2^(B+W)``) = ``(x & (2^W - 1)) + 2^W (x >> W)``
    into limbs u and u + 1 (floor: exact for a signed top limb too)."""
    out = [np.zeros_like(c[0]) for _ in range(-(-len(c) * B // W) + 1)]
    for t, ct in enumerate(c):
        u, o = divmod(t * B, W)
        x = ct << o
        out[u] += x & ((1 << W) - 1)
        out[u + 1] += x >> W
    return _carry(out, W)


def shifted_product(g: list[np.ndarray], h: list[np.ndarray], B: int, k: int) -> np.ndarray:
    """``floor(G o H / 2^k)`` as int64 from carried limbs of G and H (`_carry` form, same shape):
    the entrywise product's limbs (terms below ``2^(2B)``) carried, then read at position k. Raises
    ValueError when it does not fit in int64."""
    if min(len(g), len(h)) > 1 << (60 - 2 * B):
        raise ValueError("too many limbs")
    m = [None] * (len(g) + len(h) - 1)
    for a, ga in enumerate(g):
        for b, hb in enumerate(h):
            m[a + b] = ga * hb if m[a + b] is None else m[a + b] + ga * hb  # < 2^60 (checked)
    j, r = divmod(k, B)
    m = _carry(m, B, at_least=j + 1)
    # M = 2^(jB) (Q + f) with Q = sum_{t >= j} 2^((t-j)B) m_t and 0 <= f < 1 (limbs below j in
    # [0, 2^B)), so floor(M / 2^k) = floor(Q / 2^r) = 2^(B-r) H + (m_j >> r) with
    # H = sum_{t > j} 2^((t-j-1)B) m_t, formed from the top (Horner): no partial value exceeds 2^61
    H = np.zeros_like(m[j])
    for t in range(len(m) - 1, j, -1):
        H = _shift(H, B) + m[t]
    return _shift(H, B - r) + (m[j] >> r)


def _shift(H: np.ndarray, s: int) -> np.ndarray:
    """``H 2^s`` in int64; ValueError unless ``|H| < 2^(61 - s)`` (no overflow, room for a limb)."""
    if H.size and int(np.abs(H).max()) >= 1 << max(0, 61 - s):
        raise ValueError("shifted entries exceed int64")
    return H << s if s < 62 else H  # H = 0 when s >= 61


def float_digits(a: np.ndarray, b: np.ndarray, B: int) -> np.ndarray:
    """Float64 digits ``D[..., t]`` of ``a - b`` for float64 arrays of exact integers (``|a|, |b| <
    2^1000``): ``a - b = sum_t 2^(tB) D_t``, ``0 <= D_t < 2^B`` but the signed top digit
    (``|D_top| <= 2^B``, checked). Every operation is exact: scalings by powers of two, floors,
    and differences of integers whose exact result is an integer below 2^(B+2)."""
    big = max(float(np.abs(a).max(initial=0)), float(np.abs(b).max(initial=0)))
    if not big < 2.0**1000:
        raise ValueError("entries too large for float digits")
    K = max(1, -(-(int(big).bit_length() + 1) // B))  # |a|, |b| < 2^(KB - 1)
    out = np.empty(a.shape + (K,))
    carry, step, inv = np.zeros(a.shape), 2.0**B, 2.0**-B
    for t in range(K - 1):
        ha, hb = np.floor(a * inv), np.floor(b * inv)
        x = (a - ha * step) - (b - hb * step) + carry  # an integer in [-2^B - 1, 2^B)
        carry = np.floor(x * inv)
        out[..., t] = x - carry * step
        a, b = ha, hb
    out[..., K - 1] = a - b + carry
    if np.abs(out[..., K - 1]).max(initial=0) > step:
        raise ValueError("top digit exceeds 2^B")
    return out


def row_dots(Ld: np.ndarray, Vd: np.ndarray, B: int) -> np.ndarray:
    """Carried int64 limbs ``(rows, t)`` of the row-wise dot products ``l_r . v_r`` from digits
    ``Ld`` (rows, d, K) and ``Vd`` (rows, d, K') of the same B (``d 2^(2B) <= 2^53``): each digit
    pair's dot product is an integer of at most 2^53 (exact in any order)."""
    if Ld.shape[1] << (2 * B) > 1 << 53 or min(Ld.shape[2], Vd.shape[2]) > 256:
        raise ValueError("digits too large for exact float64 dot products")
    P = np.matmul(Ld.transpose(0, 2, 1), Vd)  # (rows, K, K')
    K, Kv = P.shape[1:]
    c = [np.zeros(len(P), dtype=np.int64) for _ in range(K + Kv - 1)]
    for a in range(K):
        for b in range(Kv):
            c[a + b] += P[:, a, b].astype(np.int64)
    return np.stack(_carry(c, B), axis=1)


def to_ints(limbs: np.ndarray, B: int) -> list[int]:
    """Python integers ``sum_t limbs[:, t] 2^(tB)`` of int64 limbs (rows, t)."""
    total = limbs[:, -1].astype(object)
    for t in range(limbs.shape[1] - 2, -1, -1):
        total = (total << B) + limbs[:, t].astype(object)
    return total.tolist()


#: rows of an int64 matrix reduced at a time by `row_sums_abs` and `column_max_abs`
_SUM_ROWS = 512


def row_sums_abs(Y: np.ndarray) -> list[int]:
    """Exact ``sum_j |Y_ij|`` per row of an int64 matrix with ``|Y| <= 2^62`` and at most 2^26 columns
    (split in 31-bit halves so that no int64 sum can overflow), ``_SUM_ROWS`` rows at a time."""
    if Y.ndim != 2 or Y.shape[1] > 1 << 26:
        raise ValueError("row sums need |Y| <= 2^62 and at most 2^26 columns")
    out: list[int] = []
    for i0 in range(0, Y.shape[0], _SUM_ROWS):
        a = np.abs(Y[i0 : i0 + _SUM_ROWS])  # |-2^63| stays negative: refused below
        if a.size and (int(a.max()) > 1 << 62 or int(a.min()) < 0):
            raise ValueError("row sums need |Y| <= 2^62 and at most 2^26 columns")
        hi, lo = a >> 31, a & ((1 << 31) - 1)
        out += [(int(h) << 31) + int(l_) for h, l_ in zip(hi.sum(axis=1), lo.sum(axis=1))]
    return out


def column_max_abs(Y: np.ndarray) -> np.ndarray:
    """``max_i |Y_ij|`` per column of an int64 matrix (``|Y| <= 2^62``), a block of rows at a time."""
    col = np.zeros(Y.shape[1], dtype=np.int64)
    for i0 in range(0, Y.shape[0], _SUM_ROWS):
        np.maximum(col, np.abs(Y[i0 : i0 + _SUM_ROWS]).max(axis=0), out=col)
    return col


class KronGram:
    """The exact Gram matrix ``M = (L L^T) o (Z_g Z_g^T)`` of Kronecker rows ``vec(l_i z_g(i)^T)``
    (``M_ij = (l_i . l_j) (z_g(i) . z_g(j))``), formed a block of rows at a time from its factors
    in int64 limbs (module docstring): never an n x n array of Python integers. L: (n, d) exact
    integers; Zg: (k, d) exact integers, the distinct right factors; g: (n,) indices into Zg."""

    def __init__(self, L, Zg, g) -> None:
        self.L = np.asarray(L, dtype=object)
        self.g = np.asarray(g, dtype=np.int64)
        self.Zg = Zg = np.asarray(Zg, dtype=object)
        n, d = len(self.g), Zg.shape[1]
        self.shape = (n, n)
        self.B = digit_bits(d)
        self._Ld = int_digits(self.L.reshape(n, d), self.B)
        self._Zd = int_digits(Zg.reshape(-1, d), self.B)
        self.zz = [sum(int(v) * int(v) for v in row) for row in Zg]  # ||z_g||^2

    def top_bits(self) -> int:
        """A bit length >= that of every entry (Cauchy-Schwarz: ``|M_ij| <= max_i M_ii``)."""
        ll = max(sum(int(v) * int(v) for v in row) for row in self.L)
        return ll.bit_length() + max(self.zz[int(e)] for e in set(self.g.tolist())).bit_length()

    def shifted_rows(self, i0: int, i1: int, k: int, j0: int = 0) -> np.ndarray:
        """``floor(M[i0:i1, j0:] / 2^k)``: int64 (ValueError when an entry does not fit), or Python
        integers when the factors have more than 64 digits (data of huge range)."""
        if max(len(self._Ld), len(self._Zd)) > 64:
            return self.rows(i0, i1)[:, j0:] >> k
        gi, gj = self.g[i0:i1], self.g[j0:]
        G = limb_gram([D[i0:i1] for D in self._Ld], [D[j0:] for D in self._Ld], self.B)
        H = limb_gram([D[gi] for D in self._Zd], self._Zd, self.B)
        G, H = _rebase(G, self.B, _WIDE), _rebase([h[:, gj] for h in H], self.B, _WIDE)
        if min(len(G), len(H)) > 1 << (60 - 2 * _WIDE):  # entries of huge range: Python integers
            return self.rows(i0, i1)[:, j0:] >> k
        return shifted_product(G, H, _WIDE, k)

    def rows(self, i0: int, i1: int) -> np.ndarray:
        """Rows ``i0:i1`` of M (object array of exact integers; for tests and small blocks)."""
        Lb, Zb = self.L[i0:i1], self.Zg[self.g[i0:i1]]
        return (Lb @ self.L.T) * (Zb @ self.Zg.T)[:, self.g]
