"""Certified minimum-l_p-norm interpolation: ``min ||beta||_p s.t. X beta = y`` (docs/theory.md section 8.3).

The eps -> 0 idealization of smoothed sign descent's limit is p = 3/2 (arXiv 2410.14158); p = 2 is
the minimum-norm interpolator. Pipeline (everything before the last step is a warm start, never
evidence):

1. float dual Newton on ``max_mu y^T mu - (1/q)||X^T mu||_q^q`` (X, y rescaled by powers of two),
   started at the least-squares dual ``(X X^T)^-1 y``, with a backtracking line search;
2. high-precision refinement: each step forms ``X^T mu`` exactly, the primal point
   ``beta = phi(X^T mu)`` (``phi(u) = sign(u)|u|^(q-1)``) in ``arb`` rounded to a dyadic vector, and
   the dual residual ``y - X beta`` exactly, then takes a Newton step with the float Hessian;
3. the certificate: ``beta~``, ``mu`` and bounds computed by the independent checker's own functions
   (`certify.regression.check`), so what the solver claims is exactly what the checker accepts.

An inconsistent system gets an exact kernel vector (Fredholm: ``X^T g = 0``, ``y^T g != 0``) from
python-flint's exact nullspace when N is at most `EXACT_KERNEL_LIMIT`.
"""

from __future__ import annotations

import time
from fractions import Fraction

import numpy as np

from certify.exact import conjugate, dyadic, parse_p
from certify.regression.certificate import ExactVec, InterpolationCertificate, InterpStatus
from certify.regression.check import distance_upper, lower_bound_ball, norm_ball, residual_bound
from certify.regression.exactstep import SolveResult
from certify.regression.intmat import IntMatrix
from certify.regression.closed_form import block_l32_solution
from certify.regression.problem import RegressionProblem

__all__ = ["certify_interpolation", "InterpResult", "EXACT_KERNEL_LIMIT"]

#: largest N for which an inconsistency proof is searched by an exact rational nullspace
EXACT_KERNEL_LIMIT = 400


#: what `certify_interpolation` returns (`certify.regression.exactstep.SolveResult`)
InterpResult = SolveResult


def _phi(u: np.ndarray, q: float) -> np.ndarray:
    return np.sign(u) * np.abs(u) ** (q - 1)


def _dual_newton(
    X: np.ndarray, y: np.ndarray, q: float, *, tol: float = 1e-14, max_iter: int = 100
):
    """Float Newton on the concave dual; returns (mu, float Hessian factor, steps)."""
    G = X @ X.T
    mu = np.linalg.lstsq(G, y, rcond=None)[0]

    def value(m):
        u = X.T @ m
        return float(y @ m - np.sum(np.abs(u) ** q) / q)

    steps, f, best = 0, value(mu), np.inf
    for steps in range(1, max_iter + 1):
        u = X.T @ mu
        g = y - X @ _phi(u, q)
        gn = np.linalg.norm(g) / max(np.linalg.norm(y), 1e-300)
        if gn <= tol or (gn < 1e-9 and gn > 0.5 * best):  # converged, or stalled at float accuracy
            break
        best = min(best, gn)
        w = (q - 1) * np.maximum(np.abs(u), 1e-300) ** (q - 2)
        H = (X * w) @ X.T
        try:
            d = np.linalg.solve(H + 1e-300 * np.eye(len(y)), g)
        except np.linalg.LinAlgError:
            d = np.linalg.lstsq(H, g, rcond=None)[0]
        t = 1.0
        while t > 1e-12:
            f_new = value(mu + t * d)
            if f_new >= f + 1e-4 * t * float(g @ d) or t < 1e-3 and f_new >= f:
                break
            t /= 2
        mu, f = mu + t * d, value(mu + t * d)
    return mu, steps


def _to_ints(v: np.ndarray, bits: int = 62) -> tuple[list[int], int]:
    """A float vector as integers times 2^e (exact: each float is a dyadic)."""
    d = dyadic(np.asarray(v, dtype=np.float64))
    return [int(k) for k in d.ints.ravel()], d.exp


def _mid_int(v, shift: int) -> int:
    """floor(mid(v) * 2^shift) as a Python int (mid = man 2^exp, exact integer shifts)."""
    man, exp = v.mid().man_exp()
    man, exp = int(man), int(exp) + shift
    return man << exp if exp >= 0 else man >> -exp


