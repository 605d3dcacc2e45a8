"""Exact steps shared by the certified separable-potential interpolation programs
(`certify.regression.psi`, `certify.regression.eprog`; docs/theory.md sections 8.9 and 8.10): a
float vector as exact dyadic integers, the exact projection of a point onto ``{X beta = y}``, and
outward rounding of a bound to a short dyadic. Solver side: the checkers re-prove what comes out."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from certify.exact import dyadic
from certify.regression.certificate import ExactVec
from certify.regression.intmat import IntMatrix
from certify.regression.psicheck import long_product

__all__ = ["to_ints", "exact_projection", "round_dyadic"]


def to_ints(v: np.ndarray) -> tuple[list[int], int]:
    """``v`` (float64) as exact integers times ``2^e``."""
    d = dyadic(np.asarray(v, dtype=np.float64))
    return [int(k) for k in d.ints.ravel()], int(d.exp)


def exact_projection(Zx: IntMatrix, ex: int, R: list[int], s: int, b: list[int], eb: int):
    """``beta~ + X^T (X X^T)^-1 r`` for ``r = R 2^s``, ``beta~ = b 2^eb`` exactly, or None when
    ``X X^T`` is singular. With ``G = Zx Zx^T`` and ``w / dw = G^-1 R``: the step is
    ``(Zx^T w) 2^(s - ex) / dw``."""
    import flint

    if not any(R):
        return ExactVec(tuple(b), eb)
    N = len(R)
    G = Zx.gram()
    A = flint.fmpz_mat(N, N, [int(x) for x in G.ravel()])
    try:
        z = A.solve(flint.fmpz_mat(N, 1, [int(k) for k in R]))
    except (ZeroDivisionError, ValueError):
        return None
    dw = 1
    for i in range(N):
        dw = math.lcm(dw, int(z[i, 0].q))
    w = [int(z[i, 0].p) * (dw // int(z[i, 0].q)) for i in range(N)]
    step = long_product(Zx, w, transpose=True)
    e = min(eb, s - ex)
    ints = [bi * dw * (1 << (eb - e)) + si * (1 << (s - ex - e)) for bi, si in zip(b, step)]
    return ExactVec(tuple(ints), e, dw)


def round_dyadic(x: Fraction, bits: int, *, down: bool) -> Fraction:
    """``x`` rounded to a dyadic of ``bits`` significant bits, down or up."""
    if x == 0:
        return x
    e = (abs(x.numerator).bit_length() - x.denominator.bit_length()) - bits
    k = x / Fraction(2) ** e
    k = k.__floor__() if down else k.__ceil__()
    return Fraction(k) * Fraction(2) ** e
