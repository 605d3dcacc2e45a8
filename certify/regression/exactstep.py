"""Exact steps shared by the certified separable-potential interpolation programs
(`certify.regression.psi`, `certify.regression.eprog`; docs/theory.md sections 8.9 and 8.10): a
float vector as exact dyadic integers, the exact projection of a point onto ``{X beta = y}``, and
outward rounding of a bound to a short dyadic. Solver side: the checkers re-prove what comes out."""

from __future__ import annotations

import math
from fractions import Fraction
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from certify.exact import dyadic
from certify.regression.certificate import ExactVec
from certify.regression.intmat import IntMatrix
from certify.regression.check import residual_of
from certify.regression.psicheck import long_product

__all__ = ["SolveResult", "to_ints", "exact_projection", "round_dyadic", "refine_feasible"]


@dataclass(frozen=True)
class SolveResult:
    """A certificate of one interpolation program (l_p, psi or E) plus what the solve measured
    (wall seconds, Newton steps; not evidence)."""

    certificate: Any
    seconds: float
    newton_steps: int

    @property
    def point(self) -> np.ndarray:
        """The certificate's point as float64 (rounded; the certificate holds the exact vector)."""
        b = self.certificate.beta
        return np.array([float(b.entry(i)) for i in range(len(b.ints))])


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


def refine_feasible(
    X: np.ndarray,
    Zx: IntMatrix,
    dx_exp: int,
    Zy: list[int],
    dy_exp: int,
    mu: np.ndarray,
    *,
    primal: Callable[[list[int], int], tuple[list[int], int]],
    weights: Callable[[np.ndarray], np.ndarray],
    times_xt: Callable[[list[int]], list[int]],
    steps: int,
) -> tuple[ExactVec | None, ExactVec]:
    """Newton steps on the dual at high precision, then the exact feasible point.

    From the float dual ``mu``: ``u = X^T mu`` exactly (``times_xt``), the primal point
    ``primal(u, exponent)`` (integers times a power of two), its exact residual ``y - X beta``; a
    float Newton step ``(X diag(weights(u)) X^T) d = r`` on the dual, added exactly, at most
    ``steps`` times or until the residual is 0. Returns the exact projection of the last primal
    point onto ``{X beta = y}`` (None when ``X X^T`` is singular) and the dual vector used.
    """
    m_ints, m_exp = to_ints(mu)
    for it in range(steps + 1):
        u = times_xt(m_ints)  # X^T mu = u 2^(ex + m_exp)
        b_ints, b_exp = primal(u, dx_exp + m_exp)
        R, scale = residual_of(Zx, dx_exp, Zy, dy_exp, ExactVec(tuple(b_ints), b_exp))
        if it == steps or not any(R):
            break
        r = np.array([float(Fraction(k) * scale) for k in R])
        uf = np.array([float(Fraction(k) * Fraction(2) ** (dx_exp + m_exp)) for k in u])
        try:
            d = np.linalg.solve((X * weights(uf)) @ X.T, r)
        except np.linalg.LinAlgError:
            break
        if not np.all(np.isfinite(d)):
            break
        d_ints, d_exp = to_ints(d)
        e = min(m_exp, d_exp)
        m_ints = [a * (1 << (m_exp - e)) + c * (1 << (d_exp - e)) for a, c in zip(m_ints, d_ints)]
        m_exp = e
    beta = exact_projection(Zx, dx_exp, R, min(dy_exp, dx_exp + b_exp), b_ints, b_exp)
    return beta, ExactVec(tuple(m_ints), m_exp)
