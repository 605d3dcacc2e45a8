"""Tests for certify.lagged: Newton directions from an earlier step's factor equal fresh solves."""

from __future__ import annotations

import numpy as np

from certify.lagged import gram_updated_solve, lagged_solve, newton_direction
from certify.workingset import gram_hessian


def test_lagged_conjugate_gradients_solve_the_new_weights():
    rng = np.random.default_rng(0)
    A, q = rng.standard_normal((300, 400)), 1.6
    F = np.ones(300, dtype=bool)
    F[:20] = False
    wt, rhs, lag = np.abs(rng.standard_normal(400)) ** (q - 2), rng.standard_normal(280), {}
    newton_direction(A, F, wt, q, rhs, None, lag=lag)  # factors and keeps H
    wt2 = wt * (1 + 0.05 * rng.standard_normal(400))
    fresh = newton_direction(A, F, wt2, q, rhs, None)
    lagged = lagged_solve(A, F, wt2, q, rhs, lag)
    assert lagged is not None and np.allclose(
        lagged, fresh, rtol=1e-9, atol=1e-9 * abs(fresh).max()
    )


def test_gram_update_solves_a_changed_free_set_exactly_as_a_fresh_factor():
    rng = np.random.default_rng(1)
    A = rng.standard_normal((300, 500))
    hess, lag = gram_hessian(A), {}
    F = np.ones(300, dtype=bool)
    F[:30] = False
    newton_direction(A, F, np.ones(500), 2.0, rng.standard_normal(270), hess, lag=lag)
    F2 = F.copy()
    F2[50:60], F2[:5] = False, True  # 10 rows leave, 5 enter
    rhs = rng.standard_normal(int(F2.sum()))
    ref = np.linalg.solve((A @ A.T)[np.ix_(F2, F2)], rhs)
    got = gram_updated_solve(hess.gram, F2, rhs, lag)
    assert got is not None and np.allclose(got, ref, rtol=1e-9, atol=1e-9 * abs(ref).max())
    assert np.allclose(newton_direction(A, F2, np.ones(500), 2.0, rhs, hess, lag=lag), ref)
