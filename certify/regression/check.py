"""Independent checker of l_p interpolation certificates (docs/theory.md section 8.3). Trusted.

Re-derives every claim of an `InterpolationCertificate` from the regression data alone, with exact
integer products (`certify.regression.intmat`), the verified inverse-diagonal bound of an exact Gram
matrix (`certify.check.verified`) and outward-rounded balls (python-flint ``arb``). It imports no solver.

With ``X = Zx 2^ex``, ``y = Zy 2^ey``, ``beta~ = b 2^eb / db`` and ``mu = m 2^em / dm``:

- residual: ``r = y - X beta~`` exactly; when ``r != 0`` the nearest feasible point is
  ``beta_f = beta~ + X^T (X X^T)^-1 r`` and ``||beta_f - beta~||_2^2 = r^T (X X^T)^-1 r <= ||r||_2^2
  trace((X X^T)^-1)``, the trace bounded from the verified diagonal of ``(Zx Zx^T)^-1``;
  ``||.||_p <= ||.||_2`` for p >= 2 and ``<= D^(1/p - 1/2) ||.||_2`` for p < 2. This is ``e``.
  First tried (`sigma_lower`): ``||X^T (X X^T)^-1 r||_2 <= ||r||_2 / sigma_min(X)``, with X rounded
  to ``Xh = Zh 2^eh`` (``|Zh| <= 2^b``, ``D 2^(2b) <= 2^53``: ``Zh Zh^T`` is exact in one float64
  product), ``sigma_min(Xh) >= 2^eh trace((Zh Zh^T)^-1)^(-1/2)`` (verified diagonal) and Weyl's
  ``sigma_min(X) >= sigma_min(Xh) - sqrt(N D) 2^(eh - 1)`` (``|X - Xh| <= 2^(eh - 1)`` entrywise);
- ``OPT <= ||beta_f||_p <= ||beta~||_p + e`` (the claimed ``opt_upper`` must be at least this);
- weak duality: ``y^T mu = beta^T X^T mu <= ||beta||_p ||X^T mu||_q`` for every feasible beta, so
  ``OPT >= y^T mu / ||X^T mu||_q`` when ``y^T mu > 0`` (``opt_lower`` must be at most this);
- distance (theory.md section 4.2, the feasible set is affine so the first-order term vanishes):
  ``||beta~ - beta*||_p <= e + sqrt((UB^2 - LB^2)/(p-1))`` for p <= 2 and
  ``e + ((UB^p - LB^p)(2^(p-1) - 1))^(1/p)`` for p >= 2;
- `inconsistent`: ``Zx^T g = 0`` exactly and ``Zy^T g != 0``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from certify.exact import conjugate, dyadic
from certify.regression.certificate import ExactVec, InterpolationCertificate, InterpStatus
from certify.regression.intmat import IntMatrix, exact_blas
from certify.regression.problem import RegressionProblem
from certify.check.verified import inverse_diagonal_upper

__all__ = [
    "InterpCheck",
    "check_interpolation",
    "residual_of",
    "residual_bound",
    "sigma_lower",
    "norm_ball",
    "lower_bound_ball",
    "distance_upper",
    "upper_ball",
    "lower_ball",
]


@dataclass(frozen=True)
class InterpCheck:
    """The checker's verdict: ``ok`` when every claim holds; ``failures`` names the first ones that do not."""

    ok: bool
    checked: tuple[str, ...]
    failures: tuple[str, ...]


def _arb(x: Fraction):
    from flint import arb, fmpq

    return arb(fmpq(x.numerator, x.denominator))


def upper_ball(ball) -> Fraction | None:
    if not ball.is_finite():
        return None
    man, ex = ball.upper().man_exp()
    return Fraction(int(man)) * Fraction(2) ** int(ex)


def lower_ball(ball) -> Fraction | None:
    if not ball.is_finite():
        return None
    man, ex = ball.lower().man_exp()
    return Fraction(int(man)) * Fraction(2) ** int(ex)


