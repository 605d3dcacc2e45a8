"""delta-KKT certificates of a trained diagonal network (docs/theory.md section 8.4).

A two-layer diagonal network ``beta = w+ * w+ - w- * w-`` trained by smoothed sign descent ends at
weights (w+, w-). Per coordinate the dominant weight is ``u_i = max(|w+_i|, |w-_i|)`` and the other
``v_i = min(|w+_i|, |w-_i|)``, so ``|beta_i| + v_i^2 = u_i^2``. The paper's limit problem (arXiv
2410.14158, eqs. 22-23) minimizes ``E(beta) = Phi_inf(beta) - Phi_0(0)`` subject to ``X beta = y``, with
``Phi_inf(beta) = (2/3) sum_i (|beta_i| + c_i)^(3/2)`` and ``c_i = v_i(inf)^2`` (beta(0) = 0, where the
linear term vanishes). Where ``beta_i != 0``, ``grad E(beta)_i = sign(beta_i) sqrt(|beta_i| + c_i)``, and
the paper calls beta a delta-KKT point when ``X beta = y`` and ``min_mu ||grad E(beta) - X^T mu||_2 <=
delta``. Everything below is proven from the exact float64 weights:

- ``beta`` and ``c`` exactly (dyadic squares), the residual ``y - X beta`` exactly;
- ``delta_upper``: ``||grad E(beta) - X^T mu~||_2`` for the least-squares ``mu~``, an upper bound of the
  minimum over mu (any mu gives one), in outward-rounded balls; measured against the float value of the
  minimum it is within its rounding;
- at the exact feasible projection ``beta_f = beta + X^T (X X^T)^-1 (y - X beta)`` (python-flint rational
  solve, N <= `EXACT_PROJECTION_LIMIT`): ``delta_f_upper`` the same bound at ``beta_f``, and the distance
  to the minimizer ``beta_E`` of E on ``{X beta = y}``: E is m-strongly convex on the box
  ``|beta_i| <= B`` with ``m = (1/2)(B + max c)^(-1/2)`` (phi'' is decreasing in ``|b|``), the box holds
  ``beta_f`` and ``beta_E`` when ``B >= max(||beta_f||_inf, (3 E_f / 2)^(2/3))`` (each term of E at
  ``beta_E`` is at most ``E(beta_E) <= E(beta_f)``), and with ``grad E(beta_f) - X^T mu = r``:
  ``m ||beta_f - beta_E||^2 <= <r, beta_f - beta_E> <= delta_f ||beta_f - beta_E||`` (``X(beta_f - beta_E)
  = 0``), so ``||beta_f - beta_E||_2 <= delta_f / m``. Needs every ``beta_f_i != 0`` or ``c_i > 0`` (E is
  differentiable at beta_f, or its kink is handled: a zero entry with c_i > 0 gets the subgradient
  nearest to ``(X^T mu~)_i``).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from certify.errors import MdcertError
from certify.exact import dyadic
from certify.regression.problem import RegressionProblem, exact_float64

__all__ = ["DeltaKKT", "delta_kkt", "EXACT_PROJECTION_LIMIT"]

#: largest N for which the feasible projection is formed exactly (a rational N x N solve)
EXACT_PROJECTION_LIMIT = 200
_PREC = 256


@dataclass(frozen=True)
class DeltaKKT:
    """Proven facts about a trained network's beta (module docstring); Fractions are exact bounds."""

    residual_l2_upper: Fraction  #: >= ||X beta - y||_2 (0 when beta interpolates exactly)
    delta_upper: Fraction  #: >= min_mu ||grad E(beta) - X^T mu||_2 at the trained beta
    delta_float: float  #: the float64 value of that minimum (not evidence)
    delta_f_upper: Fraction | None  #: the same bound at the exact feasible projection beta_f
    distance_to_e_opt_upper: Fraction | None  #: >= ||beta_f - argmin_{X b = y} E(b)||_2
    projection_distance_upper: Fraction | None  #: >= ||beta_f - beta||_2
    beta: np.ndarray  #: the trained beta rounded to float64 (its exact value is used)


def _arb(x: Fraction):
    from flint import arb, fmpq

    return arb(fmpq(x.numerator, x.denominator))


def _up(ball) -> Fraction:
    if not ball.is_finite():
        raise MdcertError(
            "a delta-KKT bound is not finite; the weights are too large for a finite bound"
        )
    man, ex = ball.upper().man_exp()
    return Fraction(int(man)) * Fraction(2) ** int(ex)


def _grad_balls(beta: list[Fraction], c: list[Fraction], xtmu: np.ndarray) -> list:
    """Balls of grad E(beta); at a zero entry the subdifferential is ``[-sqrt c_i, sqrt c_i]`` and the
    element nearest to ``(X^T mu~)_i`` (clipped to a rational inside it) is used, so the bound is a
    bound on the distance from ``X^T mu~`` to the subdifferential."""
    out = []
    for b, ci, t in zip(beta, c, xtmu):
        if b != 0:
            s = _arb(abs(b) + ci).sqrt()
            out.append(s if b > 0 else -s)
        else:
            r = (
                _low(_arb(ci).sqrt()) if ci else Fraction(0)
            )  # r <= sqrt(c_i): inside the subdifferential
            out.append(_arb(max(-r, min(r, Fraction(float(t))))))
    return out


