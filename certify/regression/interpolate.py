"""Certified minimum-l_p-norm interpolation: ``min ||beta||_p s.t. X beta = y`` (docs/theory.md section 8.3).

The eps -> 0 idealization of smoothed sign descent's limit is p = 3/2 (arXiv 2410.14158); p = 2 is
the minimum-norm interpolator. Pipeline (everything before the last step is a warm start, never
evidence):

1. float dual Newton on ``max_mu y^T mu - (1/q)||X^T mu||_q^q`` (X, y rescaled by powers of two),
   started at the least-squares dual ``(X X^T)^-1 y`` scaled to the best point of its ray, with a
   backtracking line search;
2. high-precision refinement: each step forms ``X^T mu`` exactly, the primal point
   ``beta = phi(X^T mu)`` (``phi(u) = sign(u)|u|^(q-1)``) rounded to a dyadic vector (integer
   arithmetic for q = 2, 3, 3/2, ``arb`` otherwise), and the dual residual ``y - X beta`` exactly,
   then takes a Newton step with one float Hessian;
3. the certificate: ``beta~``, ``mu`` and bounds computed by the independent checker's own functions
   (`certify.regression.check`), so what the solver claims is exactly what the checker accepts.

An inconsistent system gets an exact kernel vector (Fredholm: ``X^T g = 0``, ``y^T g != 0``) from
python-flint's exact nullspace when N is at most `EXACT_KERNEL_LIMIT`.
"""

from __future__ import annotations

import math
import time
from fractions import Fraction

import numpy as np

from certify.exact import conjugate, dyadic, ldexp_array, parse_p
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
    """Float Newton on the concave dual from the least-squares dual ``(X X^T)^-1 y``, first scaled by
    the c > 0 that maximizes the dual along its ray (``c^(q-1) = y^T mu / ||X^T mu||_q^q``): on
    Gaussian data at (100, 1,000) and (300, 3,000) that takes 10-18 and 27-41 Newton steps at q = 3/2
    where a homotopy through ``q + 0.6 (2 - q)``, ``q + 0.3 (2 - q)`` took 22-27 and 36-53 (issue 24).
    Returns (mu, steps)."""
    G = X @ X.T
    try:  # an LU solve: the SVD of lstsq costs 2.6 s at N = 1,000 (kept where G is singular)
        mu = np.linalg.solve(G, y)
    except np.linalg.LinAlgError:
        mu = np.full(len(y), np.nan)
    if not np.all(np.isfinite(mu)):
        mu = np.linalg.lstsq(G, y, rcond=None)[0]
    ty, tu = float(y @ mu), float(np.sum(np.abs(X.T @ mu) ** q))
    if ty > 0 and 0 < tu < np.inf:
        log_c = (math.log(ty) - math.log(tu)) / (q - 1)
        mu = mu * math.exp(log_c) if abs(log_c) < 700 else mu
    return _newton(X, y, q, mu, tol=tol, max_iter=max_iter)


def _newton(X: np.ndarray, y: np.ndarray, q: float, mu: np.ndarray, *, tol: float, max_iter: int):
    """Damped Newton (Armijo backtracking on the dual value); below a relative gradient of 1e-6,
    where float64 cannot resolve the value's decrease, a full step is taken when it lowers the
    gradient norm. Returns (mu, steps)."""
    ny = max(np.linalg.norm(y), 1e-300)

    def value(m):
        return float(y @ m - np.sum(np.abs(X.T @ m) ** q) / q)

    def gradient(m):
        return y - X @ _phi(X.T @ m, q)

    steps, f, best, H, wh = 0, value(mu), np.inf, None, None
    g = gradient(mu)
    for steps in range(1, max_iter + 1):
        gn = np.linalg.norm(g) / ny
        if gn <= tol or (gn < 1e-9 and gn > 0.5 * best):  # converged, or stalled at float accuracy
            break
        best = min(best, gn)
        w = (q - 1) * np.maximum(np.abs(X.T @ mu), 1e-300) ** (q - 2)
        H, wh = _hessian_update(X, w, H, wh, exact=q >= 2 or gn < 1e-6)
        d = _hessian_solver(H)(g)
        if gn < 1e-6:
            g_new = gradient(mu + d)
            if np.linalg.norm(g_new) / ny < gn:
                mu, g = mu + d, g_new
                f = value(mu)
                continue
        t = 1.0
        while t > 1e-12:
            f_new = value(mu + t * d)
            if f_new >= f + 1e-4 * t * float(g @ d) or t < 1e-3 and f_new >= f:
                break
            t /= 2
        mu, f = mu + t * d, value(mu + t * d)
        g = gradient(mu)
    return mu, steps


