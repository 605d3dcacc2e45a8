"""Certified gradient-descent limit of a depth-2 diagonal network (docs/theory.md section 8.9).

``beta_GD = argmin Q_alpha(beta) s.t. X beta = y`` with ``Q_alpha(beta) = sum_i alpha^2 q(beta_i /
alpha^2)``, ``q(z) = 2 - sqrt(4 + z^2) + z asinh(z/2)`` (Woodworth et al. 2020): the limit of gradient
flow on ``beta = w+^2 - w-^2`` from ``w+- = alpha 1``. Pipeline (everything before the last step is a
warm start, never evidence):

1. float Newton on the smooth concave dual ``max_mu y^T mu - sum_i 2 alpha^2 (cosh((X^T mu)_i) - 1)``
   from ``mu = 0``, with a backtracking line search; the primal point is ``2 alpha^2 sinh(X^T mu)``;
2. high-precision refinement: ``X^T mu`` exactly, ``beta~ = 2 alpha^2 sinh(X^T mu)`` in ``arb``
   rounded to a dyadic vector, the residual ``y - X beta~`` exactly, a Newton step with the float
   Hessian ``X diag(2 alpha^2 cosh(X^T mu)) X^T``;
3. the exact projection ``beta^ = beta~ + X^T (X X^T)^-1 (y - X beta~)`` (python-flint's rational
   solve, N <= `EXACT_PROJECTION_LIMIT`): an exactly feasible rational point;
4. the certificate: ``Q_alpha(beta^)``, the dual value at ``mu`` and the distance bound computed by the
   checker's own functions (`certify.regression.psicheck`), rounded outward by a few bits.
"""

from __future__ import annotations

import time
from fractions import Fraction

import numpy as np

from certify.exact import dyadic
from certify.regression.certificate import InterpStatus
from certify.regression.check import lower_ball, upper_ball
from certify.regression.intmat import IntMatrix
from certify.regression.exactstep import SolveResult, refine_feasible, round_dyadic
from certify.regression.problem import RegressionProblem
from certify.regression.psicheck import (
    PsiCertificate,
    dual_ball,
    parse_alpha,
    psi_ball,
    psi_distance,
)

__all__ = ["PsiResult", "certify_psi", "EXACT_PROJECTION_LIMIT"]

#: largest N for which the feasible projection is formed exactly (a rational N x N solve)
EXACT_PROJECTION_LIMIT = 400


#: what `certify_psi` returns (`certify.regression.exactstep.SolveResult`)
PsiResult = SolveResult


def _dual_newton(X: np.ndarray, y: np.ndarray, a2: float, *, max_iter: int = 200):
    """Float Newton on the concave dual from mu = 0; returns (mu, steps)."""
    mu = np.zeros(len(y))

    def value(m):
        with np.errstate(over="ignore", invalid="ignore"):
            v = float(y @ m - 2 * a2 * np.sum(np.cosh(X.T @ m) - 1))
        return v if np.isfinite(v) else -np.inf

    f, steps, scale, best = value(mu), 0, max(np.linalg.norm(y), 1e-300), np.inf
    for steps in range(1, max_iter + 1):
        u = X.T @ mu
        g = y - X @ (2 * a2 * np.sinh(u))
        gn = np.linalg.norm(g) / scale
        if gn <= 1e-15 or (
            gn < 1e-9 and gn > 0.5 * best
        ):  # converged, or stalled at float accuracy
            break
        best = min(best, gn)
        H = (X * (2 * a2 * np.cosh(u))) @ X.T
        try:
            d = np.linalg.solve(H, g)
        except np.linalg.LinAlgError:
            d = np.linalg.lstsq(H, g, rcond=None)[0]
        t = 1.0
        while t > 1e-14:
            f_new = value(mu + t * d)
            if f_new >= f + 1e-4 * t * float(g @ d):
                break
            t /= 2
        if t <= 1e-14:  # no ascent left at float accuracy
            break
        mu, f = mu + t * d, f_new
    return mu, steps


