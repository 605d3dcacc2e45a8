"""Measured decay rates of training paths (docs/theory.md section 6; the paper's Theorems 10 and 11).

Two laws are fitted to the average over trajectories of a decay curve ``D(k)`` (the directional
Bregman divergence; by default the geometric mean, exp of the mean of log D, the typical trajectory),
by least squares in log space:

- ``log``:   ``D(k) = C (log k)^(-a)``, the inverse-logarithmic family of Theorem 11 (its p < 2, p = 2
  and p > 2 forms differ in the exponent; ``a`` is fitted, a theoretical exponent can be passed as
  ``predicted`` and is then reported against the interval, never assumed);
- ``power``: ``D(k) = C k^(-b)``.

Exponent intervals come from a bootstrap over trajectories (resample trajectories with replacement,
refit). The model is chosen by prediction of a held-out tail: both laws are fitted on the early part
of the window and predict the late part; the RMS log errors are compared with a bootstrap interval of
their difference. The verdict is ``log`` or ``power`` only when that interval excludes 0 and the worse
error is at least ``min_ratio`` times the better one, and only on a curve in its asymptotic regime:
a curve that is not decreasing (``flat``), whose decay still accelerates (``transient``: both laws
have a non-increasing log-log slope, so an increasing one is neither's regime) or whose late values
sit at the float / certificate floor (``float_floor``) gets ``inconclusive`` with the reason. A
transient at the start of the window is skipped: the window's start moves later (in tenths of its
log-span, keeping at least half of it) until the decay no longer accelerates; the start used and the
skipped range are reported. A verdict that is impossible by construction says what would make it
possible (``needs``: more trajectories, a longer horizon, a window before the floor). numpy only (no
torch), so worker processes and the plot command stay light.
"""

from __future__ import annotations


import numpy as np

from certify.errors import MdcertError
from experiments.paths.fitting import (
    bootstrap_means,
    bregman_floor,
    clean_json,
    fit_line,
    tail_mask,
)
from experiments.paths.ratefit import CurveState, ModelFit, RateFit, Selection, Verdict

__all__ = [
    "MIN_TRAJECTORIES",
    "Verdict",
    "CurveState",
    "ModelFit",
    "Selection",
    "RateFit",
    "MODELS",
    "fit_line",
    "tail_mask",
    "bootstrap_means",
    "bregman_floor",
    "fit_rates",
    "rates_by_horizon",
    "clean_json",
]

#: fewest usable trajectories for a law verdict: the percentile bootstrap over 2-4 trajectories has few
#: distinct resamples and chose the wrong law in 0.5-1.8% of seeded noisy synthetic cases (8: 0.16%)
MIN_TRAJECTORIES = 8

MODELS = ("log", "power")
#: late values within this factor of the floor count as "at the float floor"
FLOOR_FACTOR = 10.0
#: relative increase of the local decay slope (late half vs early half) that marks a transient
ACCEL_TOL = 0.1


def _x(model: str, k: np.ndarray) -> np.ndarray:
    return np.log(np.log(k)) if model == "log" else np.log(k)


def _r2(y: np.ndarray, rmse: float) -> float:
    var = float(np.var(y))
    return float(1.0 - rmse**2 / var) if var > 0 else float("nan")


def _interval(values: np.ndarray, level: float) -> tuple[float, float]:
    lo, hi = np.percentile(values, [50 * (1 - level), 50 * (1 + level)])
    return float(lo), float(hi)


def _prediction_errors(k: np.ndarray, Y: np.ndarray, early: np.ndarray) -> dict:
    """RMS log error, per row of Y (log mean curves), of each law fitted on ``early`` predicting the rest."""
    out = {}
    for m in MODELS:
        x = _x(m, k)
        c1, c0, _ = fit_line(x[early], Y[:, early])
        pred = c0[:, None] + c1[:, None] * x[~early]
        out[m] = np.sqrt(np.mean((pred - Y[:, ~early]) ** 2, axis=1))
    return out


