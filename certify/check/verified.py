"""Verified infeasibility without an exact kernel vector (docs/theory.md section 4.4). Trusted code.

Used by the independent checker (`certify.check`); imports no solver, only numpy and python-flint,
and proves with exact integer arithmetic (floats only choose an approximate inverse; any choice is
sound). An exact Gordan vector of a generic system with m variables has entries of about m times
the data's bit length (Cramer): 10^5 bits each at m = 1024, found by an exact solve costing
minutes. Instead a certificate may carry a dyadic ``g~ = G 2^e >= 0`` that is a Gordan vector up to
rounding, and a basis B of m rows. With ``A = Z 2^eA``, ``M = Z_B^T`` (m x m) and the exact residual
``R = Z^T G``, the unique x with ``M x = R`` gives ``g = g~ - x 2^e`` on B (g~ elsewhere) with
``A^T g = 0`` exactly; ``g >= 0`` and ``g != 0`` when ``|x_k| < G_{B_k}`` for every k.

The bound on ``||x||_inf`` (Rump's verification, with exact products): ``M = 2^k (Mp + F)`` with
Mp the integers of M shifted right by k (below 2^53) and ``0 <= F_ij < 1``; Y an integer
approximate inverse of Mp scaled by ``2^s``. Then ``Y 2^-(s+k) M = I - H`` with
``||H||_inf <= theta = (||2^s I - Y Mp||_inf + [k > 0] m ||Y||_inf) / 2^s``; if ``theta < 1``, M is
invertible and ``||x||_inf <= ||Y||_inf ||R||_inf 2^-(s+k) / (1 - theta)``.

The same verification bounds the diagonal of the inverse of an exact symmetric positive definite
Gram matrix G (tight rows, docs/theory.md section 4.3), with Frobenius norms: ``G = 2^k (Gp + F)``,
``Y (Gp + F) = 2^s (I - H)``, ``||H||_2 <= theta = (||2^s I - Y Gp||_F + [k > 0] n ||Y||_F) / 2^s``;
if ``theta < 1/2`` then ``((Gp + F)^-1)_ii <= 2^-s (Y_ii + theta/(1 - theta) ||Y||_F)``.
With the split dgemm products below, infinity norms instead: ``theta`` as for the solution bound and
``((Gp + F)^-1)_ii <= 2^-s (Y_ii + theta/(1 - theta) max_j |Y_ji|)``. A Gram matrix of Kronecker rows
``(L L^T) o (Z Z^T)`` is shifted a block of rows at a time from its two factors.

Memory (issue 12: m = 4096 at (n,T,d) = (2000,32,64)): Mp and Y are int64 arrays (exact: their
entries are at most 2^52), the Kronecker basis matrix is formed and shifted a block of columns at
a time, and ``Y Mp`` is multiplied and summed a block of rows at a time: no m x m array of Python
integers is ever formed (it took 4.7 GB at m = 4096).

Speed (issue 12: the checker's target is 30 s at m = 4096). The product ``Y Mp`` is exact in float64
BLAS when it is split so that no sum can round: with ``m <= 2^c``, Mp kept to ``2l`` bits (the rest
goes into the shifted part F, exactly as above) and split as ``Mp = 2^l Ph + Pl`` (``|Ph| <= 2^l``,
``0 <= Pl < 2^l``), and Y rounded to ``r = 53 - c - l`` bits, every product is an integer of at most
``2^(r+l)`` and every partial sum an integer of at most ``m 2^(r+l) <= 2^53`` in absolute value:
representable, so every floating-point operation of the two products ``Y Ph`` and ``Y Pl`` is exact,
whatever order or blocking the BLAS uses and with or without fused multiply-add (the error-free
splitting of Ozaki, Ogita, Oishi and Rump, Numer. Algorithms 59, 2012). This needs a BLAS whose dgemm
forms sums of the products (OpenBLAS, MKL, BLIS and Accelerate all do; a Strassen-type dgemm would
not); ``MDCERT_EXACT_PRODUCTS=flint`` in the environment makes every product go through python-flint
instead. Two dgemm calls take 3.3 s at m = 4096 on 2 cores, the python-flint product of 52-bit
entries 27 s. Fewer bits only make theta larger: when the split bound does not verify, the full
52-bit python-flint product is tried.
"""

