"""Rate fitting (experiments/paths/rates.py): both laws' exponents are recovered within their intervals,
the held-out verdict names the true law or says inconclusive, never the wrong one, and curves that are
not in an asymptotic regime are flagged."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from certify import MdcertError
from experiments.paths.rates import (
    MIN_TRAJECTORIES,
    CurveState,
    Verdict,
    bootstrap_means,
    bregman_floor,
    fit_line,
    fit_rates,
    rates_by_horizon,
    tail_mask,
)


def _steps(K: float, per_decade: int = 20) -> np.ndarray:
    return np.unique(np.round(np.geomspace(1, K, int(per_decade * np.log10(K)) + 1)).astype(int))


STEPS = _steps(1e5)


def _curves(
    kind: str,
    exponent: float,
    *,
    steps=STEPS,
    C: float = 2.0,
    trials: int = 32,
    spread: float = 0.3,
    noise: float = 0.02,
    seed: int = 0,
) -> np.ndarray:
    """Trajectories ``C_i law(k) e^(noise)``: a per-trajectory prefactor (spread) and per-record noise."""
    rng = np.random.default_rng(seed)
    k = steps.astype(float)
    base = C * (np.log(np.maximum(k, 2.0)) ** -exponent if kind == "log" else k**-exponent)
    return base[None, :] * np.exp(
        spread * rng.standard_normal((trials, 1)) + noise * rng.standard_normal((trials, k.size))
    )


@pytest.mark.parametrize("a", [0.5, 2.0, 8.0])
def test_log_law_is_recovered_and_chosen(a) -> None:
    fit = fit_rates(STEPS, _curves("log", a), bootstrap=400)
    lo, hi = fit.fits["log"].ci
    assert fit.state is CurveState.ASYMPTOTIC and fit.verdict is Verdict.LOG
    assert lo <= a <= hi and hi - lo < 0.1 * a
    sel = fit.selection
    assert sel.difference_ci[1] < 0 and sel.error_power > 1.25 * sel.error_log
    assert "held-out error log" in sel.reason


@pytest.mark.parametrize("b", [0.3, 1.0, 2.0])
def test_power_law_is_recovered_and_chosen(b) -> None:
    fit = fit_rates(STEPS, _curves("power", b), bootstrap=400)
    lo, hi = fit.fits["power"].ci
    assert fit.state is CurveState.ASYMPTOTIC and fit.verdict is Verdict.POWER
    assert lo <= b <= hi and hi - lo < 0.1 * b
    assert fit.selection.difference_ci[0] > 0


@pytest.mark.parametrize("kind, e", [("log", 1.0), ("power", 0.2), ("log", 3.0), ("power", 0.6)])
def test_curves_that_cannot_separate_the_laws_are_inconclusive(kind, e) -> None:
    """Half a decade of noisy records: both laws predict the held-out part within the noise."""
    steps = _steps(1e3)
    for seed in range(4):
        fit = fit_rates(
            steps,
            _curves(kind, e, steps=steps, trials=8, noise=0.2, seed=seed),
            tail_fraction=0.3,
            bootstrap=300,
            seed=seed,
        )
        assert fit.verdict is Verdict.INCONCLUSIVE, fit.selection.reason


@settings(deadline=None, max_examples=25)
@given(
    kind=st.sampled_from(["log", "power"]),
    e=st.floats(0.1, 6.0),
    K=st.sampled_from([1e2, 1e3, 1e4, 1e5]),
    trials=st.integers(MIN_TRAJECTORIES, 40),
    noise=st.floats(0.0, 0.05),
    seed=st.integers(0, 2**16),
)
@example(kind="power", e=0.1, K=1e2, trials=MIN_TRAJECTORIES, noise=0.3, seed=0)
@example(kind="log", e=6.0, K=1e5, trials=40, noise=0.0, seed=0)
def test_verdict_is_never_the_wrong_law(kind, e, K, trials, noise, seed) -> None:
    """Low noise: a wrong law here is a bug. Under heavy noise the verdict is a 95%-level decision and a
    wrong law can happen by chance (log, a = 1, 10^4 steps, 9 trajectories, noise 0.25, seed 292 chose
    'power'; 1 of 60 seeds there): its frequency is what the next-but-one test bounds."""
    if kind == "power":
        e = min(e, 2.0)
    fit = fit_rates(
        _steps(K),
        _curves(kind, e, steps=_steps(K), trials=trials, noise=noise, seed=seed),
        bootstrap=200,
        seed=seed,
    )
    assert fit.verdict.value in (kind, "inconclusive"), fit.selection.reason


@pytest.mark.parametrize("trials", [2, 3, MIN_TRAJECTORIES - 1])
def test_too_few_trajectories_never_decide(trials) -> None:
    """A bootstrap over 2 trajectories chose 'log' on a power law (k^-0.5, two decades, noise 0.3, seed 5)."""
    fit = fit_rates(
        _steps(1e2),
        _curves("power", 0.5, steps=_steps(1e2), trials=trials, noise=0.3, seed=5),
        bootstrap=200,
        seed=5,
    )
    assert (
        fit.verdict is Verdict.INCONCLUSIVE
        and f"only {trials} trajectories" in fit.selection.reason
    )


def test_wrong_law_rate_is_far_below_the_level_under_heavy_noise() -> None:
    """The verdict is a 95%-level decision, so a wrong law is possible by chance: under per-record noise
    of e^(0.5 N(0,1)) (far noisier than real D curves) it stays well under the nominal 2.5% per side."""
    wrong = total = 0
    for kind in ("power", "log"):
        for e in (0.3, 1.0, 2.0):
            for seed in range(6):
                fit = fit_rates(
                    _steps(1e3),
                    _curves(
                        kind, e, steps=_steps(1e3), trials=MIN_TRAJECTORIES, noise=0.5, seed=seed
                    ),
                    bootstrap=200,
                    seed=seed,
                )
                total += 1
                wrong += fit.verdict.value not in (kind, "inconclusive")
    assert wrong <= 1, f"{wrong} wrong-law verdicts of {total}"


def test_accelerating_decay_is_a_transient() -> None:
    k = _steps(1e4).astype(float)
    c = (0.7 / (1 + (k / 3000) ** 2))[None, :] * np.exp(
        0.05 * np.random.default_rng(1).standard_normal((16, 1))
    )
    fit = fit_rates(k, c)
    assert fit.state is CurveState.TRANSIENT and fit.verdict is Verdict.INCONCLUSIVE
    assert fit.selection.reason.startswith("transient: the decay still accelerates")
    early, late, ci = fit.slopes
    assert late > early and ci[0] > 0


def test_flat_curve_and_float_floor_are_flagged() -> None:
    rng = np.random.default_rng(2)
    flat = 0.6 * np.exp(0.05 * rng.standard_normal((16, STEPS.size)))
    fit = fit_rates(STEPS, flat)
    assert fit.state is CurveState.FLAT and fit.verdict is Verdict.INCONCLUSIVE
    floor = 1e-8  # the curve reaches it at k ~ 1e4
    at_floor = np.maximum(_curves("power", 2.0, noise=0.0), 2 * floor)
    fit = fit_rates(STEPS, at_floor, floor=floor)
    assert fit.state is CurveState.FLOOR and "resolution floor" in fit.selection.reason
    assert (
        fit_rates(STEPS, at_floor).state is not CurveState.FLOOR
    )  # no floor given: no floor check


def test_horizon_decides_a_noisy_log_curve() -> None:
    """A window from a fixed step grows with the horizon: one noisy decade is inconclusive, five decide."""
    steps = _steps(1e6)
    curves = _curves("log", 1.0, steps=steps, trials=8, noise=0.3)
    table = rates_by_horizon(
        steps, curves, [12, 100, 1e6], tail_fraction=0.0, start=10, bootstrap=300
    )
    assert isinstance(table[12], str) and "at least 3" in table[12]
    assert table[100].verdict is Verdict.INCONCLUSIVE
    assert table[10**6].verdict is Verdict.LOG and table[10**6].tail_from == 10


@settings(deadline=None, max_examples=20)
@given(a=st.floats(0.2, 4.0), C=st.floats(1e-3, 1e3))
@example(a=1.0, C=1.0)
def test_noise_free_log_curve_is_fitted_exactly(a, C) -> None:
    fit = fit_rates(STEPS, _curves("log", a, C=C, trials=3, spread=0.0, noise=0.0), bootstrap=0)
    assert fit.fits["log"].exponent == pytest.approx(a, rel=1e-9)
    assert fit.fits["log"].C == pytest.approx(C, rel=1e-8)
    assert fit.fits["log"].ci is None and fit.bootstrap == 0
    assert fit.verdict is Verdict.INCONCLUSIVE and "no interval" in fit.selection.reason


def test_predicted_exponent_is_reported_against_the_interval() -> None:
    c = _curves("log", 2.0)
    assert fit_rates(STEPS, c, predicted=2.0).predicted == (2.0, True)
    assert fit_rates(STEPS, c, predicted=1.0).predicted == (1.0, False)
    assert fit_rates(STEPS, c).predicted is None


def test_tail_nan_handling_and_json() -> None:
    curves = _curves("power", 1.0, trials=5)
    curves[0, -3] = np.nan  # a trajectory with a hole in the window is left out
    fit = fit_rates(STEPS, curves, bootstrap=50)
    assert fit.trials == 4
    assert fit.tail_from >= 0.01 * STEPS.max() and fit.points == int(tail_mask(STEPS).sum())
    js = fit.to_json()
    assert js["verdict"] in ("power", "inconclusive") and js["state"] == "asymptotic"
    assert set(js) >= {
        "log",
        "power",
        "selection",
        "reason",
        "tail_from_step",
        "trials",
        "slopes",
        "floor",
    }
    assert set(js["selection"]["early_fits"]) == {"log", "power"}


def test_bootstrap_is_seeded_and_resamples_trajectories() -> None:
    c = _curves("log", 1.0)
    assert fit_rates(STEPS, c, seed=3).fits["log"].ci == fit_rates(STEPS, c, seed=3).fits["log"].ci
    rows = np.arange(5.0)[:, None] * np.ones((5, 3))
    means = bootstrap_means(rows, 200, np.random.default_rng(0))
    assert means.shape == (200, 3) and np.all(means[:, 0] == means[:, 2]) and means.std() > 0
    assert abs(means.mean() - 2.0) < 0.2


def test_fit_line_matches_polyfit() -> None:
    rng = np.random.default_rng(1)
    x = rng.standard_normal(20)
    Y = rng.standard_normal((3, 20))
    c1, c0, _ = fit_line(x, Y)
    for j in range(3):
        s, i = np.polyfit(x, Y[j], 1)
        assert c1[j] == pytest.approx(s) and c0[j] == pytest.approx(i)


def test_bregman_floor() -> None:
    eps = np.finfo(np.float64).eps
    delta = 102 * eps / 2
    assert bregman_floor(2.0, 100) == pytest.approx(0.5 * delta**2)
    assert bregman_floor(1.5, 100) == pytest.approx(2**0.5 / 1.5 * delta**1.5)
    assert bregman_floor(3.0, 100, direction_error=1e-12) == pytest.approx(2 ** (1 / 3) * 1e-24)
    assert bregman_floor(3.0, 100, direction_error=float("nan")) == bregman_floor(3.0, 100)


@pytest.mark.parametrize(
    "steps, curves, options, pattern",
    [
        (np.array([1, 2, 3]), np.ones((2, 4)), {}, r"points per trial"),
        (STEPS, np.full((3, STEPS.size), np.nan), {}, r"no trial"),
        (STEPS, -np.ones((3, STEPS.size)), {}, r"no trial"),
        (
            np.array([5, 5, 5, 5]),
            np.ones((2, 4)),
            {"tail_fraction": 0.0},
            r"at least 3 fitted and 2 held-out",
        ),
        (STEPS, np.ones((2, STEPS.size)), {"holdout": 1.0}, r"holdout and level"),
    ],
)
def test_fit_errors(steps, curves, options, pattern) -> None:
    with pytest.raises(MdcertError, match=pattern):
        fit_rates(steps, curves, **options)


def test_one_slow_trajectory_shapes_the_arithmetic_mean_not_the_geometric_one() -> None:
    """31 trajectories D = C k^-1.5 and one that stays near 0.5 until k ~ 10^4 (a late transient)."""
    k = STEPS.astype(float)
    curves = _curves("power", 1.5, trials=32)
    curves[0] = 0.5 / (1 + (k / 1e4) ** 4)
    geo = fit_rates(STEPS, curves, bootstrap=400)
    ari = fit_rates(STEPS, curves, bootstrap=400, average="arithmetic")
    assert geo.average == "geometric" and geo.verdict is Verdict.POWER
    assert ari.average == "arithmetic" and ari.verdict is Verdict.INCONCLUSIVE
    assert (
        fit_rates(STEPS, _curves("log", 2.0), average="arithmetic", bootstrap=300).verdict
        is Verdict.LOG
    )
    with pytest.raises(MdcertError, match="average must be"):
        fit_rates(STEPS, curves, average="median")


def test_a_transient_at_the_window_start_is_skipped_and_reported() -> None:
    """D = (1000 + k)^-1: the decay accelerates until k >> 1000; the window starts after it."""
    k = np.unique(np.round(np.geomspace(1, 1e5, 121)).astype(int)).astype(float)
    curves = (1000 + k[None, :]) ** -1.0 * np.exp(
        0.05 * np.random.default_rng(3).standard_normal((16, 1))
    )
    fixed = fit_rates(k, curves, bootstrap=200, skip_transient=False)
    assert fixed.state is CurveState.TRANSIENT and not fixed.transient_skipped
    assert ("horizon", "longer") in fixed.needs
    fit = fit_rates(k, curves, bootstrap=200)
    assert fit.transient_skipped and fit.tail_from > fit.default_from == fixed.tail_from
    assert fit.state is CurveState.ASYMPTOTIC and "skipped" in fit.state_reason
    js = fit.to_json()
    assert js["window"] == {
        "from_step": fit.tail_from,
        "default_from_step": fixed.tail_from,
        "transient_skipped": True,
    }
    assert fit.fits["power"].exponent == pytest.approx(1.0, abs=0.1)


@pytest.mark.parametrize(
    "trials,needs",
    [(3, {"trajectories": MIN_TRAJECTORIES}), (1, {"trajectories": MIN_TRAJECTORIES}), (16, {})],
)
def test_needs_says_what_a_verdict_lacks(trials, needs) -> None:
    k = np.unique(np.round(np.geomspace(1, 1e5, 101)).astype(int)).astype(float)
    curves = k[None, :] ** -1.0 * np.exp(
        0.3 * np.random.default_rng(0).standard_normal((trials, 1))
    )
    js = fit_rates(k, curves, bootstrap=100).to_json()
    assert js["needs"] == needs
    assert (js["verdict"] == "inconclusive") == bool(needs)
