"""Norm growth of training paths against the law of the step rule (docs/theory.md sections 2 and 6;
the paper's Theorem 8).

- Normalized steps ``G/||G||_q``: the mirror variable ``Q = grad psi(W)`` moves by exactly ``lr`` per
  step in the dual norm, and ``||Q||_q = ||W||_p^(p-1)``, so
  ``||W(k)||_p <= (||W(0)||_p^(p-1) + lr k)^(1/(p-1))``: the norm grows at most like a power of k with
  exponent ``1/(p-1)``. Fitted: ``||W(k)||_p = C k^e``, e shown beside ``1/(p-1)``, and the measured
  ratio to the bound (<= 1 up to rounding).
- Constant steps: Theorem 8's logarithmic growth, ``||W(k)||_p = c0 + c1 log k``.

Both on the mean curve over trajectories, with bootstrap intervals over trajectories; the other law's
R^2 is reported for comparison. The window starts after the initial plateau: while the local slope of
the fitted law differs between the window's early and late halves by more than 10%, its start moves
later (tenths of its log-span, keeping at least half); the start used is reported (``tail_from``
beside ``default_from``), and ``settled`` is False when no start within that range had a steady
slope. numpy only.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from certify.errors import MdcertError
from experiments.paths.rates import bootstrap_means, clean_json, fit_line, tail_mask

__all__ = ["NormFit", "fit_norm_growth", "normalized_bound"]


@dataclass(frozen=True)
class NormFit:
    """The fitted growth law of ``||W(k)||_p``.

    Attributes:
        law: "power" (``C k^coefficient``, normalized steps) or "log" (``intercept + coefficient log k``,
            constant steps); rule: "normalized" or "constant".
        coefficient: the exponent e (power) or slope c1 (log); ci: its bootstrap interval (or None).
        intercept: log C (power) or c0 (log); r2: of the fitted law; other_r2: R^2 of the other law.
        expected: ``1/(p-1)`` for the power law (the dual-step bound's exponent), None for log.
        bound_ratio_max: normalized steps: ``max ||W(k)||_p / (||W(0)||_p^(p-1) + lr k)^(1/(p-1))`` over
            trajectories and records (None without p, lr or the k = 0 record).
        tail_from, points, trials, bootstrap, level: the window and the resampling.
        default_from: the window's start by the tail rule (``tail_from`` is later past a plateau).
        settled: whether the local slope was steady (within 10%) over the window used.
    """

    law: str
    rule: str
    coefficient: float
    ci: tuple[float, float] | None
    intercept: float
    r2: float
    other_r2: float
    expected: float | None
    bound_ratio_max: float | None
    tail_from: int
    points: int
    trials: int
    bootstrap: int
    level: float
    default_from: int | None = None
    settled: bool = True

    def to_json(self) -> dict:
        return clean_json(asdict(self))

    def curve(self, k: np.ndarray) -> np.ndarray:
        """The fitted law at steps ``k``."""
        k = np.asarray(k, dtype=np.float64)
        if self.law == "power":
            return np.exp(self.intercept) * k**self.coefficient
        return self.intercept + self.coefficient * np.log(k)


def normalized_bound(norm0: np.ndarray, k: np.ndarray, *, p: float, lr: float) -> np.ndarray:
    """``(||W(0)||_p^(p-1) + lr k)^(1/(p-1))``, the most a normalized path's norm can reach by step k."""
    return (np.asarray(norm0)[..., None] ** (p - 1) + lr * np.asarray(k, dtype=np.float64)) ** (
        1 / (p - 1)
    )


def _r2(y: np.ndarray, rmse: float) -> float:
    var = float(np.var(y))
    return float(1.0 - rmse**2 / var) if var > 0 else float("nan")


def fit_norm_growth(
    steps: np.ndarray,
    norms: np.ndarray,
    *,
    normalized: bool,
    p: float | None = None,
    lr: float | None = None,
    tail_fraction: float = 0.01,
    bootstrap: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> NormFit:
    """Fit the mean ``||W(k)||_p`` over trajectories on ``k >= tail_fraction * max k`` (and k >= 2).

    Args:
        steps: record steps (R,); norms: (trajectories, R).
        normalized: the step rule (normalized: power law; constant: Theorem 8's log law).
        p, lr: the exponent and step size (for ``1/(p-1)`` and the dual-step bound).
        bootstrap, seed, level: resampling of trajectories for the interval.

    Raises:
        MdcertError: fewer than 3 finite tail points.
    """
    steps = np.asarray(steps, dtype=np.float64)
    norms = np.atleast_2d(np.asarray(norms, dtype=np.float64))
    mask = tail_mask(steps, tail_fraction=tail_fraction, min_step=2)
    rows = np.all(np.isfinite(norms[:, mask]) & (norms[:, mask] > 0), axis=1)
    sub = norms[rows][:, mask]
    if sub.shape[0] == 0 or mask.sum() < 3:
        raise MdcertError("need at least 3 finite tail points of ||W(k)||_p to fit norm growth")
    default_from = int(steps[mask][0])
    start, settled = _after_plateau(np.log(steps[mask]), sub.mean(axis=0), normalized)
    k = steps[mask][start:]
    sub = sub[:, start:]
    lk = np.log(k)
    mean = sub.mean(axis=0)
    law = "power" if normalized else "log"
    Y = np.log(mean) if normalized else mean
    c1, c0, rmse = fit_line(lk, Y[None, :])
    other = mean if normalized else np.log(mean)
    _, _, rmse_o = fit_line(lk, other[None, :])
    ci = None
    nboot = 0
    if bootstrap > 0 and sub.shape[0] > 1:
        bm = bootstrap_means(sub, bootstrap, np.random.default_rng(seed))
        bc1 = fit_line(lk, np.log(bm) if normalized else bm)[0]
        lo, hi = np.percentile(bc1, [50 * (1 - level), 50 * (1 + level)])
        ci, nboot = (float(lo), float(hi)), int(bootstrap)
    expected = float(1 / (p - 1)) if normalized and p is not None else None
    ratio = None
    zero = np.flatnonzero(steps == 0)
    if normalized and p is not None and lr is not None and zero.size:
        valid = (steps > 0) & np.all(np.isfinite(norms[rows]), axis=0)
        bound = normalized_bound(norms[rows, zero[0]], steps[valid], p=float(p), lr=float(lr))
        ratio = float(np.max(norms[rows][:, valid] / bound)) if valid.any() else None
    return NormFit(
        law,
        "normalized" if normalized else "constant",
        float(c1[0]),
        ci,
        float(c0[0]),
        _r2(Y, float(rmse[0])),
        _r2(other, float(rmse_o[0])),
        expected,
        ratio,
        int(k[0]),
        int(k.size),
        int(sub.shape[0]),
        nboot,
        float(level),
        default_from,
        settled,
    )


#: relative difference of the local slopes (early vs late half of the window) counted as steady
STEADY_TOL = 0.1


def _after_plateau(lk: np.ndarray, mean: np.ndarray, normalized: bool) -> tuple[int, bool]:
    """First index of the fitted window and whether the slope is steady there: the window's start moves
    later in tenths of its log-span (keeping at least half of it, and 5 points) while the slope of the
    fitted law (log ||W|| or ||W|| against log k) differs by more than `STEADY_TOL` between halves."""
    Y = np.log(mean) if normalized else mean
    span = lk[-1] - lk[0]
    last = 0
    for j in range(6):
        i = int(np.searchsorted(lk, lk[0] + 0.1 * j * span))
        x, y = lk[i:], Y[i:]
        if x.size < 5:
            break
        last = i
        half = x <= 0.5 * (x[0] + x[-1])
        if half.sum() < 2 or (~half).sum() < 2:
            break
        b1 = fit_line(x[half], y[None, half])[0][0]
        b2 = fit_line(x[~half], y[None, ~half])[0][0]
        if abs(b2 - b1) <= STEADY_TOL * max(abs(b1), abs(b2)):
            return i, True
    return last, False