def _phi_exact(u_ints: list[int], scale_exp: int, q: Fraction, bits: int) -> tuple[list[int], int]:
    """``phi(u)`` for ``u = u_ints 2^scale_exp``, rounded to integers times ``2^e`` (e chosen so the
    largest entry has about ``bits`` bits). Exact for q = 3 (p = 3/2): ``phi(u) = u |u|``."""
    if q == 3:
        return [k * abs(k) for k in u_ints], 2 * scale_exp
    from flint import arb, ctx, fmpq

    with ctx.workprec(bits + 64):
        ea = arb(fmpq(q.numerator - q.denominator, q.denominator))
        vals = [(arb(abs(k)) * arb(2) ** scale_exp) ** ea if k else None for k in u_ints]
        tops = [
            int(v.mid().man_exp()[0]).bit_length() + int(v.mid().man_exp()[1])
            for v in vals
            if v is not None
        ]
        e = (max(tops) if tops else 0) - bits
        out = [
            0 if v is None else (_mid_int(v, -e) if k > 0 else -_mid_int(v, -e))
            for k, v in zip(u_ints, vals)
        ]
    return out, e


#: below this many flops per Newton Hessian (N^2 D) the solve runs on one BLAS thread: small products
#: gain nothing from a second thread and collapse when the machine is loaded (measured at (100, 1000)
#: under load 14: the float Newton 0.09 s on one thread, 4.9 s on two)
SMALL_FLOPS = 2 * 10**9


def certify_interpolation(
    problem: RegressionProblem,
    p,
    *,
    bits: int = 200,
    refine_steps: int = 3,
    prec: int | None = None,
) -> InterpResult:
    """Certify ``min ||beta||_p s.t. X beta = y`` for the exact data of ``problem`` (module docstring).

    Args:
        problem: the data.
        p: the exponent, an exact rational (a decimal string such as "1.5" is 3/2).
        bits: precision of the refined point (about bits * 0.3 digits of OPT at best).
        refine_steps: high-precision Newton steps after the float solve.
        prec: ball precision for the bounds (default bits + 64).
    """
    from certify.blas import all_cpu_blas, single_thread_blas

    threads = single_thread_blas if problem.N**2 * problem.D < SMALL_FLOPS else all_cpu_blas
    with threads():
        return _certify(problem, p, bits=bits, refine_steps=refine_steps, prec=prec)


def _certify(
    problem: RegressionProblem, p, *, bits: int, refine_steps: int, prec: int | None
) -> InterpResult:
    from flint import ctx

    t0 = time.perf_counter()
    pp = parse_p(p)
    q = conjugate(pp)
    dx, dy = dyadic(problem.X), dyadic(problem.y)
    Zx, Zy = IntMatrix(dx.ints), [int(k) for k in dy.ints]
    h, shape = problem.data_hash(), (problem.N, problem.D)
    sx = float(np.abs(problem.X).max()) or 1.0
    sy = float(np.abs(problem.y).max()) or 1.0
    cx, cy = 2.0 ** np.ceil(np.log2(sx)), 2.0 ** np.ceil(np.log2(sy))
    Xs, ys = problem.X / cx, problem.y / cy
    if not np.any(problem.y):
        zero = ExactVec(tuple([0] * problem.D), 0)
        cert = InterpolationCertificate(
            InterpStatus.OPTIMAL,
            pp,
            h,
            shape,
            Fraction(0),
            Fraction(0),
            Fraction(0),
            Fraction(0),
            zero,
            ExactVec(tuple([0] * problem.N), 0),
        )
        return InterpResult(cert, time.perf_counter() - t0, 0)
    mu, steps = _dual_newton(Xs, ys, float(q))
    res = np.linalg.norm(ys - Xs @ _phi(Xs.T @ mu, float(q))) / np.linalg.norm(ys)
    if not np.isfinite(res) or res > 1e-6:
        kernel = _inconsistency(Zx, Zy) if problem.N <= EXACT_KERNEL_LIMIT else None
        if kernel is not None:
            cert = InterpolationCertificate(
                InterpStatus.INCONSISTENT, pp, h, shape, kernel=ExactVec(tuple(kernel), 0)
            )
            return InterpResult(cert, time.perf_counter() - t0, steps)
    # the scaled problem's dual point in the original units: X phi(X^T t mu) = cx^q t^(q-1) Xs phi(Xs^T mu)
    log_t = (float(pp) - 1) * np.log2(cy) - float(pp) * np.log2(cx)
    mu = mu * 2.0**log_t if abs(log_t) < 1000 else np.ldexp(mu, int(round(log_t)))
    with ctx.workprec(prec or bits + 64):
        # refinement in the original units: u = X^T mu exactly, beta = phi(u), residual exactly
        m_ints, m_exp = _to_ints(mu)
        X_f = problem.X
        for _ in range(refine_steps):
            u = Zx.rmatvec(m_ints)  # X^T mu = u 2^(ex + m_exp)
            b_ints, b_exp = _phi_exact(u, dx.exp + m_exp, q, bits)
            Xb = Zx.matvec(b_ints)
            s = min(dy.exp, dx.exp + b_exp)
            R = [
                zy * (1 << (dy.exp - s)) - xb * (1 << (dx.exp + b_exp - s))
                for zy, xb in zip(Zy, Xb)
            ]
            if not any(R):
                break
            r = np.array([float(Fraction(k) * Fraction(2) ** s) for k in R])
            uf = np.array([float(Fraction(k) * Fraction(2) ** (dx.exp + m_exp)) for k in u])
            w = (float(q) - 1) * np.maximum(np.abs(uf), 1e-300) ** (float(q) - 2)
            try:
                d = np.linalg.solve((X_f * w) @ X_f.T, r)
            except np.linalg.LinAlgError:
                break
            d_ints, d_exp = _to_ints(d)
            e = min(m_exp, d_exp)
            m_ints = [
                a * (1 << (m_exp - e)) + c * (1 << (d_exp - e)) for a, c in zip(m_ints, d_ints)
            ]
            m_exp = e
        u = Zx.rmatvec(m_ints)
        b_ints, b_exp = _phi_exact(u, dx.exp + m_exp, q, bits)
        beta = ExactVec(tuple(b_ints), b_exp)
        if pp == Fraction(3, 2):  # block data: the exact closed form (docs/theory.md section 8.2)
            beta = block_l32_solution(problem) or beta
        cert = _certificate(pp, q, h, shape, Zx, dx.exp, Zy, dy.exp, beta, m_ints, m_exp)
    return InterpResult(cert, time.perf_counter() - t0, steps)


