"""One-line texts of the fits (experiments/paths/text.py)."""

from __future__ import annotations

import numpy as np

from experiments.paths.growth import fit_norm_growth, normalized_bound
from experiments.paths.rates import fit_rates
from experiments.paths.text import interval_text, norm_line, rate_line


def test_rate_line_names_the_verdict_its_reason_and_both_exponents() -> None:
    k = np.unique(np.round(np.geomspace(1, 1e5, 101)).astype(int)).astype(float)
    curves = k[None, :] ** -1.0 * np.exp(0.3 * np.random.default_rng(0).standard_normal((16, 1)))
    js = fit_rates(k, curves, bootstrap=100).to_json()
    line = rate_line(js)
    assert line.startswith("rate power (held-out error log ") and "a = " in line and "b = 1 [" in line
    assert rate_line({"error": "too short"}) == "rate: not fitted (too short)" and rate_line(None) == "rate: not measured"


def test_norm_line_for_both_step_rules() -> None:
    k = np.concatenate([[0], np.unique(np.round(np.geomspace(1, 1e5, 61)).astype(int))])
    n0 = np.exp(np.random.default_rng(0).standard_normal(8))
    power = fit_norm_growth(k, normalized_bound(n0, k, p=2.0, lr=0.1), normalized=True, p=2.0, lr=0.1).to_json()
    assert norm_line(power).startswith("||W||_p ~ k^") and "1/(p-1) = 1, <= 1 x the dual-step bound" in norm_line(power)
    logn = fit_norm_growth(k, 3 + np.log(np.maximum(k, 1))[None, :] * np.ones((4, 1)), normalized=False).to_json()
    assert norm_line(logn).startswith("||W||_p ~ 1 [1, 1] log k + c (R^2 1.000; power law R^2")
    assert norm_line({"error": "x"}) == "norm: not fitted (x)" and norm_line(None) == "norm: not measured"
    assert interval_text((1.0, 2.0)) == " [1, 2]" and interval_text(None) == ""


def test_a_norm_that_does_not_change_is_not_fitted_and_no_minus_zero_is_printed() -> None:
    """``paths --lr 1e-300``: the norm is constant, R^2 is undefined; the line said '~ 0 log k (R^2 nan)'."""
    k = np.arange(0, 50)
    flat = fit_norm_growth(k, np.full((2, k.size), 9.93), normalized=False).to_json()
    assert flat["r2"] is None or np.isnan(flat["r2"])
    flat["r2"] = None                                    # as summary.json stores NaN
    assert norm_line(flat) == "norm: not fitted (||W||_p does not change over the fitted window)"
    assert interval_text((-0.0, 0.0)) == " [0, 0]"