def _primal(u: list[int], ue: int, a2: Fraction, bits: int) -> tuple[list[int], int]:
    """``2 alpha^2 sinh(u 2^ue)`` rounded to integers times ``2^e`` (about ``bits`` bits each)."""
    from flint import arb, fmpq

    c = arb(fmpq(2 * a2.numerator, a2.denominator))
    vals = [c * (arb(int(k)) * arb(2) ** ue).sinh() for k in u]
    tops = [int(v.mid().man_exp()[0]).bit_length() + int(v.mid().man_exp()[1]) for v in vals if v]
    e = (max(tops) if tops else 0) - bits
    out = []
    for v in vals:
        man, ex = v.mid().man_exp()
        man, ex = int(man), int(ex) - e
        out.append(man << ex if ex >= 0 else -((-man) >> -ex) if man < 0 else man >> -ex)
    return out, e


def certify_psi(
    problem: RegressionProblem,
    alpha,
    *,
    bits: int = 200,
    refine_steps: int = 3,
    prec: int | None = None,
) -> PsiResult:
    """Certify ``min Q_alpha(beta) s.t. X beta = y`` for the exact data of ``problem``.

    Args:
        problem: the data.
        alpha: the initialization scale, an exact positive rational (a decimal string such as "0.1").
        bits: precision of the refined point and dual vector.
        refine_steps: high-precision Newton steps after the float solve.
        prec: ball precision of the bounds (default bits + 64).
    """
    from certify.blas import all_cpu_blas, single_thread_blas

    threads = single_thread_blas if problem.N**2 * problem.D < 2 * 10**9 else all_cpu_blas
    with threads():
        return _certify(problem, parse_alpha(alpha), bits, refine_steps, prec or bits + 64)


def _certify(problem: RegressionProblem, alpha: Fraction, bits: int, refine_steps: int, prec: int):
    from flint import ctx

    t0 = time.perf_counter()
    a2 = alpha * alpha
    dx, dy = dyadic(problem.X), dyadic(problem.y)
    Zx, Zy = IntMatrix(dx.ints), [int(k) for k in dy.ints]
    h, shape = problem.data_hash(), (problem.N, problem.D)

    def refused(reason: str, steps: int = 0) -> PsiResult:
        cert = PsiCertificate(InterpStatus.NO_VERIFIED_RESULT, alpha, h, shape, reason=reason)
        return PsiResult(cert, time.perf_counter() - t0, steps)

    if problem.N > EXACT_PROJECTION_LIMIT:
        return refused(f"N > {EXACT_PROJECTION_LIMIT}: the exact feasible projection is not formed")
    mu, steps = _dual_newton(problem.X, problem.y, float(a2))
    if not np.all(np.isfinite(mu)):
        return refused("the float dual solve did not converge", steps)
    X = problem.X
    with ctx.workprec(prec):
        beta, mu_vec = refine_feasible(
            X,
            Zx,
            dx.exp,
            Zy,
            dy.exp,
            mu,
            primal=lambda u, ue: _primal(u, ue, a2, bits),
            weights=lambda uf: 2 * float(a2) * np.cosh(uf),
            times_xt=Zx.rmatvec,
            steps=refine_steps,
        )
        if beta is None:
            return refused(
                "X X^T is singular (X lacks full row rank); remove dependent rows", steps
            )
        ub = upper_ball(psi_ball(beta, alpha))
        lb = lower_ball(dual_ball(Zx, dx.exp, Zy, dy.exp, mu_vec, alpha))
        if ub is None or lb is None or lb > ub:
            return refused("the bounds are not finite (the data or alpha are out of range)", steps)
        dist = psi_distance(ub, lb, beta, alpha)
        if dist is None:
            return refused("no distance bound", steps)
    slack = Fraction(1, 1 << (prec - 16))  # the checker recomputes at its own precision
    cert = PsiCertificate(
        InterpStatus.OPTIMAL,
        alpha,
        h,
        shape,
        opt_lower=round_dyadic(lb - abs(lb) * slack - slack, prec, down=True),
        opt_upper=round_dyadic(ub + abs(ub) * slack + slack, prec, down=False),
        distance_upper=round_dyadic(dist * (1 + slack) + slack, prec, down=False),
        beta=beta,
        mu=mu_vec,
    )
    return PsiResult(cert, time.perf_counter() - t0, steps)
