"""certify.workingset: the structured working-set warm start (float only; never evidence)."""

from __future__ import annotations

import numpy as np
import pytest

from certify import synthetic_problem
from certify.structured import row_factors
from certify.synth import planted_problem
from certify.warmstart import projected_newton, warm_start
from certify.workingset import working_set_bytes, working_set_start


@pytest.mark.parametrize("p", [1.1, 1.75, 2.0, 3.0])
def test_agrees_with_the_dense_warm_start(p):
    pr = planted_problem(n=30, T=8, d=6, seed=1)
    cs = pr.attention_constraints()
    ws, rep = working_set_start(row_factors(cs), p)
    dense = warm_start(cs.rows(), p)
    assert ws.kkt_residual < 1e-10 and dense.kkt_residual < 1e-10
    assert np.allclose(ws.lam, dense.lam, atol=1e-7 * dense.lam.max())
    assert np.allclose(ws.w, dense.w, atol=1e-7 * np.abs(dense.w).max())
    assert rep.rows <= cs.N and rep.rounds >= 1


def test_few_rows_enter_the_working_set():
    cs = planted_problem(n=60, T=16, d=8, seed=2).attention_constraints()
    ws, rep = working_set_start(row_factors(cs), 2.0)
    assert ws.kkt_residual < 1e-10
    assert rep.rows < cs.N / 2  # most of the 900 rows never enter a dense solve
    A = cs.rows()
    assert (A @ ws.w).min() > 1 - 1e-9


def test_infeasible_system_is_reported_not_solved():
    cs = synthetic_problem(n=40, T=8, d=4, seed=0).attention_constraints(
        "opt"
    )  # 280 rows, 16 variables
    ws, _ = working_set_start(row_factors(cs), 2.0)
    assert not ws.kkt_residual < 1e-6


def test_row_cap_is_honored():
    cs = planted_problem(n=60, T=16, d=8, seed=2).attention_constraints()
    ws, rep = working_set_start(row_factors(cs), 2.0, max_rows=5)
    assert rep.rows <= 5 and not ws.kkt_residual < 1e-6  # the support has more than 5 rows
    assert working_set_bytes(100, 64) > working_set_bytes(10, 64)


def test_smoothed_newton_reaches_a_near_cusp_optimum():
    # p = 3 (q = 1.5) from the L-BFGS-B start: the optimum of the random (100, 32, 32) instance has an
    # entry of u = A^T lam near 3e-9, where plain projected Newton crawls; here a small twin
    from certify.warmstart import dual_lbfgs, smoothed_newton

    A = planted_problem(n=30, T=8, d=6, seed=4).attention_constraints().rows()
    As = A / np.median(np.linalg.norm(A, axis=1))
    lam, res = smoothed_newton(As, 1.5, dual_lbfgs(As, 1.5, maxiter=200))
    assert res < 1e-11
    lam2, res2 = projected_newton(As, 1.5, lam)
    assert res2 < 1e-11 and np.allclose(lam, lam2, atol=1e-9 * lam.max())


def test_converging_plain_newton_finishes_without_smoothing(monkeypatch):
    # seed 0: plain Newton from L-BFGS-B converges fast; with the first stage capped at 4 steps the
    # result is still the plain-Newton optimum and no smoothed (eps > 0) stage ran. How many plain
    # stages it takes depends on BLAS rounding (one with numpy 2.4 / scipy 1.17, two before), so only
    # the result, its residual bound and the absence of smoothing are asserted.
    import certify.warmstart as wsm

    A = planted_problem(n=30, T=8, d=6, seed=0).attention_constraints().rows()
    As = A / np.median(np.linalg.norm(A, axis=1))
    lam0 = wsm.dual_lbfgs(As, 1.5, maxiter=200)
    calls = []
    plain = wsm.projected_newton

    def counted(*args, **kw):
        calls.append(kw.get("eps", 0.0))
        return plain(*args, **kw)

    monkeypatch.setattr(wsm, "projected_newton", counted)
    lam, res = wsm.smoothed_newton(As, 1.5, lam0, tol=1e-13, max_iter=4)
    assert res < 1e-13 and calls and all(eps == 0.0 for eps in calls)
    ref, _ = plain(As, 1.5, lam0, tol=1e-13)
    assert np.allclose(lam, ref, atol=1e-9 * ref.max())


def test_gram_hessian_is_the_weighted_row_product():
    from certify.workingset import gram_hessian

    rng = np.random.default_rng(0)
    A = rng.standard_normal((30, 12))
    hess = gram_hessian(A)
    F = rng.random(30) < 0.6
    assert np.allclose(hess(np.ones(12), F), A[F] @ A[F].T, atol=1e-12)
    wt = np.ones(12)
    wt[3] = 0.0  # an entry of u exactly 0: the weights are no longer all 1
    assert np.allclose(hess(wt, F), (A[F] * wt) @ A[F].T, atol=1e-12)