def _certificate(
    pp, q, h, shape, Zx, ex, Zy, ey, beta: ExactVec, m_ints, m_exp
) -> InterpolationCertificate:
    from certify.regression.check import (
        lower_ball,
        residual_of,
        upper_ball,
    )  # the checker's own functions

    R, scale = residual_of(Zx, ex, Zy, ey, beta)
    e = residual_bound(Zx, ex, R, scale, pp)
    if e is None:
        return InterpolationCertificate(
            InterpStatus.NO_VERIFIED_RESULT,
            pp,
            h,
            shape,
            reason="X X^T is not verified invertible (X lacks full row rank or is "
            "too ill-conditioned) and the refined point does not solve "
            "X beta = y exactly; remove dependent rows",
        )
    ub = upper_ball(norm_ball(beta.ints, Fraction(2) ** beta.exp / beta.den, pp) + _arb_of(e))
    lb = lower_ball(lower_bound_ball(Zx, ex, Zy, ey, m_ints, q))
    if ub is None or lb is None or lb <= 0:
        return InterpolationCertificate(
            InterpStatus.NO_VERIFIED_RESULT,
            pp,
            h,
            shape,
            reason="the dual point gives no positive lower bound",
        )
    dist = e + distance_upper(ub, lb, pp)
    return InterpolationCertificate(
        InterpStatus.OPTIMAL,
        pp,
        h,
        shape,
        opt_lower=lb,
        opt_upper=ub,
        distance_upper=dist,
        residual_upper=e,
        beta=beta,
        mu=ExactVec(tuple(m_ints), m_exp),
    )


def _arb_of(x: Fraction):
    from flint import arb, fmpq

    return arb(fmpq(x.numerator, x.denominator))


def _inconsistency(Zx: np.ndarray, Zy: list[int]) -> list[int] | None:
    """An exact g with ``Zx^T g = 0`` and ``Zy^T g != 0`` (python-flint nullspace), or None."""
    import flint

    N, D = Zx.shape
    Z = Zx.Z
    A = flint.fmpz_mat(D, N, [int(Z[i, j]) for j in range(D) for i in range(N)])  # Zx^T
    K, nullity = A.nullspace()
    for c in range(nullity):
        g = [int(K[i, c]) for i in range(N)]
        if sum(a * b for a, b in zip(Zy, g)) != 0:
            return g
    return None