from __future__ import annotations

import math
import os
from fractions import Fraction
from typing import Sequence

import numpy as np

from certify.check.kron import KronGram, column_max_abs, row_sums_abs, split_digits

__all__ = ["solution_bound", "kron_solution_bound", "gordan_check", "inverse_diagonal_upper"]


_BLOCK = 256  # rows of the exact integer products handled at once (bounds the transient memory)
_GEMM_BLOCK = 512  # rows of Y per pair of exact dgemm calls


def _blas_products() -> bool:
    """False when ``MDCERT_EXACT_PRODUCTS=flint``: every exact product then goes through python-flint."""
    return os.environ.get("MDCERT_EXACT_PRODUCTS", "blas").strip().lower() != "flint"


def _inverse_of_shifted(Mp: np.ndarray, bits: int = 52, Yf: np.ndarray | None = None):
    """``(Y, s)``: an int64 approximate inverse of the int64 matrix Mp (``|Mp| <= 2^52``, exact in
    float64) scaled by ``2^s`` (``|Y| <= 2^bits``, ``s >= 0``), rounded from ``Yf`` (a float inverse
    of Mp, formed when not given); None when the float inverse fails. Floats only choose Y: the
    callers bound ``2^s I - Y Mp`` exactly."""
    if Yf is None:
        Yf = _float_inverse(Mp)
        if Yf is None:
            return None
    big = float(np.max(np.abs(Yf)))
    s = bits - math.ceil(math.log2(big))
    if s < 0:
        return None
    Ys = np.ldexp(Yf, s)
    np.rint(Ys, out=Ys)
    Y = Ys.astype(np.int64)  # |Y| <= 2^bits: the exactness of the products relies on it
    del Ys
    return (Y, s) if max(int(Y.max()), -int(Y.min())) <= 1 << bits else None


def _float_inverse(Mp: np.ndarray) -> np.ndarray | None:
    """A float64 inverse of Mp with finite, not all zero entries, or None."""
    try:
        Yf = np.linalg.inv(Mp.astype(np.float64))
    except np.linalg.LinAlgError:
        return None
    return Yf if np.all(np.isfinite(Yf)) and np.any(Yf) else None


def _digit_bits(m: int) -> tuple[int, int]:
    """``(room, ell)`` for m x m products: ``room = 53 - ceil(log2 m)`` bits per product of two digits
    (``m 2^room <= 2^53``) and digits of ``ell = room // 2`` bits (module docstring, "Speed")."""
    room = 53 - (m - 1).bit_length()
    return room, room // 2


