"""Norm growth (experiments/paths/growth.py): the law of the step rule is fitted with an interval, and
real normalized paths stay below the dual-step bound."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from certify import MdcertError, synthetic_problem
from experiments.paths.engine import run_paths
from experiments.paths.growth import fit_norm_growth, normalized_bound

STEPS = np.concatenate([[0], np.unique(np.round(np.geomspace(1, 1e6, 121)).astype(int))])


@pytest.mark.parametrize("p", [1.5, 2.0, 3.0])
def test_power_growth_of_normalized_steps(p) -> None:
    rng = np.random.default_rng(0)
    n0 = np.exp(rng.standard_normal(20))
    norms = 0.9 * normalized_bound(n0, STEPS, p=p, lr=0.1)  # a path at 90% of the bound after W(0)
    norms[:, 0] = n0
    fit = fit_norm_growth(STEPS, norms, normalized=True, p=p, lr=0.1)
    assert (
        fit.law == "power"
        and fit.rule == "normalized"
        and fit.expected == pytest.approx(1 / (p - 1))
    )
    lo, hi = fit.ci
    assert lo <= fit.coefficient <= hi and abs(fit.coefficient - 1 / (p - 1)) < 0.02 / (p - 1)
    assert fit.bound_ratio_max == pytest.approx(0.9) and fit.r2 > 0.999


def test_log_growth_of_constant_steps() -> None:
    k = np.maximum(STEPS, 1).astype(float)
    norms = (
        3.0 + 1.5 * np.log(k)[None, :] + 0.05 * np.random.default_rng(0).standard_normal((10, 1))
    )
    fit = fit_norm_growth(STEPS, norms, normalized=False, p=2.0, lr=0.1)
    assert fit.law == "log" and fit.expected is None and fit.bound_ratio_max is None
    assert fit.ci[0] <= 1.5 <= fit.ci[1] and fit.r2 > 0.999 and fit.other_r2 < fit.r2
    assert np.allclose(fit.curve(k[1:]), 3.0 + 1.5 * np.log(k[1:]), rtol=0.02)


@pytest.mark.parametrize("p", ["1.75", "3"])
def test_engine_paths_respect_the_dual_step_bound(p) -> None:
    """||Q(k)||_q <= ||Q(0)||_q + lr k for normalized mirror steps, measured on the engine's paths."""
    problems = [synthetic_problem(seed=t) for t in range(4)]
    W0 = torch.randn(
        (4, 10, 10), generator=torch.Generator().manual_seed(0), dtype=torch.float64
    ).numpy()
    res = run_paths(
        problems,
        data_index=range(4),
        p=[p] * 4,
        lr=[0.5] * 4,
        steps=[400] * 4,
        W0=W0,
        normalize=True,
        records=20,
    )
    fit = fit_norm_growth(
        res.record_steps[0], res.norm_p, normalized=True, p=float(p), lr=0.5, bootstrap=100
    )
    assert 0.5 < fit.bound_ratio_max <= 1 + 1e-9


def test_norm_fit_needs_points() -> None:
    with pytest.raises(MdcertError, match="at least 3"):
        fit_norm_growth(np.array([0, 1]), np.ones((2, 2)), normalized=True)


def test_the_power_fit_starts_after_the_initial_plateau() -> None:
    """||W(0)||^(p-1) = 100 and lr = 0.1: the norm stays near 10 until k ~ 1000, then grows like k^1
    (p = 2); a window from k = 100 would start inside the plateau."""
    k = np.concatenate([[0], np.unique(np.round(np.geomspace(1, 1e5, 121)).astype(int))]).astype(
        float
    )
    n0 = 100.0 * np.exp(0.01 * np.random.default_rng(1).standard_normal(6))
    norms = normalized_bound(n0, k, p=2.0, lr=0.1)
    fit = fit_norm_growth(k, norms, normalized=True, p=2.0, lr=0.1, tail_fraction=0.001)
    assert fit.default_from == 100 and fit.tail_from > 1000
    assert fit.coefficient == pytest.approx(1.0, abs=0.1) and fit.settled
    js = fit.to_json()
    assert js["default_from"] == 100 and js["settled"] is True
