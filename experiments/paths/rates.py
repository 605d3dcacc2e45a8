"""Measured convergence rates of training paths (docs/theory.md section 5, Theorems 8, 10, 11).

Two two-parameter models are fitted on the tail of a decay curve ``D(k)`` (the directional Bregman
divergence), by least squares in log space:

- ``log``:   ``D(k) = C (log k)^(-a)``  (Theorem 11 predicts an inverse-logarithmic rate),
- ``power``: ``D(k) = C k^(-b)``.

The fitted curve is the mean over trials; confidence intervals come from a bootstrap over trials
(resample trials with replacement, refit). Both models have two parameters, so the residual RMS in
log space compares them directly (``better`` names the smaller one). Norm growth
``||W(k)||_p`` is fitted as ``c0 + c1 log k`` (Theorem 8's logarithmic order) and, for comparison,
as a power law. numpy only (no torch), so worker processes and the plot command stay light.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from certify.errors import MdcertError

__all__ = ["ModelFit", "RateFit", "NormFit", "fit_line", "fit_rates", "fit_norm_growth", "tail_mask"]

MODELS = ("log", "power")


@dataclass(frozen=True)
class ModelFit:
    """One fitted model: ``D = C * x^(-exponent)`` with x = log k (``log``) or k (``power``).

    Attributes:
        model: "log" or "power".
        exponent: fitted decay exponent (a or b).
        C: prefactor.
        ci95: bootstrap 95% interval of the exponent (over trials), or None with a single trial.
        rmse_log: residual root-mean-square of ``log D`` on the tail.
        r2: coefficient of determination of the log-space fit.
    """

    model: str
    exponent: float
    C: float
    ci95: tuple[float, float] | None
    rmse_log: float
    r2: float


@dataclass(frozen=True)
class RateFit:
    """Both models on one curve, and which fits better (smaller log-space RMS).

    Attributes:
        fits: {"log": ModelFit, "power": ModelFit}.
        better: "log" or "power".
        tail_from: first step of the fitted tail; points: tail points used; trials: curves averaged.
        bootstrap: bootstrap resamples used.
    """

    fits: dict
    better: str
    tail_from: int
    points: int
    trials: int
    bootstrap: int

    def to_json(self) -> dict:
        return {"better": self.better, "tail_from_step": self.tail_from, "points": self.points,
                "trials": self.trials, "bootstrap": self.bootstrap,
                **{name: _clean(asdict(f)) for name, f in self.fits.items()}}


@dataclass(frozen=True)
class NormFit:
    """``||W(k)||_p ~ c0 + c1 log k`` (slope ``c1``) and ``~ C k^e`` on the tail of the mean curve."""

    slope_log: float
    intercept_log: float
    r2_log: float
    power_exponent: float
    r2_power: float
    tail_from: int

    def to_json(self) -> dict:
        return _clean(asdict(self))


def _clean(d: dict) -> dict:
    out = {}
    for k, v in d.items():
        if isinstance(v, float) and not np.isfinite(v):
            out[k] = None
        elif isinstance(v, tuple):
            out[k] = [None if not np.isfinite(x) else float(x) for x in v]
        else:
            out[k] = v
    return out


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


def _r2(y: np.ndarray, rmse: float) -> float:
    var = float(np.var(y))
    return float(1.0 - rmse**2 / var) if var > 0 else float("nan")


def fit_rates(steps: np.ndarray, curves: np.ndarray, *, tail_fraction: float = 0.01, bootstrap: int = 1000,
              seed: int = 0) -> RateFit:
    """Fit ``C (log k)^-a`` and ``C k^-b`` to the tail of the mean of ``curves`` (trials x steps).

    Args:
        steps: record steps (R,), shared by all trials.
        curves: D values (trials, R); NaN entries (unrecorded or infeasible) are ignored per step;
            a step is used only if every remaining trial has a positive value there.
        tail_fraction: the tail is ``k >= tail_fraction * max k`` (default: the last two decades) (and k >= 3, so log log k > 0).
        bootstrap: resamples over trials for the 95% intervals (0: none).
        seed: bootstrap seed.

    Raises:
        MdcertError: fewer than 3 usable tail points or no usable trial.
    """
    steps = np.asarray(steps, dtype=np.float64)
    curves = np.atleast_2d(np.asarray(curves, dtype=np.float64))
    if curves.shape[1] != steps.shape[0]:
        raise MdcertError(f"curves have {curves.shape[1]} points per trial but there are {steps.shape[0]} steps")
    mask = tail_mask(steps, tail_fraction=tail_fraction)
    good = curves[:, mask]
    good = good[np.all(np.isfinite(good), axis=1)]
    if good.shape[0] == 0:
        raise MdcertError("no trial has finite values on the whole tail; nothing to fit")
    k = steps[mask]
    mean = good.mean(axis=0)
    pos = mean > 0
    if pos.sum() < 3:
        raise MdcertError(f"need at least 3 positive tail points to fit a rate, got {int(pos.sum())}")
    k, good, mean = k[pos], good[:, pos], mean[pos]
    xs = {"log": np.log(np.log(k)), "power": np.log(k)}
    y = np.log(mean)
    nt = good.shape[0]
    rng = np.random.default_rng(seed)
    boots = None
    if bootstrap > 0 and nt > 1:
        idx = rng.integers(0, nt, size=(bootstrap, nt))
        bm = good[idx].mean(axis=1)                          # (bootstrap, points)
        keep = np.all(bm > 0, axis=1)
        boots = np.log(bm[keep])
    fits = {}
    for name, x in xs.items():
        c1, c0, rmse = fit_line(x, y[None, :])
        ci = None
        if boots is not None and boots.shape[0] > 1:
            bc1, _, _ = fit_line(x, boots)
            lo, hi = np.percentile(-bc1, [2.5, 97.5])
            ci = (float(lo), float(hi))
        fits[name] = ModelFit(name, float(-c1[0]), float(np.exp(c0[0])), ci, float(rmse[0]), _r2(y, float(rmse[0])))
    better = min(MODELS, key=lambda m: fits[m].rmse_log)
    return RateFit(fits, better, int(k.min()), int(k.size), int(nt), int(0 if boots is None else boots.shape[0]))


def fit_norm_growth(steps: np.ndarray, norms: np.ndarray, *, tail_fraction: float = 0.01) -> NormFit:
    """Fit the mean ``||W(k)||_p`` over trials against log k (and as a power law) on the tail."""
    steps = np.asarray(steps, dtype=np.float64)
    norms = np.atleast_2d(np.asarray(norms, dtype=np.float64))
    mask = tail_mask(steps, tail_fraction=tail_fraction, min_step=2)
    sub = norms[:, mask]
    sub = sub[np.all(np.isfinite(sub), axis=1)]
    if sub.shape[0] == 0 or mask.sum() < 3:
        raise MdcertError("need at least 3 finite tail points of ||W(k)||_p to fit norm growth")
    k = steps[mask]
    mean = sub.mean(axis=0)
    c1, c0, rmse = fit_line(np.log(k), mean[None, :])
    e1, _, rmse_p = fit_line(np.log(k), np.log(mean)[None, :])
    return NormFit(float(c1[0]), float(c0[0]), _r2(mean, float(rmse[0])), float(e1[0]),
                   _r2(np.log(mean), float(rmse_p[0])), int(k.min()))
