"""Certified smoothed-sign limit ``min E(beta) s.t. X beta = y`` with a realized v (docs/theory.md
section 8.10; the certificate and its checker are `certify.regression.echeck`).

``E(beta) = (2/3) sum_i (|beta_i| + c_i)^(3/2)``, ``c_i = v_i^2`` (section 8.4). Per coordinate
``phi*(s) = (1/3)(|s| - |v_i|)_+^2 (|s| + 2|v_i|) - (2/3)|v_i|^3``, so ``(phi*)'(s) = sign(s) (s^2 -
c_i)_+``. Pipeline (everything before the last step is a warm start, never evidence):

1. float damped Newton on the concave, once differentiable dual ``max_mu y^T mu - sum_i
   phi_i*((X^T mu)_i)`` (gradient ``y - X beta(mu)``, ``beta(mu) = sign(u)(u^2 - c)_+``, generalized
   Hessian ``-X diag(2|u_i| [|u_i| > |v_i|]) X^T``), from the least-squares direction;
2. high-precision refinement: ``X^T mu`` exactly, ``beta~ = sign(u)(u^2 - c)_+`` exactly (rounded to
   ``bits`` bits), the residual exactly, a Newton step with the float generalized Hessian;
3. the exact projection ``beta^ = beta~ + X^T (X X^T)^-1 (y - X beta~)`` (python-flint's rational solve,
   N <= `EXACT_PROJECTION_LIMIT`);
4. the certificate: ``E(beta^)``, the dual value at ``mu`` and the distance bound computed by the
   checker's own functions, rounded outward by a few bits.
"""

from __future__ import annotations

import time
from fractions import Fraction

import numpy as np

from certify.exact import dyadic
from certify.regression.certificate import ExactVec, InterpStatus
from certify.regression.check import lower_ball, upper_ball
from certify.regression.echeck import ECertificate, e_ball, e_distance, e_dual_ball, v_vector
from certify.regression.intmat import IntMatrix
from certify.regression.exactstep import SolveResult, refine_feasible, round_dyadic
from certify.regression.problem import RegressionProblem
from certify.regression.psicheck import long_product

__all__ = ["EResult", "certify_e", "EXACT_PROJECTION_LIMIT"]

#: largest N for which the feasible projection is formed exactly (a rational N x N solve)
EXACT_PROJECTION_LIMIT = 400


#: what `certify_e` returns (`certify.regression.exactstep.SolveResult`)
EResult = SolveResult


def _primal_float(u: np.ndarray, a: np.ndarray) -> np.ndarray:
    return np.sign(u) * np.maximum(u * u - a * a, 0.0)


def _dual_newton(X: np.ndarray, y: np.ndarray, a: np.ndarray, *, max_iter: int = 300):
    """Float damped Newton on the concave dual; returns (mu, steps)."""

    def value(m):
        u = np.abs(X.T @ m)
        h = np.maximum(u - a, 0.0)
        with np.errstate(over="ignore", invalid="ignore"):
            v = float(y @ m - np.sum(h * h * (u + 2 * a)) / 3)
        return v if np.isfinite(v) else -np.inf

    G = X @ X.T
    try:
        mu = np.linalg.solve(G, y)
    except np.linalg.LinAlgError:
        mu = np.linalg.lstsq(G, y, rcond=None)[0]
    ts = [2.0**k for k in range(-40, 41)]  # the best multiple of the least-squares dual
    mu = max((t * mu for t in ts), key=value)
    f, steps, scale = value(mu), 0, max(np.linalg.norm(y), 1e-300)
    best, damp = (
        np.inf,
        1e-12,
    )  # Levenberg-Marquardt: raised where the generalized Hessian is (nearly) singular
    for steps in range(1, max_iter + 1):
        u = X.T @ mu
        g = y - X @ _primal_float(u, a)
        gn = np.linalg.norm(g) / scale
        if gn <= 1e-15 or (
            gn < 1e-9 and gn > 0.5 * best
        ):  # converged, or stalled at float accuracy
            break
        best = min(best, gn)
        H = (X * (2 * np.abs(u) * (np.abs(u) > a))) @ X.T
        size = max(float(np.max(np.diag(H))), float(np.max(np.diag(G))) * 1e-12, 1e-300)
        while damp < 1e20:
            d = np.linalg.solve(H + damp * size * np.eye(len(y)), g)
            t = 1.0
            while t > 1e-6:
                f_new = value(mu + t * d)
                if f_new >= f + 1e-4 * t * float(g @ d):
                    break
                t /= 2
            if t > 1e-6:
                break
            damp *= 1e3
        if damp >= 1e20:  # no ascent left at float accuracy
            break
        mu, f, damp = mu + t * d, f_new, max(damp / 1e3, 1e-12)
    return mu, steps


