"""Numeric helpers of the rate and norm-growth fits (docs/theory.md sections 4.2 and 6): vectorized
least-squares lines, the tail window, bootstrap mean curves over trajectories, the resolution floor of
a directional Bregman divergence, and JSON cleaning. numpy only."""

from __future__ import annotations

import numpy as np

from certify.errors import MdcertError
from certify.io.jsonenc import jsonable

__all__ = ["clean_json", "fit_line", "tail_mask", "bootstrap_means", "bregman_floor"]


def clean_json(o):
    """Plain JSON data (`certify.io.jsonenc.jsonable`): non-finite floats become None, tuples lists,
    enums their values, numpy scalars Python numbers (JSON has no NaN)."""
    return jsonable(o)


def fit_line(x: np.ndarray, Y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Least-squares lines ``Y[j] ~ c0[j] + c1[j] x`` for every row of Y (vectorized).

    Returns:
        ``(c1, c0, rmse)`` arrays with one entry per row.
    """
    x = np.asarray(x, dtype=np.float64)
    Y = np.atleast_2d(np.asarray(Y, dtype=np.float64))
    xm = x.mean()
    dx = x - xm
    sxx = float(dx @ dx)
    if sxx == 0:
        raise MdcertError("cannot fit a rate: all tail points have the same step")
    ym = Y.mean(axis=1)
    c1 = ((Y - ym[:, None]) @ dx) / sxx
    c0 = ym - c1 * xm
    res = Y - (c0[:, None] + c1[:, None] * x)
    return c1, c0, np.sqrt(np.mean(res**2, axis=1))


def tail_mask(steps: np.ndarray, *, tail_fraction: float = 0.01, min_step: int = 3) -> np.ndarray:
    """Steps in the last two decades by default: ``k >= max(min_step, tail_fraction * max k)``."""
    steps = np.asarray(steps)
    return steps >= max(min_step, tail_fraction * steps.max())


def bootstrap_means(curves: np.ndarray, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Mean curves of ``resamples`` bootstrap resamples of the rows of ``curves`` (resamples, points).

    Multinomial counts times the curves: memory grows with resamples x (trajectories + points), not
    with their product."""
    nt = curves.shape[0]
    counts = rng.multinomial(nt, np.full(nt, 1.0 / nt), size=resamples).astype(np.float64)
    return counts @ curves / nt


def bregman_floor(
    p: float,
    entries: int,
    *,
    direction_error: float | None = None,
    eps: float = float(np.finfo(np.float64).eps),
) -> float:
    """The smallest directional Bregman divergence a measurement can resolve (docs/theory.md section 4.2).

    The direction of ``W/||W||_p`` is known to ``delta = (entries + 2) eps/2`` in the p-norm (entrywise
    rounding and the norm's), and the reference to its certified direction error; the floor is the
    Bregman bound between unit directions at the larger delta: ``(2^(2-p)/p) delta^p`` for p <= 2,
    ``((p-1)/2) 2^((p-2)/p) delta^2`` for p >= 2.
    """
    delta = (entries + 2) * eps / 2
    if direction_error is not None and np.isfinite(direction_error):
        delta = max(delta, float(direction_error))
    if p <= 2:
        return float(2.0 ** (2 - p) / p * delta**p)
    return float((p - 1) / 2 * 2.0 ** ((p - 2) / p) * delta**2)