def _hessian_update(X: np.ndarray, w: np.ndarray, H, wh, *, exact: bool):
    """``(H, wh)``: the upper triangle of ``X diag(wh) X^T`` (``dsyrk``) with ``wh = w``, or, unless
    ``exact``, H updated on the columns whose weight moved by more than a fifth (``wh`` keeps the
    others): for q < 2 the weights ``|u|^(q-2)`` of the few entries of ``X^T mu`` near 0 change most,
    and at (100, 1,000), p = 3 the same Newton steps then cost 3-4 full Hessians instead of 10-18."""
    from scipy.linalg.blas import dsyrk

    S = None if exact or H is None else np.flatnonzero(np.abs(w - wh) > 0.2 * wh)
    with np.errstate(all="ignore"):
        if S is None or len(S) > X.shape[1] // 4:
            return dsyrk(1.0, X * np.sqrt(w)), w
        if len(S):
            H = H + (X[:, S] * (w[S] - wh[S])) @ X[:, S].T  # the upper triangle is what is read
            wh = wh.copy()
            wh[S] = w[S]
    return H, wh


def _hessian_solver(H: np.ndarray):
    """``g -> H^-1 g`` for a symmetric H given by its upper triangle: a Cholesky factor (with
    ``dsyrk``, a quarter less time than a dgemm and an LU solve at (100, 1,000)), else an LU solve
    or least squares."""
    from scipy.linalg import lapack

    c, info = lapack.dpotrf(H, lower=0) if np.all(np.isfinite(H)) else (None, 1)
    if info == 0:
        return lambda g: lapack.dpotrs(c, g, lower=0)[0]
    H = np.triu(H) + np.triu(H, 1).T

    def fallback(g):
        try:
            return np.linalg.solve(H, g)
        except np.linalg.LinAlgError:
            return np.linalg.lstsq(H, g, rcond=None)[0]

    return fallback


def _to_ints(v: np.ndarray, bits: int = 62) -> tuple[list[int], int]:
    """A float vector as integers times 2^e (exact: each float is a dyadic)."""
    d = dyadic(np.asarray(v, dtype=np.float64))
    return [int(k) for k in d.ints.ravel()], d.exp


def _mid_int(v, shift: int) -> int:
    """floor(mid(v) * 2^shift) as a Python int (mid = man 2^exp, exact integer shifts)."""
    man, exp = v.mid().man_exp()
    man, exp = int(man), int(exp) + shift
    return man << exp if exp >= 0 else man >> -exp


def _round_ints(ints: list[int], e: int, bits: int) -> tuple[list[int], int]:
    """``ints 2^e`` floored to ``bits`` significant bits of the largest entry (a warm start only)."""
    sh = (max(max(ints), -min(ints)).bit_length() if ints else 0) - bits
    return ([k >> sh for k in ints], e + sh) if sh > 0 else (ints, e)


def _phi_exact(u_ints: list[int], scale_exp: int, q: Fraction, bits: int) -> tuple[list[int], int]:
    """``phi(u)`` for ``u = u_ints 2^scale_exp``, rounded to integers times ``2^e`` (e chosen so the
    largest entry has about ``bits`` bits): integer arithmetic for q = 2 (the identity), q = 3
    (``u |u|``) and q = 3/2 (``sign(u) isqrt``), ``arb`` powers otherwise."""
    if q == 2:
        return _round_ints(u_ints, scale_exp, bits)
    if q == 3:
        return _round_ints([k * abs(k) for k in u_ints], 2 * scale_exp, bits)
    if q == Fraction(3, 2):  # sqrt(|k| 2^se) = isqrt(|k| 2^(se - 2e)) 2^e
        top = max(max(u_ints), -min(u_ints)).bit_length() if u_ints else 0
        e = (top + scale_exp - 2 * bits) // 2
        t = scale_exp - 2 * e
        roots = [math.isqrt(abs(k) << t if t >= 0 else abs(k) >> -t) for k in u_ints]
        return [r if k > 0 else -r for k, r in zip(u_ints, roots)], e
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


