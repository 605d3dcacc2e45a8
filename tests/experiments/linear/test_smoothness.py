"""The relative-smoothness condition measured along p-GD paths (float64 samples)."""

from __future__ import annotations

import numpy as np

from certify import classification_problem
from experiments.linear.engine import PgdConfig, float_rows, run_pgd_paths
from experiments.linear.smoothness import TOLERANCE, smoothness_margins


def _values(**kw):
    pr = classification_problem(n=20, d=3, seed=2)
    kw.setdefault("records", 20)
    paths = run_pgd_paths(pr, PgdConfig(inits=2, init_scale=0.2, **kw))
    return smoothness_margins(paths, float_rows(pr))


def test_small_constant_steps_satisfy_the_condition() -> None:
    v = _values(ps=(1.5, 2.0), lrs=(1e-3,), steps=200, loss="exponential")
    assert np.isfinite(v).all() and (v >= -TOLERANCE).all()


def test_p2_value_is_one_minus_eta_times_the_hessian_norm() -> None:
    pr = classification_problem(n=20, d=3, seed=2)
    paths = run_pgd_paths(
        pr,
        PgdConfig(
            ps=(2.0,), lrs=(0.5,), inits=1, init_scale=0.2, steps=10, records=5, loss="exponential"
        ),
    )
    v = smoothness_margins(paths, float_rows(pr), samples=1)
    A = float_rows(pr)
    w = paths.W[0, -1]
    H = A.T @ (np.exp(-(A @ w))[:, None] * A) / A.shape[0]
    assert np.isclose(v[0, -1], 1 - 0.5 * np.linalg.eigvalsh(H)[-1], rtol=1e-10)


def test_normalized_steps_violate_it_as_the_norm_grows() -> None:
    # the effective step lr / ||grad L||_q grows like e^(margin) while psi's curvature at p < 2 shrinks
    v = _values(ps=(1.5,), lrs=(1.0,), steps=300, normalize=True)
    assert (v < -1.0).any()
