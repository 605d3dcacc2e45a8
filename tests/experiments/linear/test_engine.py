"""The batched p-GD engine: scale-free weights, the mirror step, never NaN, statuses, config validation."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import example, given, settings
from hypothesis import strategies as st

from certify import classification_problem
from certify.errors import MdcertError
from experiments.linear.engine import (
    Loss,
    PgdConfig,
    PgdStatus,
    float_rows,
    record_steps,
    run_pgd_paths,
    scaled_weights,
)


@pytest.fixture(scope="module")
def problem():
    return classification_problem(n=30, d=4, seed=3)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.floats(-1e4, 1e4, allow_nan=False), min_size=1, max_size=6),
    st.sampled_from(list(Loss)),
)
@example([800.0, 900.0], Loss.EXPONENTIAL)
@example([-800.0, 3.0], Loss.LOGISTIC)
@example([1e4, 1e4 + 1.0], Loss.LOGISTIC)
def test_scaled_weights_are_the_loss_derivative_rescaled(margins, loss) -> None:
    M = torch.tensor([margins], dtype=torch.float64)
    c, m0 = scaled_weights(M, loss)
    # the largest weight is a normal number (about 1): the direction survives; far rows may underflow
    assert torch.isfinite(c).all() and (c >= 0).all() and 0.4 < c.max() <= 1.0 + 1e-12
    for u, ci in zip(margins, c[0].tolist()):
        if ci < 1e-290:  # subnormal or underflowed: negligible against the largest weight
            continue
        # log of -l'(u) = e^(-m0) c, compared in log space (the true values may underflow)
        true_log = (
            -u if loss is Loss.EXPONENTIAL else -u - math.log1p(math.exp(-u)) if u > -700 else 0.0
        )
        if loss is Loss.LOGISTIC and u < 0:
            true_log = -math.log1p(math.exp(u))
        assert math.isclose(math.log(ci) - float(m0), true_log, rel_tol=1e-12, abs_tol=1e-9)


def test_record_steps_are_log_spaced_and_end_at_steps() -> None:
    ks = record_steps(100_000, 50)
    assert ks[0] == 0 and ks[1] == 1 and ks[-1] == 100_000 and np.all(np.diff(ks) > 0)


def test_p2_constant_step_is_gradient_descent(problem) -> None:
    cfg = PgdConfig(
        ps=(2.0,), lrs=(0.5,), inits=1, init_scale=0.3, loss="logistic", steps=5, records=5, seed=1
    )
    paths = run_pgd_paths(problem, cfg)
    A = float_rows(problem)
    w = 0.3 * np.random.default_rng(1).standard_normal((1, A.shape[1]))[0]
    for k in range(5):
        g = -(A.T @ (1.0 / (1.0 + np.exp(A @ w)))) / A.shape[0]
        w = w - 0.5 * g
    np.testing.assert_allclose(paths.W[0, -1], w, rtol=1e-12, atol=1e-14)


def test_mirror_step_satisfies_the_dual_update(problem) -> None:
    p, lr = 1.5, 0.2
    cfg = PgdConfig(
        ps=(p,), lrs=(lr,), inits=1, init_scale=0.5, loss="exponential", steps=1, records=2
    )
    paths = run_pgd_paths(problem, cfg)
    A = float_rows(problem)
    w0, w1 = paths.W[0, 0], paths.W[0, -1]
    g = -(A.T @ np.exp(-(A @ w0))) / A.shape[0]
    dual = np.sign(w0) * np.abs(w0) ** (p - 1) - lr * g
    np.testing.assert_allclose(np.sign(w1) * np.abs(w1) ** (p - 1), dual, rtol=1e-12, atol=1e-15)


def test_normalized_steps_never_nan_past_gradient_underflow(problem) -> None:
    # margins grow far past 745, where e^-margin underflows: a plain loop divides 0 by 0
    refs = {p: np.ones(problem.d) / problem.d ** (1 / p) for p in (1.5, 3.0)}
    cfg = PgdConfig(
        ps=(1.5, 3.0),
        lrs=(50.0,),
        inits=2,
        init_scale=0.1,
        loss="logistic",
        normalize=True,
        steps=3000,
        records=20,
    )
    paths = run_pgd_paths(problem, cfg, references=refs)
    A = float_rows(problem)
    assert (A @ paths.W[:2, -1].T).min() > 800  # p = 1.5: every e^-margin underflows
    for arr in (paths.W, paths.norms, paths.margin, paths.bregman):
        assert np.isfinite(arr).all()
    assert set(paths.status) == {PgdStatus.FINISHED}
    assert (paths.margin[:, -1] > 0).all()  # separating direction found


def test_constant_steps_stall_instead_of_nan(problem) -> None:
    cfg = PgdConfig(ps=(2.0,), lrs=(1e6,), inits=1, loss="exponential", steps=200, records=10)
    paths = run_pgd_paths(problem, cfg)
    assert np.isfinite(paths.W).all()
    assert paths.status[0] in (PgdStatus.STALLED, PgdStatus.NONFINITE)
    assert paths.stopped_at[0] is not None


def test_bregman_decreases_towards_a_certified_direction(problem) -> None:
    from experiments.linear.study import references

    refs = references(problem, (2.0,), digits=20)
    cfg = PgdConfig(
        ps=(2.0,),
        lrs=(1.0,),
        inits=2,
        init_scale=0.1,
        loss="logistic",
        normalize=True,
        steps=2000,
        records=20,
    )
    paths = run_pgd_paths(problem, cfg, references={2.0: refs[2.0].direction})
    assert (paths.bregman[:, -1] < 0.1 * paths.bregman[:, 1]).all()
    assert (paths.bregman >= 0).all()


def test_multiclass_rows_are_the_crammer_singer_rows() -> None:
    pr = classification_problem(n=9, d=3, classes=3, seed=0)
    A = float_rows(pr)
    W = np.random.default_rng(0).standard_normal((3, 3))
    y = np.asarray(pr.y).astype(int)
    expect = [(W[y[i]] - W[k]) @ pr.X[i] for i in range(pr.n) for k in range(3) if k != y[i]]
    np.testing.assert_allclose(A @ W.ravel(), expect, rtol=1e-13)


@pytest.mark.parametrize(
    "kw,match",
    [
        ({"ps": (1.0,)}, r"--p values must lie in \(1, 20\]"),
        ({"ps": (float("nan"),)}, r"--p values must be finite"),
        ({"ps": ()}, r"--p is empty"),
        ({"lrs": (0.0,)}, r"--lr values must be finite and > 0"),
        ({"lrs": (float("inf"),)}, r"--lr values must be finite and > 0"),
        ({"inits": 0}, r"--inits must be an integer"),
        ({"steps": 0}, r"--steps must be an integer"),
        ({"steps": 1.5}, r"--steps must be an integer"),
        ({"records": 1}, r"--records must be an integer"),
        ({"init_scale": -1.0}, r"--init-scale must be finite and >= 0"),
        ({"loss": "hinge"}, r"hinge"),
    ],
)
def test_bad_config(kw, match) -> None:
    with pytest.raises((MdcertError, ValueError), match=match):
        PgdConfig(**kw)


def test_not_a_classification_problem() -> None:
    with pytest.raises(MdcertError, match="ClassificationProblem"):
        float_rows(object())
