"""Tests for certify.warmstart (float only; never evidence)."""

from __future__ import annotations

import numpy as np
import pytest

from certify import synthetic_problem
from certify.warmstart import clarabel_start, dual_lbfgs, projected_newton, warm_start


@pytest.fixture(scope="module")
def A():
    return synthetic_problem().attention_constraints("opt").rows()


@pytest.mark.parametrize("p", [1.1, 1.5, 2.0, 3.0])
def test_warm_start_satisfies_kkt_in_floats(A, p):
    ws = warm_start(A, p)
    assert ws.kkt_residual < 1e-10
    assert np.all(ws.lam >= 0)
    assert (A @ ws.w).min() > 1 - 1e-9
    q = p / (p - 1)
    # psi-form KKT: w = phi(A^T lam) and 1^T lam = OPT^p = ||w||_p^p
    assert np.isclose(ws.lam.sum(), np.sum(np.abs(ws.w) ** p), rtol=1e-9)
    assert np.allclose(ws.w, np.sign(A.T @ ws.lam) * np.abs(A.T @ ws.lam) ** (q - 1))


def test_lbfgs_and_clarabel_agree_with_newton(A):
    p, q = 1.75, 1.75 / 0.75
    lam_n, res = projected_newton(A, q, np.ones(A.shape[0]))
    lam_l, res_l = projected_newton(A, q, dual_lbfgs(A, q))
    assert res < 1e-11 and res_l < 1e-11
    assert np.allclose(lam_n, lam_l, atol=1e-9 * lam_n.max())
    lam_c = clarabel_start(A, p)
    assert lam_c is not None
    assert np.allclose(lam_c, lam_n, atol=1e-4 * lam_n.max())


def test_single_constraint_closed_form():
    a = np.array([[3.0, -4.0]])
    ws = warm_start(a, 2.0)
    assert np.allclose(ws.w, [3 / 25, -4 / 25])


def test_newton_direction_matches_the_dense_solve_and_falls_back_to_lu():
    from certify.warmstart import newton_direction

    rng = np.random.default_rng(3)
    A = rng.standard_normal((12, 20))
    F = rng.random(12) < 0.7
    wt, rhs = rng.random(20) + 0.1, rng.standard_normal(int(F.sum()))
    H = 0.5 * (A[F] * wt) @ A[F].T  # (q-1) A_F diag(wt) A_F^T, q = 1.5
    H += 1e-15 * np.trace(H) / H.shape[0] * np.eye(H.shape[0])
    assert np.allclose(
        newton_direction(A, F, wt, 1.5, rhs, None), np.linalg.solve(H, rhs), rtol=1e-8
    )
    S = np.diag(
        np.r_[1.0, -2.0, 3.0]
    )  # symmetric, not positive definite: Cholesky fails, LU solves

    def indefinite(D, mask):
        return S.copy()

    assert np.allclose(newton_direction(A, F, wt, 2.0, np.ones(3), indefinite), [1.0, -0.5, 1 / 3])