def _low(ball) -> Fraction:
    man, ex = ball.lower().man_exp()
    return max(Fraction(0), Fraction(int(man)) * Fraction(2) ** int(ex))


def _delta_upper(X: np.ndarray, beta: list[Fraction], c: list[Fraction]) -> tuple[Fraction, float]:
    """(proven upper bound, float value) of ``min_mu ||grad E(beta) - X^T mu||_2``: any mu gives an
    upper bound; the least-squares mu~ (float) gives one within rounding of the minimum."""
    from flint import arb, ctx

    from certify.regression.intmat import IntMatrix

    g_float = np.array(
        [float(np.sign(float(b))) * np.sqrt(abs(float(b)) + float(ci)) for b, ci in zip(beta, c)]
    )
    mu, *_ = np.linalg.lstsq(X.T, g_float, rcond=None)
    delta_float = float(np.linalg.norm(g_float - X.T @ mu))
    dX, dmu = dyadic(X), dyadic(mu)
    xtmu = IntMatrix(dX.ints).rmatvec(
        [int(k) for k in dmu.ints]
    )  # exact X^T mu~, times 2^(ex + emu)
    scale = Fraction(2) ** (dX.exp + dmu.exp)
    with ctx.workprec(_PREC):
        grads = _grad_balls(beta, c, X.T @ mu)
        total = arb(0)
        for g, t in zip(grads, xtmu):
            total += (g - _arb(t * scale)) ** 2
        return _up(total.sqrt()), delta_float


def delta_kkt(problem: RegressionProblem, w_plus, w_minus) -> DeltaKKT:
    """Proven delta-KKT facts of the network (w+, w-) on ``problem`` (module docstring)."""
    wp = exact_float64("w_plus", w_plus, 1)
    wm = exact_float64("w_minus", w_minus, 1)
    if wp.shape != (problem.D,) or wm.shape != (problem.D,):
        raise MdcertError(f"w_plus and w_minus must have D = {problem.D} entries each")
    fp = [Fraction(float(a)) for a in wp]
    fm = [Fraction(float(a)) for a in wm]
    beta = [a * a - b * b for a, b in zip(fp, fm)]
    c = [min(abs(a), abs(b)) ** 2 for a, b in zip(fp, fm)]
    X = problem.X
    Xf = [[Fraction(float(v)) for v in row] for row in X]
    yf = [Fraction(float(v)) for v in problem.y]
    res = [y - sum(a * b for a, b in zip(row, beta)) for row, y in zip(Xf, yf)]
    from flint import ctx

    with ctx.workprec(_PREC):
        res_up = _up(_arb(sum(r * r for r in res)).sqrt())
    delta_up, delta_float = _delta_upper(X, beta, c)
    delta_f = dist = proj = None
    if problem.N <= EXACT_PROJECTION_LIMIT:
        beta_f, proj = _feasible_projection(Xf, res, beta)
        if beta_f is not None:
            delta_f, _ = _delta_upper(X, beta_f, c)
            dist = _distance_to_e_opt(beta_f, c, delta_f)
    return DeltaKKT(
        res_up, delta_up, delta_float, delta_f, dist, proj, np.array([float(b) for b in beta])
    )


def _feasible_projection(Xf, res, beta):
    """(beta_f, upper bound of ||beta_f - beta||_2) by an exact rational solve, or (None, None)."""
    import flint

    if not any(res):
        return beta, Fraction(0)
    N = len(Xf)

    def q(x: Fraction):
        return flint.fmpq(x.numerator, x.denominator)

    G = flint.fmpq_mat(
        N, N, [q(sum(a * b for a, b in zip(Xf[i], Xf[j]))) for i in range(N) for j in range(N)]
    )
    try:
        z = G.solve(flint.fmpq_mat(N, 1, [q(r) for r in res]))
    except (ZeroDivisionError, ValueError):
        return None, None
    zf = [Fraction(int(z[i, 0].p), int(z[i, 0].q)) for i in range(N)]
    step = [sum(Xf[i][j] * zf[i] for i in range(N)) for j in range(len(beta))]
    with flint.ctx.workprec(_PREC):
        proj = _up(_arb(sum(s * s for s in step)).sqrt())
    return [b + s for b, s in zip(beta, step)], proj


def _distance_to_e_opt(beta_f, c, delta_f: Fraction) -> Fraction:
    from flint import arb, ctx

    with ctx.workprec(_PREC):
        e_f = (
            sum(((_arb(abs(b) + ci)) ** arb(1.5) for b, ci in zip(beta_f, c)), arb(0)) * arb(2) / 3
        )
        box = max(
            max((abs(b) for b in beta_f), default=Fraction(0)), _up((e_f * 3 / 2) ** (arb(2) / 3))
        )
        cmax = max(c, default=Fraction(0))
        m_low = arb(1) / (2 * (_arb(box + cmax)).sqrt())  # a lower bound of phi'' on the box
        return _up(_arb(delta_f) / arb(m_low.lower()))