def _state(k, y, boots, level, floor, slope_ci) -> tuple[CurveState, str, tuple]:
    """Floor, flat and transient checks of one window (see `CurveState`)."""
    half = np.log(k) <= 0.5 * (np.log(k[0]) + np.log(k[-1]))
    x = np.log(k)
    if floor is not None and np.median(np.exp(y[~half])) <= FLOOR_FACTOR * floor:
        return (
            CurveState.FLOOR,
            f"late values (median {np.median(np.exp(y[~half])):.2e}) are within "
            f"{FLOOR_FACTOR:g}x of the resolution floor {floor:.2e}",
            (None, None, None),
        )
    b_all = -fit_line(x, y[None, :])[0][0]
    lo_all = b_all if slope_ci is None else slope_ci[0]
    if not lo_all > 0:
        what = f"interval [{slope_ci[0]:.3g}, {slope_ci[1]:.3g}]" if slope_ci else f"{b_all:.3g}"
        return (
            CurveState.FLAT,
            f"not decreasing over the window (power slope {what} is not > 0)",
            (None, None, None),
        )
    if half.sum() < 2 or (~half).sum() < 2:
        return (
            CurveState.ASYMPTOTIC,
            "decreasing (too few points to test acceleration)",
            (None, None, None),
        )
    b1 = -fit_line(x[half], y[None, half])[0][0]
    b2 = -fit_line(x[~half], y[None, ~half])[0][0]
    ci = None
    if boots is not None:
        d = fit_line(x[half], boots[:, half])[0] - fit_line(x[~half], boots[:, ~half])[0]
        ci = _interval(d, level)
    accel = b2 - b1 > ACCEL_TOL * abs(b1) and (ci is None or ci[0] > 0)
    if accel:
        return (
            CurveState.TRANSIENT,
            f"the decay still accelerates (local slope {b1:.3g} early, {b2:.3g} late; "
            f"both laws have non-increasing slopes)",
            (b1, b2, ci),
        )
    return (
        CurveState.ASYMPTOTIC,
        f"decreasing, decay not accelerating (local slope {b1:.3g} early, {b2:.3g} late)",
        (b1, b2, ci),
    )


