"""experiments.diagnet.ode: a small-step discrete run follows the smoothed-sign flow."""

from __future__ import annotations

import numpy as np

from certify.regression import regression_problem
from experiments.diagnet import DiagConfig, Rule, run_diag_paths
from experiments.diagnet.ode import ode_reference


def test_small_steps_follow_the_flow() -> None:
    pr = regression_problem("block", N=2, seed=3)
    lr, steps, eps = 1e-4, 4000, 1e-2
    res = run_diag_paths(
        pr, DiagConfig(Rule.SIGN, eps=(eps,), lr=(lr,), steps=steps, record_every=1000)
    )
    t, beta = ode_reference(pr, eps=eps, alpha=0.1, t_end=steps * lr, t_eval=res.record_steps * lr)
    assert (
        np.abs(res.beta[0] - beta).max() < 50 * lr
    )  # a first-order method: error O(lr) on [0, 0.4]
    coarse = run_diag_paths(
        pr, DiagConfig(Rule.SIGN, eps=(eps,), lr=(lr * 20,), steps=steps // 20, record_every=50)
    )
    assert np.abs(coarse.beta[0] - beta).max() > np.abs(res.beta[0] - beta).max()
