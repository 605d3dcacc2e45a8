"""experiments.diagnet.engine: batched diagonal-network paths (gd, smoothed sign, Adam)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from certify.errors import MdcertError
from certify.regression import regression_problem
from experiments.diagnet import DiagConfig, DiagStatus, Rule, run_diag_paths


@pytest.fixture(scope="module")
def block():
    return regression_problem("block", N=3, seed=1)


def test_batched_grid_equals_each_trajectory_alone(block) -> None:
    cfg = DiagConfig(
        Rule.SIGN, eps=(1e-3, 1e-2), alpha=(0.1, 0.2), lr=(1e-3,), steps=300, record_every=100
    )
    together = run_diag_paths(block, cfg)
    for b, (e, a, lr) in enumerate(cfg.grid()):
        alone = run_diag_paths(
            block,
            DiagConfig(Rule.SIGN, eps=(e,), alpha=(a,), lr=(lr,), steps=300, record_every=100),
        )
        assert np.array_equal(together.w_plus[b], alone.w_plus[0]) and np.array_equal(
            together.beta[b], alone.beta[0]
        )
        assert together.t0_step[b] == alone.t0_step[0]


def test_adam_without_momentum_is_smoothed_sign_descent(block) -> None:
    sign = run_diag_paths(block, DiagConfig(Rule.SIGN, eps=(1e-2,), steps=500))
    adam = run_diag_paths(block, DiagConfig(Rule.ADAM, eps=(1e-2,), steps=500, betas=(0.0, 0.0)))
    assert np.array_equal(sign.w_plus, adam.w_plus) and np.array_equal(sign.w_minus, adam.w_minus)


@pytest.mark.parametrize("betas", [(0.0, 0.0), (0.9, 0.999)])
def test_adam_rule_matches_torch_optim_adam(block, betas) -> None:
    """The batched Adam rule against torch.optim.Adam on the same model (one trajectory)."""
    steps, lr, eps = 200, 1e-3, 1e-3
    ours = run_diag_paths(
        block, DiagConfig(Rule.ADAM, eps=(eps,), lr=(lr,), steps=steps, betas=betas)
    )
    X, y = torch.tensor(np.array(block.X)), torch.tensor(np.array(block.y))
    wp = torch.full((block.D,), 0.1, dtype=torch.float64, requires_grad=True)
    wm = torch.full((block.D,), 0.1, dtype=torch.float64, requires_grad=True)
    opt = torch.optim.Adam([wp, wm], lr=lr, betas=betas, eps=eps, foreach=False)
    for _ in range(steps):
        opt.zero_grad()
        (((X @ (wp * wp - wm * wm) - y) ** 2).sum() / 4).backward()
        opt.step()
    assert np.allclose(ours.w_plus[0], wp.detach().numpy(), rtol=0, atol=1e-12)
    assert np.allclose(ours.w_minus[0], wm.detach().numpy(), rtol=0, atol=1e-12)


def test_smoothed_sign_interpolates_and_records_stage_times(block) -> None:
    res = run_diag_paths(
        block, DiagConfig(Rule.SIGN, eps=(1e-2,), lr=(1e-3,), steps=20_000, record_every=5_000)
    )
    assert res.status == (DiagStatus.FINISHED,)
    assert res.loss[0, -1] < 1e-12 and res.loss[0, 0] > 0.1
    assert 0 <= res.t0_step[0] <= res.t_step[0] or res.t_step[0] == -1
    assert np.allclose(block.X @ res.beta_final[0], block.y, atol=1e-6)
    assert not res.lr_vs_eps[0]


def test_a_diverging_run_stops_with_finite_weights_and_says_where(block) -> None:
    res = run_diag_paths(block, DiagConfig(Rule.GD, lr=(50.0, 1e-3), steps=400))
    assert res.status == (DiagStatus.NONFINITE, DiagStatus.FINISHED)
    assert 0 < res.stop_step[0] < 400 and res.stop_step[1] == 400
    assert np.isfinite(res.w_plus).all() and np.isfinite(res.beta).all()


def test_large_steps_against_eps_are_flagged(block) -> None:
    res = run_diag_paths(block, DiagConfig(Rule.SIGN, eps=(1e-4, 1e-2), lr=(1e-3,), steps=10))
    assert list(res.lr_vs_eps) == [True, False]


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"eps": (0.0,)}, r"eps values must be finite and positive"),
        ({"alpha": (-1.0,)}, r"alpha values must be finite and positive"),
        ({"lr": (float("nan"),)}, r"lr values must be finite and positive"),
        ({"steps": 0}, r"steps must be in 1..1e9"),
        ({"depth": 1}, r"depth must be at least 2"),
        ({"betas": (1.0, 0.0)}, r"Adam betas must lie in \[0, 1\)"),
    ],
)
def test_bad_configs_are_refused_in_one_line(kwargs, message) -> None:
    with pytest.raises(MdcertError, match=message):
        DiagConfig(Rule.SIGN, **kwargs)
