"""Rate fitting (experiments/rates.py): known exponents are recovered, the right model wins."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from certify import MdcertError
from experiments.paths.rates import fit_line, fit_norm_growth, fit_rates, tail_mask

STEPS = np.unique(np.round(np.geomspace(1, 20000, 63)).astype(int))


def _curves(kind: str, exponent: float, C: float = 2.0, trials: int = 50, noise: float = 0.05, seed: int = 0):
    rng = np.random.default_rng(seed)
    k = STEPS.astype(float)
    base = C * (np.log(np.maximum(k, 2.0)) ** -exponent if kind == "log" else k ** -exponent)
    return base[None, :] * np.exp(noise * rng.standard_normal((trials, k.size)))


@pytest.mark.parametrize("a", [0.5, 1.0, 2.5])
def test_recovers_log_rate_and_prefers_log_model(a) -> None:
    fit = fit_rates(STEPS, _curves("log", a), bootstrap=400)
    lf = fit.fits["log"]
    assert fit.better == "log"
    assert lf.exponent == pytest.approx(a, rel=0.05)
    lo, hi = lf.ci95
    assert lo <= a <= hi + 0.02 * a and lo < hi
    assert lf.r2 > fit.fits["power"].r2


@pytest.mark.parametrize("b", [0.3, 1.0, 2.0])
def test_recovers_power_rate_and_prefers_power_model(b) -> None:
    fit = fit_rates(STEPS, _curves("power", b), bootstrap=400)
    pf = fit.fits["power"]
    assert fit.better == "power"
    assert pf.exponent == pytest.approx(b, rel=0.02)
    assert pf.ci95[0] <= b <= pf.ci95[1] + 0.02 * b
    assert pf.C == pytest.approx(2.0, rel=0.1)


@settings(deadline=None, max_examples=20)
@given(a=st.floats(0.2, 4.0), C=st.floats(1e-3, 1e3))
@example(a=1.0, C=1.0)
def test_noise_free_log_curve_is_fitted_exactly(a, C) -> None:
    fit = fit_rates(STEPS, _curves("log", a, C=C, trials=3, noise=0.0), bootstrap=0)
    assert fit.fits["log"].exponent == pytest.approx(a, rel=1e-9)
    assert fit.fits["log"].C == pytest.approx(C, rel=1e-8)
    assert fit.fits["log"].ci95 is None and fit.bootstrap == 0


def test_tail_and_nan_handling() -> None:
    curves = _curves("power", 1.0, trials=5)
    curves[0, -3] = np.nan                       # a trial with a hole in the tail is left out
    fit = fit_rates(STEPS, curves, bootstrap=0)
    assert fit.trials == 4
    assert fit.tail_from >= 0.01 * STEPS.max() and fit.points == int(tail_mask(STEPS).sum())
    json_ = fit.to_json()
    assert json_["better"] == "power" and set(json_) >= {"log", "power", "tail_from_step", "trials"}


def test_bootstrap_is_seeded() -> None:
    c = _curves("log", 1.0)
    assert fit_rates(STEPS, c, seed=3).fits["log"].ci95 == fit_rates(STEPS, c, seed=3).fits["log"].ci95


def test_fit_line_matches_polyfit() -> None:
    rng = np.random.default_rng(1)
    x = rng.standard_normal(20)
    Y = rng.standard_normal((3, 20))
    c1, c0, _ = fit_line(x, Y)
    for j in range(3):
        s, i = np.polyfit(x, Y[j], 1)
        assert c1[j] == pytest.approx(s) and c0[j] == pytest.approx(i)


def test_norm_growth_slope() -> None:
    k = STEPS.astype(float)
    norms = 3.0 + 1.5 * np.log(k)[None, :] + 0.01 * np.random.default_rng(0).standard_normal((10, k.size))
    nf = fit_norm_growth(STEPS, norms)
    assert nf.slope_log == pytest.approx(1.5, rel=0.01) and nf.r2_log > 0.99
    assert set(nf.to_json()) >= {"slope_log", "r2_log", "power_exponent"}


@pytest.mark.parametrize("steps, curves, pattern", [
    (np.array([1, 2, 3]), np.ones((2, 4)), r"points per trial"),
    (STEPS, np.full((3, STEPS.size), np.nan), r"no trial"),
    (STEPS, -np.ones((3, STEPS.size)), r"positive tail points"),
    (np.array([5, 5, 5, 5]), np.ones((2, 4)), r"same step"),
])
def test_fit_errors(steps, curves, pattern) -> None:
    with pytest.raises(MdcertError, match=pattern):
        fit_rates(steps, curves, tail_fraction=0.0)


def test_norm_fit_needs_points() -> None:
    with pytest.raises(MdcertError, match="at least 3"):
        fit_norm_growth(np.array([0, 1]), np.ones((2, 2)))