def _refine(X, Zx: IntMatrix, ex: int, Zy: list[int], ey: int, mu, q: Fraction, bits: int, steps):
    """High-precision Newton steps on the dual (module docstring, step 2), with one float Hessian
    ``X diag((q-1)|X^T mu|^(q-2)) X^T`` formed once at the float dual point (the steps move mu by
    about 1e-14 relative). Returns ``(m, em, u, b, eb, R, s)``: the dual point ``m 2^em``,
    ``X^T mu = u 2^(ex + em)`` exactly, the primal point ``beta~ = b 2^eb = phi(X^T mu)`` rounded and
    its exact residual ``y - X beta~ = R 2^s``. ``steps`` None: until the residual is within 2^12 of
    the rounding's (2^-bits relative to y), stops gaining 8 bits a step, or 3 + bits / 32 steps
    (well-conditioned data: ceil((bits - 8) / 64) steps; ill-conditioned data gain less a step)."""
    qf = float(q)
    m_ints, m_exp = _to_ints(mu)
    with np.errstate(all="ignore"):
        w = (qf - 1) * np.maximum(np.abs(X.T @ mu), 1e-300) ** (qf - 2)
        solve = _hessian_solver(_hessian_update(X, w, None, None, exact=True)[0])
    adaptive, prev = steps is None, None
    steps = 3 + bits // 32 if steps is None else steps
    top_y = max(abs(k) for k in Zy).bit_length() + ey
    for it in range(steps + 1):
        u = Zx.rmatvec(m_ints)  # X^T mu = u 2^(ex + m_exp)
        b_ints, b_exp = _phi_exact(u, ex + m_exp, q, bits)
        Xb = Zx.matvec(b_ints)
        s = min(ey, ex + b_exp)
        R = [(zy << (ey - s)) - (xb << (ex + b_exp - s)) for zy, xb in zip(Zy, Xb)]
        if it == steps or not any(R):
            break
        if adaptive:  # log2 of the relative residual, about
            rel = max(abs(k) for k in R).bit_length() + s - top_y
            if rel < 12 - bits or (prev is not None and rel > prev - 8):
                break
            prev = rel
        with np.errstate(all="ignore"):
            d = solve(ldexp_array(np.array(R, dtype=object), s))
        if not np.all(np.isfinite(d)):
            break
        d_ints, d_exp = _to_ints(d)
        e = min(m_exp, d_exp)
        m_ints = [(a << (m_exp - e)) + (c << (d_exp - e)) for a, c in zip(m_ints, d_ints)]
        m_exp = e
    return m_ints, m_exp, u, b_ints, b_exp, R, s


#: below this many flops per Newton Hessian (N^2 D) the solve runs on one BLAS thread: small products
#: gain nothing from a second thread and collapse when the machine is loaded (measured at (100, 1000)
#: under load 14: the float Newton 0.09 s on one thread, 4.9 s on two)
SMALL_FLOPS = 2 * 10**9


def certify_interpolation(
    problem: RegressionProblem,
    p,
    *,
    bits: int = 128,
    refine_steps: int | None = None,
    prec: int | None = None,
) -> InterpResult:
    """Certify ``min ||beta||_p s.t. X beta = y`` for the exact data of ``problem`` (module docstring).

    Args:
        problem: the data.
        p: the exponent, an exact rational (a decimal string such as "1.5" is 3/2).
        bits: precision of the refined point (about bits * 0.3 digits of OPT at best; the default
            gives 35-38 digits at (100, 1,000), issue 24's target being 30).
        refine_steps: high-precision Newton steps after the float solve (default: until the
            residual reaches the rounding, `_refine`; each step gains about 15-20 digits from the
            float point's 14 on well-conditioned data).
        prec: ball precision for the bounds (default bits + 64).
    """
    from certify.blas import all_cpu_blas, single_thread_blas

    threads = single_thread_blas if problem.N**2 * problem.D < SMALL_FLOPS else all_cpu_blas
    with threads():
        return _certify(problem, p, bits=bits, refine_steps=refine_steps, prec=prec)


def _certify(
    problem: RegressionProblem, p, *, bits: int, refine_steps: int | None, prec: int | None
) -> InterpResult:
    from flint import ctx

    t0 = time.perf_counter()
    pp = parse_p(p)
    q = conjugate(pp)
    (Zx, ex), dy = IntMatrix.of_float(problem.X), dyadic(problem.y)
    Zy = [int(k) for k in dy.ints]
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
        m_ints, m_exp, u, b_ints, b_exp, R, s = _refine(
            problem.X, Zx, ex, Zy, dy.exp, mu, q, bits, refine_steps
        )
        beta = ExactVec(tuple(b_ints), b_exp)
        if pp == Fraction(3, 2):  # block data: the exact closed form (docs/theory.md section 8.2)
            closed = block_l32_solution(problem)
            if closed is not None:
                beta, R = closed, None
        cert = _certificate(pp, q, h, problem.X, Zx, ex, Zy, dy.exp, beta, m_ints, m_exp, R, s, u)
    return InterpResult(cert, time.perf_counter() - t0, steps)


def _certificate(
    pp, q, h, X, Zx, ex, Zy, ey, beta: ExactVec, m_ints, m_exp, R, s: int, u
) -> InterpolationCertificate:
    """The bounds of the certificate by the checker's own functions; ``R 2^s`` is the residual of
    ``beta`` (None: recomputed) and ``u 2^(ex + m_exp) = X^T mu`` (both exact, from `_refine`)."""
    from certify.regression.check import (
        lower_ball,
        residual_of,
        upper_ball,
    )  # the checker's own functions

    shape = X.shape
    R, scale = residual_of(Zx, ex, Zy, ey, beta) if R is None else (R, Fraction(2) ** s)
    e = residual_bound(Zx, ex, R, scale, pp, X=X)
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
    lb = lower_ball(lower_bound_ball(Zx, ex, Zy, ey, m_ints, q, u=u))
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
