"""certify.interior: the primal-dual interior point for p >= 2 (float only; never evidence)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given, settings, strategies as st
from hypothesis.extra.numpy import arrays

from certify.interior import active_newton, interior_bytes, interior_point, primal_round
from certify.synth import planted_problem
from certify.warmstart import kkt_residual, warm_start

PS = [2.0, 2.5, 3.0, 4.0]


def _q(p: float) -> float:
    return p / (p - 1.0)


def _solve(A: np.ndarray, p: float, w0=None):
    ip = interior_point(A, p, np.zeros(A.shape[1]) if w0 is None else w0)
    lam, w = active_newton(A, p, ip.w, ip.lam)
    return ip, lam, w


@settings(deadline=None, max_examples=40)
@given(
    a=arrays(np.float64, 5, elements=st.floats(-10.0, 10.0)).filter(
        lambda a: np.abs(a).max() >= 0.1
    ),
    p=st.sampled_from(PS),
)
@example(a=np.array([1.0, 0.0, 0.0, 0.0, 0.0]), p=3.0)
@example(a=np.array([3.0, -4.0, 0.0, 1e-3, 0.5]), p=4.0)
def test_one_row_closed_form(a, p):
    """One constraint ``a w >= 1``: OPT = 1 / ||a||_q, lam = ||a||_q^(-q / (q - 1))."""
    q = _q(p)
    _, lam, w = _solve(a[None, :], p)
    nq = float(np.sum(np.abs(a) ** q) ** (1.0 / q))
    assert float(np.sum(np.abs(w) ** p) ** (1.0 / p)) == pytest.approx(1.0 / nq, rel=1e-8)
    assert float(lam[0]) == pytest.approx(nq ** (-q / (q - 1.0)), rel=1e-7)
    assert float(a @ w) >= 1.0 - 1e-9


@pytest.mark.parametrize("p", [2.0, 3.0, 4.0])
def test_agrees_with_the_dense_warm_start(p):
    cs = planted_problem(n=30, T=8, d=6, seed=1).attention_constraints()
    A = cs.rows()
    A = A / float(np.median(np.linalg.norm(A, axis=1)))
    ip, lam, w = _solve(A, p)
    dense = warm_start(A, p)
    assert dense.kkt_residual < 1e-10
    assert kkt_residual(lam, A, _q(p)) < 1e-10
    assert np.allclose(w, dense.w, atol=1e-8 * np.abs(dense.w).max())
    assert np.allclose(lam, dense.lam, atol=1e-7 * dense.lam.max())
    assert np.array_equal(lam > 0, dense.lam > 1e-9 * dense.lam.max())  # inactive rows: exactly 0
    assert np.all(ip.lam[dense.lam == 0] == 0)


def test_more_rows_than_variables_and_duplicates():
    """Every row twice and N >> m: the normal matrix is m x m, so nothing is singular; a pair's
    multipliers sum to the multiplier of the single row."""
    cs = planted_problem(n=40, T=10, d=4, seed=0).attention_constraints()
    A = cs.rows()
    A = A / float(np.median(np.linalg.norm(A, axis=1)))
    _, lam1, w1 = _solve(A, 3.0)
    _, lam2, w2 = _solve(np.vstack([A, A]), 3.0)
    assert A.shape[0] > 10 * A.shape[1]
    assert np.allclose(w1, w2, atol=1e-8 * np.abs(w1).max())
    N = A.shape[0]
    assert np.allclose(lam2[:N] + lam2[N:], lam1, atol=1e-6 * lam1.max())


def test_active_newton_converges_from_a_perturbed_optimum():
    cs = planted_problem(n=30, T=8, d=6, seed=1).attention_constraints()
    A = cs.rows()
    A = A / float(np.median(np.linalg.norm(A, axis=1)))
    dense = warm_start(A, 3.0)
    lam, w = active_newton(A, 3.0, dense.w * (1.0 - 1e-3), dense.lam * (1.0 + 1e-3))
    assert kkt_residual(lam, A, 1.5) < 1e-12
    assert np.allclose(w, dense.w, atol=1e-10 * np.abs(dense.w).max())
    assert np.array_equal(lam > 0, dense.lam > 0)


@pytest.mark.parametrize("extra", range(6))
def test_a_wrong_active_row_leaves(extra):
    """An inactive row given a multiplier is first held at equality; the ratio test stops the step
    where its multiplier reaches 0, the row leaves, and Newton on the right rows converges."""
    cs = planted_problem(n=30, T=8, d=6, seed=1).attention_constraints()
    A = cs.rows()
    A = A / float(np.median(np.linalg.norm(A, axis=1)))
    dense = warm_start(A, 3.0)
    off = int(np.flatnonzero(dense.lam == 0)[extra * 7])
    lam0 = dense.lam.copy()
    lam0[off] = 1e-3 * dense.lam.max()
    lam, w = active_newton(A, 3.0, dense.w, lam0)
    assert lam[off] == 0.0
    assert kkt_residual(lam, A, 1.5) < 1e-11
    assert np.allclose(w, dense.w, atol=1e-10 * np.abs(dense.w).max())


@pytest.mark.parametrize(
    ("p", "message"), [(1.5, r"p >= 2, got 1\.5"), (float("nan"), r"p >= 2, got nan")]
)
def test_refuses_p_below_2(p, message):
    with pytest.raises(ValueError, match=message):
        interior_point(np.ones((1, 2)), p, np.zeros(2))


def test_infeasible_rows_do_not_converge():
    """``w_1 >= 1`` and ``-w_1 >= 1``: no point; the result is flagged, not passed off."""
    A = np.array([[1.0, 0.0], [-1.0, 0.0]])
    ip = interior_point(A, 3.0, np.zeros(2), max_iter=30)
    assert not ip.converged


def test_memory_estimate_grows_with_rows_and_m():
    assert interior_bytes(200, 64) > interior_bytes(100, 64) > interior_bytes(100, 32) > 0
    assert interior_bytes(8192, 4096) < 1 << 30  # a 2m working set at m = 4,096: under 1 GiB


@pytest.mark.parametrize("p", [2.5, 3.0, 4.0])
def test_a_round_reaches_the_dual_tolerance(p):
    """`primal_round`: the interior point, then Newton on the rows with a multiplier, to the KKT
    tolerance the working set asks of a round (from the stage-1-like start of all zeros)."""
    cs = planted_problem(n=40, T=10, d=5, seed=2).attention_constraints()
    A = cs.rows()
    A = A / float(np.median(np.linalg.norm(A, axis=1)))
    lam, res = primal_round(A, p, np.zeros(A.shape[0]), tol=1e-12)
    dense = warm_start(A, p)
    assert res < 1e-11 and res == kkt_residual(lam, A, _q(p))
    assert np.allclose(lam, dense.lam, atol=1e-7 * dense.lam.max())
