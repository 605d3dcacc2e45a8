"""The continuous-time reference of smoothed sign descent (arXiv 2410.14158, eq. 16; docs/theory.md 8.5).

``dw/dt = -g / (|g| + eps)`` for both weight vectors of the depth-2 diagonal network, integrated with
SciPy's ``solve_ivp`` (the paper's figures were made this way). A float64 measurement, never evidence:
it shows whether a discrete run with step ``lr`` follows the flow it is meant to discretize
(time ``t = k lr`` after k steps).
"""

from __future__ import annotations

import numpy as np

from certify.regression.problem import RegressionProblem

__all__ = ["ode_reference"]


def ode_reference(
    problem: RegressionProblem,
    *,
    eps: float,
    alpha: float,
    t_end: float,
    t_eval: np.ndarray | None = None,
    rtol: float = 1e-9,
    atol: float = 1e-12,
) -> tuple[np.ndarray, np.ndarray]:
    """(times, beta(t)) of the smoothed-sign flow from ``w+- = alpha 1``; beta has shape (len(times), D)."""
    from scipy.integrate import solve_ivp

    X, y, D = np.asarray(problem.X), np.asarray(problem.y), problem.D

    def rhs(_t, w):
        wp, wm = w[:D], w[D:]
        gb = X.T @ (X @ (wp * wp - wm * wm) - y)  # 2 dL/dbeta
        gp, gm = wp * gb, -wm * gb
        return np.concatenate([-gp / (np.abs(gp) + eps), -gm / (np.abs(gm) + eps)])

    sol = solve_ivp(
        rhs,
        (0.0, t_end),
        np.full(2 * D, alpha),
        method="LSODA",
        t_eval=t_eval,
        rtol=rtol,
        atol=atol,
    )
    if not sol.success:
        raise RuntimeError(f"the ODE reference failed: {sol.message}")
    wp, wm = sol.y[:D].T, sol.y[D:].T
    return sol.t, wp * wp - wm * wm