def fit_rates(
    steps: np.ndarray,
    curves: np.ndarray,
    *,
    tail_fraction: float = 0.01,
    start: int = 3,
    holdout: float = 1 / 3,
    bootstrap: int = 1000,
    seed: int = 0,
    level: float = 0.95,
    min_ratio: float = 1.25,
    floor: float | None = None,
    predicted: float | None = None,
    average: str = "geometric",
    skip_transient: bool = True,
) -> RateFit:
    """Fit both laws to the mean of ``curves`` on ``k >= tail_fraction * max k`` and choose between them.

    Args:
        steps: record steps (R,), shared by all trajectories.
        curves: D values (trajectories, R); a trajectory is used only if it is finite and positive on
            the whole window.
        tail_fraction, start: the window is ``k >= max(start, tail_fraction * max k)`` (default: the last
            two decades; start >= 3 so log log k > 0; ``tail_fraction=0`` with a fixed start lets the
            window grow with the horizon).
        holdout: fraction of the window (in log k) held out for the model choice (default the last third).
        bootstrap: resamples over trajectories (0: no intervals, verdict inconclusive).
        seed: bootstrap seed; level: interval level (default 0.95).
        min_ratio: the worse held-out error must be at least this multiple of the better one.
        floor: resolution floor of D (`bregman_floor`); None: no floor check.
        predicted: a theoretical exponent of the log law to report against its interval.
        average: the curve fitted: "geometric" (default: exp of the mean of log D, the typical
            trajectory) or "arithmetic" (the mean of D, what the paper plots; dominated by the slowest
            trajectories, so one late transient of one trajectory shapes its tail).
        skip_transient: when the decay accelerates on the window, start the window later (up to half
            of its log-span) where it no longer does; ``tail_from`` then says where it starts.

    Raises:
        MdcertError: fewer than 3 usable points in each part, or no usable trajectory.
    """
    steps = np.asarray(steps, dtype=np.float64)
    curves = np.atleast_2d(np.asarray(curves, dtype=np.float64))
    if curves.shape[1] != steps.shape[0]:
        raise MdcertError(
            f"curves have {curves.shape[1]} points per trial but there are {steps.shape[0]} steps"
        )
    if not 0 < holdout < 1 or not 0 < level < 1:
        raise MdcertError(f"holdout and level must be in (0, 1), got {holdout}, {level}")
    mask = tail_mask(steps, tail_fraction=tail_fraction, min_step=max(3, int(start)))
    good = curves[:, mask]
    good = good[np.all(np.isfinite(good) & (good > 0), axis=1)]
    if good.shape[0] == 0:
        raise MdcertError("no trial has finite positive values on the whole tail; nothing to fit")
    k = steps[mask]
    if k.size < 3:
        raise MdcertError(f"need at least 3 positive tail points to fit a rate, got {k.size}")
    lk = np.log(k)
    early = lk < lk[0] + (1 - holdout) * (lk[-1] - lk[0])
    if early.sum() < 3 or (~early).sum() < 2:
        raise MdcertError(
            f"need at least 3 fitted and 2 held-out tail points, got {int(early.sum())} and "
            f"{int((~early).sum())}; record more points (--records) or widen the tail (--tail)"
        )
    nt = good.shape[0]
    if average not in ("arithmetic", "geometric"):
        raise MdcertError(f"average must be 'arithmetic' or 'geometric', got {average!r}")
    geo = average == "geometric"
    y = np.log(good).mean(axis=0) if geo else np.log(good.mean(axis=0))
    rng = np.random.default_rng(seed)
    boots = None
    if bootstrap > 0 and nt > 1:
        boots = (
            bootstrap_means(np.log(good), bootstrap, rng)
            if geo
            else np.log(bootstrap_means(good, bootstrap, rng))
        )
    default_from = int(k[0])
    start = _after_transient(k, y, boots, level, floor, holdout) if skip_transient else 0
    if start:
        k, y, lk = k[start:], y[start:], lk[start:]
        boots = None if boots is None else boots[:, start:]
        early = lk < lk[0] + (1 - holdout) * (lk[-1] - lk[0])
    fits = _model_fits(k, y, boots, level)
    state, why, slopes = _state(k, y, boots, level, floor, fits["power"].ci)
    if start:
        why += f" (window from k={int(k[0])}: an accelerating transient on k in [{default_from}, {int(k[0])}) skipped)"
    err = {m: float(v[0]) for m, v in _prediction_errors(k, y[None, :], early).items()}
    diff = err["log"] - err["power"]
    ratio = max(err.values()) / max(min(err.values()), 1e-300)
    dci = None
    if boots is not None:
        be = _prediction_errors(k, boots, early)
        dci = _interval(be["log"] - be["power"], level)
    sel_txt = (
        f"held-out error log {err['log']:.3g} vs power {err['power']:.3g}, difference {diff:.3g}"
        + (f" [{dci[0]:.3g}, {dci[1]:.3g}]" if dci else "")
    )
    needs = []
    if nt < MIN_TRAJECTORIES:
        needs.append(("trajectories", MIN_TRAJECTORIES))
    if state in (CurveState.TRANSIENT, CurveState.FLAT):
        needs.append(("horizon", "longer"))
    elif state is CurveState.FLOOR:
        needs.append(("horizon", "before the floor"))
    if state is not CurveState.ASYMPTOTIC:
        verdict, reason = Verdict.INCONCLUSIVE, f"{state.value}: {why}"
    elif dci is None:
        verdict, reason = (
            Verdict.INCONCLUSIVE,
            (f"{'one trajectory' if nt == 1 else 'no bootstrap'}, no interval; {sel_txt}"),
        )
    elif nt < MIN_TRAJECTORIES:
        verdict, reason = (
            Verdict.INCONCLUSIVE,
            f"{sel_txt}: only {nt} trajectories",
        )  # needs says how many
    elif dci[0] > 0 and ratio >= min_ratio:
        verdict, reason = Verdict.POWER, sel_txt
    elif dci[1] < 0 and ratio >= min_ratio:
        verdict, reason = Verdict.LOG, sel_txt
    elif dci[0] <= 0 <= dci[1]:
        verdict, reason = Verdict.INCONCLUSIVE, f"{sel_txt}: the interval contains 0"
    else:
        verdict, reason = (
            Verdict.INCONCLUSIVE,
            f"{sel_txt}: errors within a factor {min_ratio:g} ({ratio:.2f})",
        )
    split = int(k[~early][0])
    early_fits = {}
    for m in MODELS:
        c1, c0, _ = fit_line(_x(m, k[early]), y[None, early])
        early_fits[m] = (float(-c1[0]), float(np.exp(c0[0])))
    sel = Selection(verdict, reason, split, err["log"], err["power"], diff, dci, ratio, early_fits)
    pred = None
    if predicted is not None:
        ci = fits["log"].ci
        pred = (float(predicted), None if ci is None else bool(ci[0] <= predicted <= ci[1]))
    if verdict is not Verdict.INCONCLUSIVE:
        needs = []
    return RateFit(
        fits,
        sel,
        state,
        why,
        slopes,
        int(k[0]),
        int(k.size),
        int(nt),
        0 if boots is None else int(boots.shape[0]),
        float(level),
        floor,
        pred,
        average,
        default_from,
        tuple(needs),
    )


