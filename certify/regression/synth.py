"""Seeded regression data for the smoothed-sign-descent setting (docs/theory.md section 8.1).

- ``block``: the setting of Assumptions 3.2 and 3.8 of arXiv 2410.14158: D = 2N, row n has exactly
  two nonzeros, in columns 2n and 2n+1, ``x = sqrt(lambda_n) (cos theta_n, sin theta_n)`` with
  ``|cos theta_n| > |sin theta_n| > 0``, and targets ``y_n != 0``.
- ``gaussian``: i.i.d. standard normal X (N x D) and y: general position, no block structure.
All values are float64 numbers (rounded once when generated, then exact data).
"""

from __future__ import annotations

import numpy as np

from certify.errors import MdcertError
from certify.regression.problem import RegressionProblem

__all__ = ["regression_problem", "KINDS"]

KINDS = ("block", "gaussian")


def regression_problem(
    kind: str = "block", *, N: int = 5, D: int | None = None, seed: int = 0
) -> RegressionProblem:
    """A seeded regression problem of ``kind`` (module docstring); ``D`` defaults to 2N."""
    if kind not in KINDS:
        raise MdcertError(
            f"unknown regression data kind {kind!r}; choose one of {', '.join(KINDS)}"
        )
    D = 2 * N if D is None else D
    if N < 1 or D < 1:
        raise MdcertError(f"N and D must be positive, got N={N}, D={D}")
    rng = np.random.default_rng(seed)
    if kind == "gaussian":
        return RegressionProblem(
            rng.standard_normal((N, D)),
            rng.standard_normal(N),
            provenance={"kind": "gaussian", "seed": seed},
        )
    if D != 2 * N:
        raise MdcertError(f"block data have D = 2N (two nonzeros per row); got N={N}, D={D}")
    X = np.zeros((N, D))
    theta = rng.uniform(0.1, np.pi / 4 - 0.1, size=N) * rng.choice([-1, 1], size=N)
    lam = rng.uniform(0.5, 2.0, size=N)
    X[np.arange(N), 2 * np.arange(N)] = np.sqrt(lam) * np.cos(theta)
    X[np.arange(N), 2 * np.arange(N) + 1] = np.sqrt(lam) * np.sin(theta)
    y = rng.uniform(0.5, 2.0, size=N) * rng.choice([-1, 1], size=N)
    return RegressionProblem(X, y, provenance={"kind": "block", "seed": seed})