def _primal_exact(u: list[int], eu: int, v: ExactVec, bits: int) -> tuple[list[int], int]:
    """``sign(u)(u^2 - v^2)_+`` for ``u 2^eu`` (exact) rounded toward zero to about ``bits`` bits."""
    e0 = min(2 * eu, 2 * v.exp)
    vals = []
    for k, w in zip(u, v.ints):
        q = k * k * (1 << (2 * eu - e0)) - w * w * (1 << (2 * v.exp - e0))
        vals.append((1 if k > 0 else -1) * q if q > 0 else 0)
    top = max((abs(x).bit_length() for x in vals), default=0)
    shift = max(top - bits, 0)
    return [x >> shift if x >= 0 else -((-x) >> shift) for x in vals], e0 + shift


def certify_e(
    problem: RegressionProblem,
    v,
    *,
    bits: int = 200,
    refine_steps: int = 3,
    prec: int | None = None,
) -> EResult:
    """Certify ``min E(beta) s.t. X beta = y`` (``c = v^2``) for the exact data of ``problem``.

    Args:
        problem: the data.
        v: the realized non-dominant weights (D float64 values, read exactly).
        bits: precision of the refined point and dual vector.
        refine_steps: high-precision Newton steps after the float solve.
        prec: ball precision of the bounds (default bits + 64).
    """
    from certify.blas import all_cpu_blas, single_thread_blas
    from certify.errors import MdcertError

    vec = v_vector(v)
    if len(vec.ints) != problem.D:
        raise MdcertError(f"v must have D = {problem.D} entries, got {len(vec.ints)}")
    threads = single_thread_blas if problem.N**2 * problem.D < 2 * 10**9 else all_cpu_blas
    with threads():
        return _certify(problem, vec, bits, refine_steps, prec or bits + 64)


def _certify(problem: RegressionProblem, v: ExactVec, bits: int, refine_steps: int, prec: int):
    from flint import ctx

    t0 = time.perf_counter()
    dx, dy = dyadic(problem.X), dyadic(problem.y)
    Zx, Zy = IntMatrix(dx.ints), [int(k) for k in dy.ints]
    h, shape = problem.data_hash(), (problem.N, problem.D)

    def refused(reason: str, steps: int = 0) -> EResult:
        cert = ECertificate(InterpStatus.NO_VERIFIED_RESULT, v, h, shape, reason=reason)
        return EResult(cert, time.perf_counter() - t0, steps)

    if problem.N > EXACT_PROJECTION_LIMIT:
        return refused(f"N > {EXACT_PROJECTION_LIMIT}: the exact feasible projection is not formed")
    a = np.abs(np.array([float(k * Fraction(2) ** v.exp) for k in v.ints]))
    X = problem.X
    mu, steps = _dual_newton(X, problem.y, a)
    if not np.all(np.isfinite(mu)):
        return refused("the float dual solve did not converge", steps)
    with ctx.workprec(prec):
        beta, mu_vec = refine_feasible(
            X,
            Zx,
            dx.exp,
            Zy,
            dy.exp,
            mu,
            primal=lambda u, ue: _primal_exact(u, ue, v, bits),
            weights=lambda uf: 2 * np.abs(uf) * (np.abs(uf) > a),
            times_xt=lambda m: long_product(Zx, m, transpose=True),
            steps=refine_steps,
        )
        if beta is None:
            return refused(
                "X X^T is singular (X lacks full row rank); remove dependent rows", steps
            )
        ub = upper_ball(e_ball(beta, v))
        lb = lower_ball(e_dual_ball(Zx, dx.exp, Zy, dy.exp, mu_vec, v))
        if ub is None or lb is None or lb > ub:
            return refused("the bounds are not finite (the data or v are out of range)", steps)
        dist = e_distance(ub, lb, beta, v)
        if dist is None:
            return refused("no distance bound", steps)
    slack = Fraction(1, 1 << (prec - 16))  # the checker recomputes at its own precision
    cert = ECertificate(
        InterpStatus.OPTIMAL,
        v,
        h,
        shape,
        opt_lower=round_dyadic(lb - abs(lb) * slack - slack, prec, down=True),
        opt_upper=round_dyadic(ub + abs(ub) * slack + slack, prec, down=False),
        distance_upper=round_dyadic(dist * (1 + slack) + slack, prec, down=False),
        beta=beta,
        mu=mu_vec,
    )
    return EResult(cert, time.perf_counter() - t0, steps)
