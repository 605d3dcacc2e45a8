"""certify.firststage: the dual ``min_{lam >= 0} ||A^T lam / sigma||_q^q / q - 1^T lam`` of
``min ||w||_p s.t. A w >= sigma`` (the warm start of docs/theory.md section 4.5), against closed
forms (one row; a dominated row; p = 2, a linear system), the KKT conditions, and the dense products
of the rows."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import example, given, settings, strategies as st
from hypothesis.extra.numpy import arrays

from certify import synthetic_problem
from certify.blas import single_thread_blas
from certify.firststage import (
    dual_gradient,
    dual_ratio,
    lbfgs_dual,
    nonneg_lbfgs,
    ones_start,
    phi,
    row_subset,
    screened_lbfgs,
)
from certify.structured import RowFactors, row_factors
from certify.synth import planted_problem

PS = [1.5, 2.0, 3.0]


@pytest.fixture(autouse=True, scope="module")
def _one_blas_thread():
    """As the solver runs them (`certify.blas`): a second BLAS thread spin-waits on small
    products (100x slower on a loaded 2-core machine)."""
    with single_thread_blas():
        yield


def _q(p: float) -> float:
    return p / (p - 1.0)


def _dense(rf: RowFactors) -> np.ndarray:
    return rf.rows(np.arange(rf.N))


#: attention rows: a feasible (planted) system, and one with variable lengths (slot layout)
_PLANTED = row_factors(planted_problem(n=8, T=5, d=3, seed=1).attention_constraints())
_SLOTS = row_factors(synthetic_problem(n=5, T=5, d=3, seed=4, min_T=2).attention_constraints("opt"))
_DECODER = row_factors(synthetic_problem(n=5, T=4, d=3, seed=2).decoder_constraints("opt"))


def _norm(a: np.ndarray, r: float) -> float:
    return float(np.sum(np.abs(a) ** r) ** (1.0 / r))


@settings(deadline=None, max_examples=60)
@given(
    u=arrays(
        np.float64, 6, elements=st.floats(-1e3, 1e3).filter(lambda x: x == 0 or abs(x) > 1e-99)
    ),
    q=st.sampled_from([_q(p) for p in PS]),
)
@example(u=np.array([0.0, -0.0, 1.0, -2.0, 0.5, 1e3]), q=1.5)
def test_phi_is_the_gradient_of_the_qth_power_over_q(u, q):
    v = phi(u, q)
    assert np.array_equal(np.sign(v), np.sign(u))
    assert np.allclose(u * v, np.abs(u) ** q, rtol=1e-13, atol=1e-300)
    if q == 2.0:
        assert np.array_equal(v, u)


@pytest.mark.parametrize("p", PS)
@pytest.mark.parametrize("N, b", [(1, 1.0), (7, 0.3), (40, 250.0)])
def test_ones_start_is_the_best_multiple_of_ones(N, b, p):
    """``f(c 1) = c^q b / q - c N`` is least where ``c^{q-1} b = N``."""
    q = _q(p)
    c = ones_start(N, b, q)
    assert c.shape == (N,) and np.all(c == c[0])
    assert math.isclose(c[0] ** (q - 1.0) * b, N, rel_tol=1e-12)


@pytest.mark.parametrize("b", [0.0, -1.0, math.inf, math.nan])
def test_ones_start_is_ones_without_a_positive_finite_b(b):
    assert np.array_equal(ones_start(3, b, 2.0), np.ones(3))


def test_nonneg_lbfgs_projects_onto_the_orthant():
    """``min ||x - c||^2 / 2`` over ``x >= 0`` is ``max(c, 0)``; ``args`` reach ``fg``."""
    c = np.array([1.5, -2.0, 0.0, 3.0, -1e-3])
    res = nonneg_lbfgs(
        lambda x, c: (0.5 * float(np.sum((x - c) ** 2)), x - c),
        np.ones(5),
        maxiter=50,
        tol=(1e-15, 1e-12),
        args=(c,),
    )
    assert res.x.min() >= 0.0 and np.allclose(res.x, np.maximum(c, 0.0), atol=1e-9)


def _check_one_row(rf: RowFactors, p: float, sigma: float, lam: np.ndarray) -> None:
    """One row a: ``lam = sigma^p ||a||_q^{-p}``, ``w = phi(a lam / sigma)`` has ``a^T w = sigma``
    and ``||w||_p = sigma / ||a||_q`` (OPT), and the dual ratio is 1."""
    q, a = _q(p), _dense(rf)[0]
    nq = _norm(a, q)
    assert lam.shape == (1,) and math.isclose(lam[0], sigma**p * nq**-p, rel_tol=1e-6)
    w = phi(rf.rmatvec(lam) / sigma, q)
    assert math.isclose(float(a @ w), sigma, rel_tol=1e-6)
    assert math.isclose(_norm(w, p), sigma / nq, rel_tol=1e-6)
    assert math.isclose(dual_ratio(rf, q, sigma, lam), 1.0, rel_tol=1e-6)
    assert abs(dual_gradient(rf, q, sigma, lam)[0]) < 1e-6


@settings(deadline=None, max_examples=40)
@given(
    a=arrays(np.float64, 4, elements=st.floats(-10.0, 10.0)).filter(
        lambda a: np.abs(a).max() >= 0.1
    ),
    p=st.sampled_from(PS),
    sigma=st.sampled_from([1.0, 0.25, 3.0]),
    start=st.sampled_from([None, 0.1, 5.0]),
)
@example(a=np.array([1.0, 0.0, 0.0, 0.0]), p=2.0, sigma=1.0, start=None)
@example(a=np.array([3.0, -4.0, 0.0, 0.0]), p=3.0, sigma=0.25, start=5.0)
def test_one_decoder_row_closed_form(a, p, sigma, start):
    """From the all-ones start (the optimum already for one row) and from other starts."""
    rf = RowFactors("decoder", 4, a[None, :])
    x0 = None if start is None else np.array([start])
    lam, _ = lbfgs_dual(rf, _q(p), sigma, 200, x0=x0)
    _check_one_row(rf, p, sigma, lam)


@pytest.mark.parametrize("p", PS)
@pytest.mark.parametrize("r", [0, 13, 31])
def test_one_attention_row_closed_form(p, r):
    rf = row_subset(_PLANTED, np.array([r]))
    lam, _ = lbfgs_dual(rf, _q(p), 0.5, 200, x0=np.array([2.0]))
    _check_one_row(rf, p, 0.5, lam)


@pytest.mark.parametrize("p", PS)
@pytest.mark.parametrize("sigma", [1.0, 0.5])
def test_a_dominated_row_gets_no_multiplier(p, sigma):
    """Rows ``e1`` and ``2 e1``: ``w = sigma e1``, ``lam = (sigma^p, 0)`` (row 2 has slack)."""
    rf = RowFactors("decoder", 3, np.array([[1.0, 0.0, 0.0], [2.0, 0.0, 0.0]]))
    lam, _ = lbfgs_dual(rf, _q(p), sigma, 200, x0=np.array([1.0, 1.0]))
    assert np.allclose(lam, [sigma**p, 0.0], rtol=1e-6, atol=1e-8)
    assert np.allclose(phi(rf.rmatvec(lam) / sigma, _q(p)), [sigma, 0.0, 0.0], rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("sigma", [1.0, 0.3])
def test_p2_is_a_linear_system(sigma):
    """q = 2 with every row active: ``A A^T lam = sigma^2 1``."""
    rng = np.random.default_rng(0)
    A = np.eye(3, 5) + 0.1 * rng.standard_normal((3, 5))
    lam_star = sigma**2 * np.linalg.solve(A @ A.T, np.ones(3))
    assert lam_star.min() > 0
    lam, _ = lbfgs_dual(RowFactors("decoder", 5, A), 2.0, sigma, 200)
    assert np.allclose(lam, lam_star, rtol=1e-6)


def _assert_kkt(rf: RowFactors, p: float, sigma: float, lam: np.ndarray, tol: float) -> None:
    q = _q(p)
    g = dual_gradient(rf, q, sigma, lam)  # slacks a_r^T w / sigma - 1
    assert lam.shape == (rf.N,) and lam.min() >= 0.0 and lam.any()
    assert g.min() > -tol  # primal feasible
    assert np.abs(lam * g).max() < tol * lam.max()  # complementary
    assert abs(dual_ratio(rf, q, sigma, lam) - 1.0) < tol


@pytest.mark.parametrize("p", PS)
@pytest.mark.parametrize("sigma", [1.0, 0.5])
def test_lbfgs_dual_meets_kkt_on_attention_rows(p, sigma):
    lam, _ = lbfgs_dual(_PLANTED, _q(p), sigma, 500)
    _assert_kkt(_PLANTED, p, sigma, lam, 1e-5)


def test_dual_ratio_edges():
    """0 along a Gordan direction (``A^T lam = 0``), NaN at ``lam = 0``, degree q - 1 in lam."""
    rf = RowFactors("decoder", 2, np.array([[1.0, 2.0], [-1.0, -2.0]]))
    assert dual_ratio(rf, 2.0, 1.0, np.ones(2)) == 0.0
    assert math.isnan(dual_ratio(rf, 2.0, 1.0, np.zeros(2)))
    sub, lam, q = row_subset(_PLANTED, np.array([0, 5, 9])), np.array([0.3, 0.7, 1.1]), 1.5
    r1, r2 = (dual_ratio(sub, q, 1.0, t * lam) for t in (1.0, 4.0))
    assert math.isclose(r2, 4.0 ** (q - 1.0) * r1, rel_tol=1e-12)


@settings(deadline=None, max_examples=40)
@given(
    which=st.sampled_from(["planted", "slots", "decoder"]),
    seed=st.integers(0, 2**32 - 1),
    p=st.sampled_from(PS),
    sigma=st.sampled_from([1.0, 0.5, 2.0]),
)
@example(which="slots", seed=0, p=3.0, sigma=0.5)
def test_dual_gradient_equals_the_dense_formula(which, seed, p, sigma):
    rf = {"planted": _PLANTED, "slots": _SLOTS, "decoder": _DECODER}[which]
    rng = np.random.default_rng(seed)
    lam = rng.random(rf.N) * (rng.random(rf.N) < 0.6)
    A, q = _dense(rf), _q(p)
    u = A.T @ lam / sigma
    dense = A @ (np.sign(u) * np.abs(u) ** (q - 1.0)) / sigma - 1.0
    assert np.allclose(dual_gradient(rf, q, sigma, lam), dense, rtol=1e-12, atol=1e-12)


@settings(deadline=None, max_examples=40)
@given(
    which=st.sampled_from(["planted", "slots"]),
    mask=st.lists(st.booleans(), min_size=32, max_size=32).filter(any),
    seed=st.integers(0, 2**32 - 1),
)
@example(which="slots", mask=[True] + [False] * 31, seed=0)
@example(which="planted", mask=[True] * 32, seed=1)
def test_row_subset_products_are_those_of_the_chosen_rows(which, mask, seed):
    rf = {"planted": _PLANTED, "slots": _SLOTS}[which]
    rows = np.flatnonzero(np.array(mask[: rf.N]))
    if not len(rows):
        rows = np.array([rf.N - 1])
    sub = row_subset(rf, rows)
    dense = rf.rows(rows)
    assert (sub.kind, sub.d, sub.N, sub.m) == (rf.kind, rf.d, len(rows), rf.m)
    assert np.array_equal(sub.rows(np.arange(sub.N)), dense)
    rng = np.random.default_rng(seed)
    w, lam = rng.standard_normal(rf.m), rng.random(len(rows))
    assert np.allclose(sub.matvec(w), dense @ w, rtol=1e-13, atol=1e-13)
    assert np.allclose(sub.rmatvec(lam), dense.T @ lam, rtol=1e-13, atol=1e-13)
    assert np.allclose(sub.row_norms(), np.linalg.norm(dense, axis=1), rtol=1e-14)


@pytest.mark.parametrize("p", PS)
def test_screened_lbfgs_holds_the_screened_rows_at_zero(p):
    """``factor m`` < N rows: the first ``first`` iterations over all rows, then the rest over
    the rows with a multiplier and the least-slack others (the others at 0); here it reaches the
    optimum."""
    rf, q, factor, first = _PLANTED, _q(p), 2, 5
    assert rf.N > factor * rf.m
    lam, _ = screened_lbfgs(rf, q, 1.0, 400, factor=factor, first=first)
    assert lam.shape == (rf.N,) and np.all(np.isfinite(lam)) and lam.min() >= 0.0
    lam1, _ = lbfgs_dual(rf, q, 1.0, first)  # the screen: as documented
    g, on = dual_gradient(rf, q, 1.0, lam1), lam1 > 0
    rest = np.flatnonzero(~on)
    extra = rest[np.argsort(g[rest], kind="stable")[: max(0, factor * rf.m - int(on.sum()))]]
    kept = np.zeros(rf.N, dtype=bool)
    kept[np.flatnonzero(on)] = kept[extra] = True
    assert not lam[~kept].any()
    _assert_kkt(rf, p, 1.0, lam, 1e-5)


def test_screened_lbfgs_returns_the_first_stage_of_an_infeasible_system():
    """Rows ``l z^T`` and ``-l z^T`` (Gordan: ``A^T (1, 1) = 0``): the dual diverges, the first
    stage is returned without screening, and its ratio says so."""
    left = np.array([[1.0, 2.0], [-1.0, -2.0]])
    rf = RowFactors("attention", 2, left, np.array([[0.5, 1.0]]), np.zeros(2, np.int64), left[None])
    lam, _ = screened_lbfgs(rf, 2.0, 1.0, 60, factor=1, first=20)
    assert lam.shape == (2,)
    assert not dual_ratio(rf, 2.0, 1.0, lam) > 1e-6