@pytest.mark.parametrize("p", [1.75, 2.0, 3.0])
def test_working_sets_stay_near_m_rows_from_a_poor_first_stage(monkeypatch, p):
    # constraint-heavy (N = 1,200 rows, m = 36): 3 L-BFGS-B iterations leave nearly every row with a
    # multiplier; the first working set then once held up to 3m rows, and rows far from active stayed,
    # so |F| > m made the Newton matrix singular (at (10^4,32,64): no convergence on 12,288 rows)
    import certify.workingset as wsm

    cs = planted_problem(n=100, T=13, d=6, seed=3).attention_constraints()
    m = cs.m
    sizes = []
    plain = wsm.smoothed_newton

    def counted(A, *args, **kw):
        sizes.append(A.shape[0])
        return plain(A, *args, **kw)

    def counted_ip(A, *args, **kw):
        sizes.append(A.shape[0])
        return plain_ip(A, *args, **kw)

    plain_ip = wsm.primal_round
    monkeypatch.setattr(wsm, "smoothed_newton", counted)
    monkeypatch.setattr(wsm, "primal_round", counted_ip)
    ws, rep = working_set_start(row_factors(cs), p, lbfgs_iter=3)
    assert ws.kkt_residual < 1e-10 and rep.rounds == len(sizes) >= 2
    if p > 2:  # q < 2: the interior point's normal matrix is m x m, W may hold up to 4m rows
        assert max(sizes) <= 4 * m and sizes[0] <= 2 * m
    else:
        assert max(sizes) <= m + m // 8 + 64 and sizes[0] <= m + m // 8
    dense = warm_start(cs.rows(), p)
    assert np.allclose(ws.w, dense.w, atol=1e-7 * np.abs(dense.w).max())


def test_newton_on_more_rows_than_rank_reaches_kkt():
    """More free rows than rank (columns dependent, as in MiniLM text features: rank 382 of 384):
    without the Caratheodory null-space steps Newton crawls (KKT 30-75 after 200 steps)."""
    from certify.blas import single_thread_blas
    from certify.warmstart import null_steps

    rng = np.random.default_rng(0)
    B = rng.standard_normal((400, 30))
    X = np.hstack([B, B[:, :2] @ rng.standard_normal((2, 2))])  # 32 columns of rank 30
    A = np.sign(X @ rng.standard_normal(32))[:, None] * X
    A /= np.linalg.norm(A, axis=1, keepdims=True)
    with single_thread_blas():
        lam, res = projected_newton(A, 2.0, np.ones(400), tol=1e-12, dependent=True)
        assert res < 1e-10
        assert np.linalg.matrix_rank(A[lam > 0]) == int(np.sum(lam > 0))  # independent support
        w = A.T @ lam
        assert (A @ w).min() > 1 - 1e-9
        # the steps keep A^T lam and leave at most rank rows with a multiplier
        lam0 = np.ones(400)
        g = A @ (A.T @ lam0) - 1.0
        lam1 = null_steps(A, lam0 > 0, lam0, g)
        assert np.allclose(A.T @ lam1, A.T @ lam0, atol=1e-8 * np.abs(A.T @ lam0).max())
        assert np.all(lam1 >= 0) and int(np.sum(lam1 > 0)) <= 30


@pytest.mark.parametrize("p", [1.75, 2.0, 3.0])
def test_screened_first_stage_reaches_the_same_optimum(monkeypatch, p):
    """Stage 1 over a screened subset of the rows (many attention rows, many iterations) gives the
    optimum of the full system: the rounds check every row."""
    import certify.workingset as wsm
    from certify.firststage import row_subset as _subset

    cs = planted_problem(n=60, T=16, d=4, seed=2).attention_constraints()
    rf = row_factors(cs)
    rows = np.sort(np.random.default_rng(0).choice(rf.N, size=300, replace=False))
    sub, lam = _subset(rf, rows), np.random.default_rng(1).random(300)
    full = np.zeros(rf.N)
    full[rows] = lam
    w = np.random.default_rng(2).standard_normal(rf.m)
    assert np.allclose(sub.rmatvec(lam), rf.rmatvec(full))
    assert np.allclose(sub.matvec(w), rf.matvec(w)[rows])
    plain, _ = working_set_start(rf, p)
    monkeypatch.setattr(wsm, "SCREEN_FACTOR", 2)
    monkeypatch.setattr(wsm, "SCREEN_ITER", 20)
    screened, _ = working_set_start(rf, p, lbfgs_iter=300)
    assert plain.kkt_residual < 1e-10 and screened.kkt_residual < 1e-10
    assert np.allclose(screened.w, plain.w, atol=1e-7 * np.abs(plain.w).max())


@pytest.mark.parametrize("p", [1.1, 1.75, 3.0])
def test_infeasible_attention_rows_diverge_through_the_p2_dual(p):
    """Many random attention rows (N = 4,500 > 8m) at p != 2: stage 1's dual stays far from an
    optimum, the p = 2 dual over all rows diverges, and the solve proves infeasibility (checked)
    instead of running working-set rounds on an infeasible system."""
    from certify import certify_svm, check_certificate, synthetic_problem
    from certify.certificate import CertStatus

    pr = synthetic_problem(n=300, T=16, d=4, seed=1)
    ws, rep = working_set_start(row_factors(pr.attention_constraints("opt")), p)
    assert rep.diverged and rep.rounds == 0 and "p = 2 dual" in ws.method
    c = certify_svm(pr, str(p), path="working-set")
    assert c.status is CertStatus.INFEASIBLE and check_certificate(pr, c).ok