def _model_fits(k: np.ndarray, y: np.ndarray, boots: np.ndarray | None, level: float) -> dict:
    """Both laws fitted to the mean log curve ``y`` on the window ``k`` (intervals from ``boots``)."""
    fits = {}
    for m in MODELS:
        x = _x(m, k)
        c1, c0, rmse = fit_line(x, y[None, :])
        ci = _interval(-fit_line(x, boots)[0], level) if boots is not None else None
        fits[m] = ModelFit(
            m, float(-c1[0]), float(np.exp(c0[0])), ci, float(rmse[0]), _r2(y, float(rmse[0]))
        )
    return fits


#: the window's start moves in steps of this fraction of its log-span while a transient is detected
TRANSIENT_STEP = 0.1
#: ... and keeps at least this fraction of the log-span
MIN_KEPT = 0.5


def _after_transient(k, y, boots, level, floor, holdout) -> int:
    """Index of the first window point once an initial transient is skipped (0: none detected, or the
    decay accelerates however late the window starts: then the whole window is kept and flagged)."""

    def state_from(i: int) -> CurveState:
        kk, yy = k[i:], y[i:]
        bb = None if boots is None else boots[:, i:]
        ci = _interval(-fit_line(np.log(kk), bb)[0], level) if bb is not None else None
        return _state(kk, yy, bb, level, floor, ci)[0]

    if state_from(0) is not CurveState.TRANSIENT:
        return 0
    lk = np.log(k)
    span = lk[-1] - lk[0]
    for j in range(1, int(round((1 - MIN_KEPT) / TRANSIENT_STEP)) + 1):
        i = int(np.searchsorted(lk, lk[0] + j * TRANSIENT_STEP * span))
        kk = lk[i:]
        if kk.size < 6 or (kk < kk[0] + (1 - holdout) * (kk[-1] - kk[0])).sum() < 3:
            return 0
        if state_from(i) is CurveState.ASYMPTOTIC:
            return i
    return 0


def rates_by_horizon(steps: np.ndarray, curves: np.ndarray, horizons, **options) -> dict:
    """`fit_rates` on the records ``k <= H`` for every horizon H (the same window rule at each horizon).

    Returns:
        ``{H: RateFit or the MdcertError message}``.
    """
    steps = np.asarray(steps)
    out = {}
    for H in horizons:
        keep = (steps >= 0) & (steps <= H)
        try:
            out[int(H)] = fit_rates(steps[keep], np.atleast_2d(curves)[:, keep], **options)
        except MdcertError as exc:
            out[int(H)] = str(exc)
    return out