def norm_ball(ints, scale: Fraction, a: Fraction):
    """Ball of ``(sum_j |ints_j * scale|^a)^(1/a)`` for a > 0: the sum exact in integers for a = 1..4,
    enclosed by integer square roots for a = 3/2 (``k isqrt(k 4^t) <= k^(3/2) 2^t`` < that + k, t
    chosen so the width, at most the count over ``2^t max(k)^(1/2)``, is below the sum's last bit of
    precision), else arb powers."""
    from flint import arb, ctx

    nz = [abs(int(k)) for k in ints if k]
    if not nz:
        return arb(0)
    top = max(k.bit_length() for k in nz)
    ea = _arb(a)
    if a.denominator == 1 and 1 <= a <= 4:  # scaled by 2^(-a top): the root's argument near 1
        s = arb(sum(k**a.numerator for k in nz)) * arb(2) ** (-a.numerator * top)
    elif a == Fraction(3, 2):  # r = isqrt(k 4^t): k r <= k^(3/2) 2^t < k r + k
        top += top % 2
        t = max(0, ctx.prec + 10 + len(nz).bit_length() - top // 2)
        lo = sum(k * math.isqrt(k << 2 * t) for k in nz)
        s = arb(lo).union(arb(lo + sum(nz))) * arb(2) ** (-t - 3 * top // 2)
    else:
        s = arb(0)
        for k in nz:
            s += (arb(k) * arb(2) ** (-top)) ** ea
    return s ** (1 / ea) * arb(2) ** top * _arb(scale)


def residual_of(
    Zx: IntMatrix, ex: int, Zy: list[int], ey: int, beta: ExactVec
) -> tuple[list[int], Fraction]:
    """``y - X beta~ = R * scale`` exactly, for ``beta~ = b 2^eb / db``: with ``s = min(ey, ex + eb)``,
    ``R = Zy db 2^(ey - s) - (Zx b) 2^(ex + eb - s)`` and ``scale = 2^s / db``."""
    s = min(ey, ex + beta.exp)
    Xb = Zx.matvec(beta.ints)
    R = [
        zy * beta.den * (1 << (ey - s)) - xb * (1 << (ex + beta.exp - s)) for zy, xb in zip(Zy, Xb)
    ]
    return R, Fraction(2) ** s / beta.den


def sigma_lower(X: np.ndarray) -> Fraction | None:
    """A positive lower bound of the smallest singular value of the float64 N x D matrix X (module
    docstring), or None. ``Xh = rint(X 2^-eh) 2^eh`` with ``max |X| < 2^(eh + b)``: rint and exact
    power-of-two scaling leave ``|X - Xh| <= 2^(eh - 1)``, ``|Zh| <= 2^b``, and every product and
    partial sum of ``Zh Zh^T`` is an integer of at most ``D 2^(2b) <= 2^53`` (the BLAS assumption of
    docs/theory.md section 4.6; int64 without BLAS under ``MDCERT_EXACT_PRODUCTS=flint``)."""
    from flint import arb

    N, D = X.shape
    top = float(np.abs(X).max()) if X.size else 0.0
    b = (53 - (D - 1).bit_length()) // 2
    if N > D or top == 0 or b < 8:
        return None
    eh = int(np.frexp(top)[1]) - b  # top < 2^(eh + b)
    Zh = np.rint(np.ldexp(X, -eh))
    G = (Zh @ Zh.T if exact_blas() else Zh.astype(np.int64) @ Zh.astype(np.int64).T).astype(
        np.int64
    )
    diag = inverse_diagonal_upper(G)
    if diag is None:
        return None
    trace = _arb(sum(diag, Fraction(0)))
    low = lower_ball((1 / trace.sqrt() - arb(N * D).sqrt() / 2) * arb(2) ** eh)
    return low if low is not None and low > 0 else None


def residual_bound(
    Zx, ex: int, R: list[int], er: Fraction, p: Fraction, *, X: np.ndarray | None = None
) -> Fraction | None:
    """Upper bound of ``||X^T (X X^T)^-1 r||_p`` for ``r = R * er`` (exact); 0 when R = 0; with X
    (the float64 data ``Zx 2^ex``), from `sigma_lower` when that succeeds, else from the exact Gram
    matrix; None when ``Zx Zx^T`` is not verified invertible (X not of full row rank, or too
    ill-conditioned)."""
    if not any(R):
        return Fraction(0)
    from flint import arb

    D = Zx.shape[1]
    c = arb(1) if p >= 2 else arb(D) ** (_arb(1 / p) - _arb(Fraction(1, 2)))
    r2 = Fraction(sum(int(k) * int(k) for k in R)) * er * er
    sigma = sigma_lower(X) if X is not None else None
    if sigma is not None:
        return upper_ball(c * _arb(r2).sqrt() / _arb(sigma))
    diag = inverse_diagonal_upper(Zx.gram())
    if diag is None:
        return None
    trace = sum(diag, Fraction(0))  # >= the largest eigenvalue of (Zx Zx^T)^-1
    return upper_ball(c * _arb(r2 * trace / Fraction(2) ** (2 * ex)).sqrt())


def lower_bound_ball(Zx, ex: int, Zy, ey: int, m_ints, q: Fraction, *, u=None):
    """Ball of ``y^T mu / ||X^T mu||_q`` (the dyadic scale and denominator of mu cancel); ``u``, when
    the caller (the solver) has it, is ``Zx^T m_ints`` (the checker recomputes it)."""
    from flint import arb

    u = Zx.rmatvec(m_ints) if u is None else u
    num = sum(int(a) * int(b) for a, b in zip(Zy, m_ints))
    if num <= 0 or not any(u):
        return arb(0)
    return _arb(Fraction(num) * Fraction(2) ** (ey - ex)) / norm_ball(u, Fraction(1), q)


def distance_upper(ub: Fraction, lb: Fraction, p: Fraction) -> Fraction:
    """Upper bound of ``||beta_f - beta*||_p`` for a feasible ``beta_f`` with ``||beta_f||_p <= ub`` and
    ``OPT >= lb >= 0`` (docs/theory.md section 4.2; the first-order term is zero on an affine set)."""
    from flint import arb

    if p <= 2:
        gap = ub * ub - lb * lb
        return (
            upper_ball((_arb(max(gap, Fraction(0)) / (p - 1))).sqrt()) if gap > 0 else Fraction(0)
        )
    ea = _arb(p)
    gap = upper_ball(_arb(ub) ** ea - _arb(lb) ** ea)
    if gap is None:
        raise ValueError("distance bound: the gap is not finite")
    if gap <= 0:
        return Fraction(0)
    return upper_ball((_arb(gap) * (arb(2) ** (ea - 1) - 1)) ** (1 / ea))


def check_interpolation(
    problem: RegressionProblem, cert: InterpolationCertificate, *, p: Fraction | None = None
) -> InterpCheck:
    """Re-check ``cert`` against ``problem`` (module docstring); ``p``, when given, must match. Balls
    are computed at 64 bits beyond the longest integer the certificate holds (its own precision)."""
    from flint import ctx

    ints = [k for v in (cert.beta, cert.mu) if v is not None for k in (*v.ints, v.den)]
    ints += [
        x
        for f in (cert.opt_lower, cert.opt_upper, cert.distance_upper, cert.residual_upper)
        if f is not None
        for x in (f.numerator, f.denominator)
    ]
    prec = 64 + max((abs(k).bit_length() for k in ints), default=64)
    from contextlib import nullcontext

    from threadpoolctl import threadpool_limits  # thread counts only: the digit products stay exact

    small = (
        problem.N**2 * problem.D < 2 * 10**9
    )  # one BLAS thread: see certify.regression.interpolate
    with ctx.workprec(min(prec, 1 << 16)), threadpool_limits(1) if small else nullcontext():
        return _check(problem, cert, p)


def _check(
    problem: RegressionProblem, cert: InterpolationCertificate, p: Fraction | None
) -> InterpCheck:
    checked: list[str] = []
    failures: list[str] = []

    def claim(name: str, holds: bool, why: str = "") -> None:
        checked.append(name)
        if not holds:
            failures.append(f"{name}: {why}" if why else name)

    claim("data_hash", cert.data_hash == problem.data_hash(), "the certificate is about other data")
    claim(
        "shape",
        cert.shape == (problem.N, problem.D),
        f"certificate shape {cert.shape}, data {problem.X.shape}",
    )
    if p is not None:
        claim("p", cert.p == p, f"certificate p = {cert.p}, expected {p}")
    if failures or cert.status is InterpStatus.NO_VERIFIED_RESULT:
        return InterpCheck(not failures, tuple(checked), tuple(failures))
    (Zx, ex), dy = IntMatrix.of_float(problem.X), dyadic(problem.y)
    Zy = [int(k) for k in dy.ints]
    if cert.status is InterpStatus.INCONSISTENT:
        g = cert.kernel.ints
        claim("X^T g = 0", not any(Zx.rmatvec(g)), "X^T g is not exactly zero")
        claim("y^T g != 0", sum(a * b for a, b in zip(Zy, g)) != 0, "y^T g is zero")
        return InterpCheck(not failures, tuple(checked), tuple(failures))
    b, mu, pp = cert.beta, cert.mu, cert.p
    R, scale = residual_of(Zx, ex, Zy, dy.exp, b)
    e = residual_bound(Zx, ex, R, scale, pp, X=problem.X)
    if e is None or e > cert.residual_upper:  # the exact Gram matrix's bound (older certificates)
        exact = residual_bound(Zx, ex, R, scale, pp)
        e = exact if e is None or (exact is not None and exact < e) else e
    claim(
        "residual",
        e is not None and e <= cert.residual_upper,
        "X X^T is not verified invertible and X beta~ != y"
        if e is None
        else f"the distance to the feasible set can be {float(e):.3g} > residual_upper",
    )
    if e is None:
        return InterpCheck(False, tuple(checked), tuple(failures))
    ub = norm_ball(b.ints, Fraction(2) ** b.exp / b.den, pp) + _arb(e)
    lb = lower_bound_ball(Zx, ex, Zy, dy.exp, mu.ints, conjugate(pp))
    ub_up, lb_lo = upper_ball(ub), lower_ball(lb)
    claim(
        "opt_upper",
        ub_up is not None and ub_up <= cert.opt_upper,
        "opt_upper is below ||beta~||_p + e",
    )
    claim(
        "opt_lower",
        lb_lo is not None and cert.opt_lower <= lb_lo and cert.opt_lower <= cert.opt_upper,
        "opt_lower is above y^T mu / ||X^T mu||_q",
    )
    total = None
    if ub_up is not None and lb_lo is not None:
        total = e + distance_upper(ub_up, max(lb_lo, Fraction(0)), pp)
    claim(
        "distance_upper",
        total is not None and total <= cert.distance_upper,
        "distance_upper is below the bound recomputed from the gap",
    )
    return InterpCheck(not failures, tuple(checked), tuple(failures))
