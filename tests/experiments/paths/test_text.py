"""One-line texts of the fits (experiments/paths/text.py)."""

from __future__ import annotations

import numpy as np

from experiments.paths.growth import fit_norm_growth, normalized_bound
from experiments.paths.rates import fit_rates
from experiments.paths.text import ONE_TRAJECTORY, interval_text, norm_line, per_p_lines, rate_line


def test_rate_line_names_the_verdict_its_reason_and_both_exponents() -> None:
    k = np.unique(np.round(np.geomspace(1, 1e5, 101)).astype(int)).astype(float)
    curves = k[None, :] ** -1.0 * np.exp(0.3 * np.random.default_rng(0).standard_normal((16, 1)))
    js = fit_rates(k, curves, bootstrap=100).to_json()
    line = rate_line(js)
    assert (
        line.startswith("rate power (held-out error log ") and "a = " in line and "b = 1 [" in line
    )
    assert (
        rate_line({"error": "too short"}) == "rate: not fitted (too short)"
        and rate_line(None) == "rate: not measured"
    )


def test_norm_line_for_both_step_rules() -> None:
    k = np.concatenate([[0], np.unique(np.round(np.geomspace(1, 1e5, 61)).astype(int))])
    n0 = np.exp(np.random.default_rng(0).standard_normal(8))
    power = fit_norm_growth(
        k, normalized_bound(n0, k, p=2.0, lr=0.1), normalized=True, p=2.0, lr=0.1
    ).to_json()
    assert norm_line(power).startswith(
        "||W||_p ~ k^"
    ) and "1/(p-1) = 1, <= 1 x the dual-step bound" in norm_line(power)
    logn = fit_norm_growth(
        k, 3 + np.log(np.maximum(k, 1))[None, :] * np.ones((4, 1)), normalized=False
    ).to_json()
    assert norm_line(logn).startswith(
        "||W||_p ~ 1 [1, 1] log k + c on k >= 1000 (R^2 1.000; power law R^2"
    )
    assert (
        norm_line({"error": "x"}) == "norm: not fitted (x)"
        and norm_line(None) == "norm: not measured"
    )
    assert interval_text((1.0, 2.0)) == " [1, 2]" and interval_text(None) == ""


def test_a_norm_that_does_not_change_is_not_fitted_and_no_minus_zero_is_printed() -> None:
    """``paths --lr 1e-300``: the norm is constant, R^2 is undefined; the line said '~ 0 log k (R^2 nan)'."""
    k = np.arange(0, 50)
    flat = fit_norm_growth(k, np.full((2, k.size), 9.93), normalized=False).to_json()
    assert flat["r2"] is None or np.isnan(flat["r2"])
    flat["r2"] = None  # as summary.json stores NaN
    assert norm_line(flat) == "norm: not fitted (||W||_p does not change over the fitted window)"
    assert interval_text((-0.0, 0.0)) == " [0, 0]"


K = np.unique(np.round(np.geomspace(1, 1e5, 101)).astype(int)).astype(float)


def test_an_inconclusive_rate_says_what_would_make_a_verdict_possible() -> None:
    curves = K[None, :] ** -1.0 * np.exp(0.3 * np.random.default_rng(0).standard_normal((3, 1)))
    line = rate_line(fit_rates(K, curves, bootstrap=100).to_json())
    assert (
        line.startswith("rate inconclusive")
        and "a verdict needs >= 8 trajectories (--inits K >= 8" in line
    )


def test_one_trajectory_gives_no_interval_and_no_nan() -> None:
    fit = fit_rates(K, K[None, :] ** -1.0, bootstrap=100).to_json()
    line = rate_line(fit)
    assert (
        "nan" not in line
        and ONE_TRAJECTORY in line
        and "[" not in line.split("fitted on")[1]
        and ">= 8 trajectories" in line
    )
    k = np.concatenate([[0], K])
    norm = norm_line(
        fit_norm_growth(
            k, normalized_bound(np.array([1.0]), k, p=2.0, lr=0.1), normalized=True, p=2.0, lr=0.1
        ).to_json()
    )
    assert ONE_TRAJECTORY in norm and "nan" not in norm


def _entry(k_opt: int, K: int = 3, **extra) -> dict:
    e = {
        "trajectories": K,
        "alpha_final_is_opt": k_opt,
        "bregman_final_mean": 1.378e-4,
        "bregman_final_std": 2e-5,
        "bregman_trajectories": K,
        "bregman_final_opt_mean": 0.54,
        "bregman_final_opt_std": 0.1,
        "bregman_opt_trajectories": K,
        "rate_fit": {"error": "too short"},
        "rate_fit_opt": {"error": "too short"},
        "norm_fit": None,
    }
    return e | extra


def test_per_p_lines_name_the_reference_and_give_both_where_they_differ() -> None:
    lines = per_p_lines(_entry(0))
    assert lines[0] == "0 of 3 trajectories ended at the optimal tokens"
    assert (
        lines[1]
        == "D_final vs SVM(alpha_final) 1.378e-04 +- 2.0e-05; vs SVM(opt) 5.400e-01 +- 1.0e-01"
    )
    assert lines[2].startswith("vs SVM(alpha_final): rate") and lines[3].startswith(
        "vs SVM(opt): rate"
    )


def test_per_p_lines_one_reference_when_every_trajectory_ended_at_opt() -> None:
    lines = per_p_lines(_entry(3, bregman_final_opt_mean=1.378e-4))
    assert lines[0] == "3 of 3 trajectories ended at the optimal tokens"
    assert lines[1].startswith(
        "D_final vs SVM(alpha_final) = SVM(opt) (every trajectory ended at the optimal"
    )
    assert not any("vs SVM(opt):" in ln for ln in lines)


def test_per_p_lines_one_trajectory_has_no_spread() -> None:
    lines = per_p_lines(_entry(0, K=1, bregman_final_std=0.0))
    assert lines[1].endswith("(one trajectory, no spread)") and "+- 0" not in " ".join(lines)