def _split_residual_row_sums(
    Y: np.ndarray, P: np.ndarray, s: int, ell: int, y_digits: int = 1, p_digits: int = 2
) -> int | None:
    """``max_i sum_j |(Y P - 2^s I)_ij|`` exactly from float64 dgemm calls on base-``2^ell`` digits
    (module docstring, "Speed"): P (``p_digits`` digits) and Y (``y_digits`` digits) int64 m x m;
    every pair of digits must satisfy ``m max|Y_a| max|P_b| <= 2^53`` (checked); None when a bound
    does not hold."""
    m = P.shape[0]
    top = y_digits + p_digits - 2  # E = Y P - 2^s I = sum_k c_k 2^(k ell), k = 0..top
    Yd, Pd = split_digits(Y, ell, y_digits), split_digits(P, ell, p_digits)
    big = [[int(np.abs(D).max()) if D.size else 0 for D in Ds] for Ds in (Yd, Pd)]
    if any(m * ya * pb > 1 << 53 for ya in big[0] for pb in big[1]) or big[0][-1] > 1 << 62:
        return None  # a partial sum could exceed 2^53 and round
    j = min(s // ell, top)  # the digit that holds 2^s
    if s - j * ell > 60:
        return None
    Pf = [Pd.pop(0).astype(np.float64) for _ in range(p_digits)]  # no int64 copies kept
    worst = 0
    for i0 in range(0, m, _GEMM_BLOCK):
        Yb = [D[i0 : i0 + _GEMM_BLOCK].astype(np.float64) for D in Yd]
        rows = np.arange(Yb[0].shape[0])
        c = [np.zeros((len(rows), m), dtype=np.int64) for _ in range(top + 1)]
        for a, Ya in enumerate(Yb):
            for b, Pb in enumerate(Pf):
                c[a + b] += (Ya @ Pb).astype(np.int64)  # exact: integers <= 2^53
        c[j][rows, i0 + rows] -= 1 << (s - j * ell)
        R = np.zeros_like(c[0])  # carry: E = 2^(top ell) c_top + R, 0 <= R < 2^(top ell)
        for k in range(top):
            R += (c[k] & ((1 << ell) - 1)) << (k * ell)
            c[k + 1] += c[k] >> ell
        H = c[top]
        # |2^t H + R| = 2^t |H| + R when H >= 0, 2^t |H| - R when H <= -1 (t = top ell, 0 <= R < 2^t)
        signed = np.where(H >= 0, R, -R).sum(axis=1)
        for h, e in zip(row_sums_abs(H), signed):
            worst = max(worst, (h << (top * ell)) + int(e))
    return worst


def _split_inverse(P: np.ndarray, *, enough: int = 4, digits=((1, 2), (2, 2))):
    """``(Y, s, e_inf)`` for an int64 ``P`` with ``|P| <= 2^(2 ell)``: for each ``(y, p)`` of
    ``digits`` in turn, P in p base-``2^e`` digits (``e = ceil(2 ell / p)``) and Y of y digits
    (``room - e`` bits for one, ``room`` for two), until ``e_inf < 2^s / enough``; one float inverse
    for all. None when no inverse verifies."""
    room, ell = _digit_bits(P.shape[0])
    Yf = _float_inverse(P)
    best = None
    for y_digits, p_digits in digits if Yf is not None else ():
        e = -(-2 * ell // p_digits)
        approx = _inverse_of_shifted(P, bits=room - e if y_digits == 1 else room, Yf=Yf)
        if approx is None:
            return best
        Y, s = approx
        e_inf = _split_residual_row_sums(Y, P, s, e, y_digits, p_digits)
        if e_inf is not None:
            best = (Y, s, e_inf)
            if enough * e_inf < 1 << s:
                return best
    return best


def _split_theta(Mp: np.ndarray, k: int) -> tuple[Fraction, int, int, int] | None:
    """``(theta, ||Y||_inf, s, k')`` from the split dgemm products for ``M = 2^k (Mp + F)``: Mp
    shifted right by ``k' - k`` more bits to ``2 ell`` bits (module docstring); None when theta is
    not below 1/2 or a bound does not hold."""
    m = Mp.shape[0]
    ell = _digit_bits(m)[1]
    if ell < 8:
        return None
    extra = max(0, int(np.abs(Mp).max()).bit_length() - 2 * ell)
    P = Mp >> extra  # floor(Mp / 2^extra) = floor(M / 2^(k + extra)): |P| <= 2^(2 ell)
    found = _split_inverse(P)
    if found is None:
        return None
    Y, s, e_inf = found
    y_inf = max(row_sums_abs(Y))
    kk = k + extra
    theta = Fraction(e_inf + (m * y_inf if kk else 0), 1 << s)
    return (theta, y_inf, s, kk) if theta < Fraction(1, 2) else None


def _residual_row_sums(Y: np.ndarray, Mp: np.ndarray, s: int) -> int:
    """``max_i sum_j |(Y Mp - 2^s I)_ij|`` exactly (python-flint integer products, ``_BLOCK`` rows of Y
    at a time; never an m x m matrix of Python integers)."""
    import flint

    m = Mp.shape[0]
    F = flint.fmpz_mat(Mp.tolist())
    worst, two_s = 0, 1 << s
    for i0 in range(0, m, _BLOCK):
        P = (flint.fmpz_mat(Y[i0 : i0 + _BLOCK].tolist()) * F).entries()  # exact
        for r in range(len(P) // m):
            row = [int(v) for v in P[r * m : (r + 1) * m]]
            row[i0 + r] -= two_s
            worst = max(worst, sum(map(abs, row)))
    return worst


def _bound(Mp: np.ndarray, k: int, R: Sequence[int]) -> Fraction | None:
    """The bound of `solution_bound` for ``M = 2^k (Mp + F)``, ``0 <= F_ij < 1``, Mp int64 with
    ``|Mp| <= 2^52`` (module docstring)."""
    m = Mp.shape[0]
    fast = _split_theta(Mp, k) if _blas_products() else None
    if fast is not None:
        theta, y_inf, s, k = fast
    else:
        approx = _inverse_of_shifted(Mp)
        if approx is None:
            return None
        Y, s = approx
        e_inf = _residual_row_sums(Y, Mp, s)
        y_inf = max(row_sums_abs(Y))
        theta = Fraction(e_inf + (m * y_inf if k else 0), 1 << s)
        if theta >= Fraction(1, 2):
            return None
    r_inf = max(abs(int(v)) for v in R)
    return Fraction(y_inf * r_inf, 1 << (s + k)) / (1 - theta)


def _shift_to_int64(P: np.ndarray, k: int) -> np.ndarray:
    """``floor(P / 2^k)`` as int64 for an object (or int64) integer array whose shifted entries lie
    within ``2^52`` in absolute value (checked: a violation raises, never a wrong matrix)."""
    if P.dtype not in (np.int64, object):
        P = P.astype(object)
    out = (P >> k) if k else P  # >> on Python ints and numpy int64 (arithmetic): floor division
    if out.size and max(abs(int(out.max())), abs(int(out.min()))) > 1 << 52:
        raise ValueError("shifted entries exceed 2^52")
    return out.astype(np.int64)


def solution_bound(M: np.ndarray, R: Sequence[int]) -> Fraction | None:
    """An exact upper bound of ``||x||_inf`` for the solution of ``M x = R`` (M a square object array
    of Python ints, R integers); None when the verification fails (M singular or too ill-conditioned)."""
    m = M.shape[0]
    if M.ndim != 2 or M.shape != (m, m) or len(R) != m or m == 0:
        return None
    top = max(abs(int(v)).bit_length() for v in M.ravel())
    k = max(0, top - 52)
    return _bound(_shift_to_int64(np.asarray(M, dtype=object), k), k, R)


def kron_solution_bound(L: np.ndarray, Rf: np.ndarray | None, R: Sequence[int]) -> Fraction | None:
    """`solution_bound` for ``M = Z^T`` whose column k is the Kronecker row ``vec(l_k r_k^T)``
    (row-major: entry ``a*d + c`` is ``L[k, a] * Rf[k, c]``), or ``l_k`` when ``Rf`` is None. L, Rf:
    (m', d) integer object arrays with ``m' = d*d`` (attention) or ``d`` (decoder). M is formed
    ``_BLOCK`` columns at a time, shifted to int64 at once: never an m x m array of Python integers."""
    L = np.asarray(L, dtype=object)
    n, d = L.shape if L.ndim == 2 else (0, 0)
    m = d * d if Rf is not None else d
    if n != m or m == 0 or len(R) != m or (Rf is not None and np.asarray(Rf).shape != (n, d)):
        return None
    Rf = None if Rf is None else np.asarray(Rf, dtype=object)

    def bits(F):  # per row: bit length of the largest absolute entry
        return np.array([max(abs(int(v)) for v in row).bit_length() for row in F], dtype=np.int64)

    top = int((bits(L) + (bits(Rf) if Rf is not None else 0)).max())  # >= every entry's bit length
    k = max(0, top - 52)
    MT = np.empty((m, m), dtype=np.int64)  # rows k: Z_k = column k of M
    for i0 in range(0, m, _BLOCK):
        blk = (
            L[i0 : i0 + _BLOCK]
            if Rf is None
            else (L[i0 : i0 + _BLOCK, :, None] * Rf[i0 : i0 + _BLOCK, None, :]).reshape(-1, m)
        )
        MT[i0 : i0 + _BLOCK] = _shift_to_int64(blk, k)
    return _bound(MT.T, k, R)


def gordan_check(rows, g, basis: Sequence[int] | None) -> tuple[bool, str]:
    """The checker's infeasibility test. ``rows``: the checker's exact rows (``N``, ``m``, ``L``, ``R``
    object arrays and ``ATlam``); ``g``: the certificate's `ExactVector`; ``basis``: None (g must be an
    exact Gordan vector) or m row positions (g is a near-Gordan vector, see the module docstring)."""
    if g is None or len(g) != rows.N or any(k < 0 for k in g.ints) or not any(g.ints):
        return False, "not a Gordan certificate (need g >= 0, g != 0 with one entry per row)"
    U = rows.ATlam(g.ints)
    if basis is None:
        ok = not any(U)
        return ok, (
            "g >= 0, g != 0, A^T g = 0 (exact): A w >= 1 is infeasible"
            if ok
            else "not a Gordan certificate (need g >= 0, g != 0, A^T g = 0 exactly)"
        )
    B = [int(b) for b in basis]
    if len(B) != rows.m or len(set(B)) != len(B) or not all(0 <= b < rows.N for b in B):
        return False, f"the Gordan basis must list {rows.m} distinct rows"
    beta = kron_solution_bound(rows.L[B], None if rows.R is None else rows.R[B], U)  # M = Z_B^T
    ok = beta is not None and beta < min(g.ints[b] for b in B)
    if ok:
        return ok, "g >= 0 plus a verified correction on the basis rows is an exact Gordan vector"
    return ok, "the correction on the basis rows is not provably smaller than g there"


def _shifted_gram(G: np.ndarray, H: np.ndarray | None, k: int) -> np.ndarray:
    """``floor(G o H / 2^k)`` (``G`` alone when H is None) as int64, a block of rows at a time."""
    n = G.shape[0]
    P = np.empty((n, n), dtype=np.int64)
    for i0 in range(0, n, _BLOCK):
        if isinstance(G, KronGram):  # floor(M / 2^k) in int64 limbs (`certify.check.kron`)
            i1 = min(n, i0 + _BLOCK)  # M is symmetric: the rows from the diagonal on, mirrored
            P[i0:i1, i0:] = _shift_to_int64(G.shifted_rows(i0, i1, k, j0=i0), 0)
            P[i1:, i0:i1] = P[i0:i1, i1:].T
            continue
        blk = G[i0 : i0 + _BLOCK] if H is None else G[i0 : i0 + _BLOCK] * H[i0 : i0 + _BLOCK]
        P[i0 : i0 + _BLOCK] = _shift_to_int64(blk, k)
    return P


def _split_inverse_diagonal(G, H, top: int) -> list[Fraction] | None:
    """`inverse_diagonal_upper` from the split dgemm products with infinity norms: with
    ``M = 2^k (P + F)``, ``Y (P + F) = 2^s (I - E)``, ``||E||_inf <= theta`` (as in `_split_theta`),
    ``(P + F)^-1 = 2^-s (I - E)^-1 Y``, so ``((P + F)^-1)_ii <= 2^-s (Y_ii + theta/(1 - theta) max_j |Y_ji|)``.
    One digit of Y (``room - e`` bits against P in three digits of e bits: three dgemm calls) is
    kept only when it gives theta below 1/64, else two: the bounds then stay within a few percent
    (a Gram matrix squares the condition number of its rows)."""
    n = G.shape[0]
    ell = _digit_bits(n)[1]
    if ell < 8:
        return None
    k = max(0, top - 2 * ell)  # |M| < 2^top: |P| <= 2^(2 ell)
    P = _shifted_gram(G, H, k)
    found = _split_inverse(P, enough=64, digits=((1, 3), (2, 2)))
    if found is None:
        return None
    Y, s, e_inf = found
    theta = Fraction(e_inf + (n * max(row_sums_abs(Y)) if k else 0), 1 << s)
    if theta >= Fraction(1, 2):
        return None
    extra, col, scale = theta / (1 - theta), column_max_abs(Y), Fraction(1, 1 << (s + k))
    return [(int(Y[i, i]) + extra * int(col[i])) * scale for i in range(n)]


def inverse_diagonal_upper(G, H=None) -> list[Fraction] | None:
    """Rigorous upper bounds of the diagonal of ``M^-1`` for an exact integer Gram matrix M (symmetric
    positive definite): ``M = G`` (a python-flint ``fmpz_mat`` or an n x n array of exact integers), or,
    with H (an array of the same shape), the entrywise product ``M = G o H`` (the Gram matrix of
    Kronecker rows ``vec(l z^T)`` is ``(L L^T) o (Z Z^T)``), formed a block of rows at a time, or
    ``G`` a `KronGram` (the same from the factors, no n x n array of Python integers). None
    when the verification fails (M singular or too ill-conditioned for one float inverse)."""
    import flint

    if not isinstance(G, (np.ndarray, KronGram)):
        G = np.array(G.tolist(), dtype=object).reshape(G.nrows(), G.ncols())
    n = G.shape[0]
    if n == 0:
        return []

    def top_bits(F):  # |F_ij| <= max_i F_ii (Cauchy-Schwarz); checked by the shifts
        return int(np.abs(np.diagonal(F)).max()).bit_length()

    if isinstance(G, KronGram):  # top: >= the bit length of every entry of M
        top = G.top_bits()
    else:
        top = top_bits(G) + (top_bits(H) if H is not None else 0)
    try:
        fast = _split_inverse_diagonal(G, H, top) if _blas_products() else None
        if fast is not None:
            return fast
        k = max(0, top - 52)
        Gp = _shifted_gram(G, H, k)  # M = 2^k (Gp + F), 0 <= F_ij < 1
    except ValueError:  # an entry beyond the diagonal's size: not a Gram matrix, nothing verified
        return None
    approx = _inverse_of_shifted(Gp)
    if approx is None:
        return None
    Y, s = approx
    Yl = Y.tolist()
    P = flint.fmpz_mat(Yl) * flint.fmpz_mat(Gp.tolist())  # exact
    two_s = 1 << s
    pe = [int(x) for x in P.entries()]
    e2 = sum((v - (two_s if i % (n + 1) == 0 else 0)) ** 2 for i, v in enumerate(pe))
    y2 = sum(int(v) * int(v) for v in Y.ravel())
    yf = math.isqrt(y2) + 1  # >= ||Y||_F
    theta = Fraction(math.isqrt(e2) + 1 + (n * yf if k else 0), two_s)  # F = 0 unless k > 0
    if theta >= Fraction(1, 2):
        return None
    extra = theta / (1 - theta) * yf
    scale = Fraction(1, two_s) / (1 << k)
    return [(Yl[i][i] + extra) * scale for i in range(n)]
