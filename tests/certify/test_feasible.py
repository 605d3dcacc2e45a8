"""Tests for certify.feasible: proven verdicts (exact point or exact Gordan vector), never wrong."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from certify import AttentionProblem, feasibility, synthetic_problem
from certify.feasible import constraint_system
from certify.errors import MdcertError


def _verify_gordan(problem, svm, res):
    Z, _ = constraint_system(
        problem, svm, None if problem.alpha is not None else "opt"
    ).exact_rows()
    g = res.gordan_exact.fractions()
    assert all(x >= 0 for x in g) and sum(g) == 1
    assert all(v == 0 for v in Z.T.dot(np.array(g, dtype=object)))


def _verify_point(problem, svm, res):
    Z, _ = constraint_system(
        problem, svm, None if problem.alpha is not None else "opt"
    ).exact_rows()
    w = np.array(res.point_exact.fractions(), dtype=object)
    assert min(Z.dot(w)) > 0


def test_synthetic_attention_is_feasible():
    pr = synthetic_problem()
    res = feasibility(pr, alpha="opt")
    assert res.feasible is True
    _verify_point(pr, "attention", res)
    assert len(res.index) == 42


def test_decoder_opposite_examples_infeasible():
    # y_1 x_1 = -(y_2 x_2): rows a and -a, so lam = (1/2, 1/2) is a Gordan certificate
    X = np.array([[[1.0, 0.5], [0.0, 0.0]], [[-1.0, -0.5], [0.0, 0.0]]])
    pr = AttentionProblem(
        X, np.array([1.0, 1.0]), np.ones((2, 2)), np.array([1.0, 0.0]), alpha=[0, 0]
    )
    res = feasibility(pr, svm="decoder")
    assert res.feasible is False
    assert res.gordan_exact.fractions() == [Fraction(1, 2), Fraction(1, 2)]
    _verify_gordan(pr, "decoder", res)


def test_duplicated_token_gives_zero_row():
    pr = synthetic_problem(n=2, T=3, d=3, seed=1)
    X = pr.X.copy()
    X[0, 1] = X[0, 0]
    pr2 = AttentionProblem(X, pr.y, pr.z, pr.v, alpha=[0, 0])
    res = feasibility(pr2)
    assert res.feasible is False
    _verify_gordan(pr2, "attention", res)


def test_three_rows_infeasible_only_exactly():
    # a3 = -(a1 + a2) exactly (dyadic data): infeasible; the LP must find the exact combination
    rng = np.random.default_rng(3)
    a1, a2 = rng.standard_normal(4), rng.standard_normal(4)
    a1 = np.round(a1 * 2**20) / 2**20
    a2 = np.round(a2 * 2**20) / 2**20
    X = np.zeros((3, 2, 4))
    X[0, 0], X[1, 0], X[2, 0] = a1, a2, -(a1 + a2)
    pr = AttentionProblem(X, np.ones(3), np.ones((3, 4)), np.ones(4), alpha=[0, 0, 0])
    res = feasibility(pr, svm="decoder")
    assert res.feasible is False
    _verify_gordan(pr, "decoder", res)


def test_float_rounded_combination_is_not_misreported():
    # a3 = fl(-(a1 + a2)) with inexact float addition: the exact rows need not be dependent.
    # Whatever the verdict, it must be proven (checked exactly here) or None.
    rng = np.random.default_rng(7)
    a1, a2 = rng.standard_normal(3), rng.standard_normal(3) * 1e-9
    X = np.zeros((3, 2, 3))
    X[0, 0], X[1, 0], X[2, 0] = a1, a2, -(a1 + a2)
    pr = AttentionProblem(X, np.ones(3), np.ones((3, 3)), np.ones(3), alpha=[0, 0, 0])
    exact_sum = [
        Fraction(float(x)) + Fraction(float(y)) + Fraction(float(z))
        for x, y, z in zip(a1, a2, -(a1 + a2))
    ]
    res = feasibility(pr, svm="decoder")
    assert any(s != 0 for s in exact_sum)  # the exact rows are independent: feasible
    assert res.feasible is True  # proven by an exact rational solve (full row rank), not by floats
    _verify_point(pr, "decoder", res)


def test_bad_svm_name():
    with pytest.raises(MdcertError, match="unknown svm"):
        feasibility(synthetic_problem(), svm="mlp")


@pytest.mark.skipif(
    __import__("shutil").which("esolver") is None, reason="qsopt-ex (esolver) not installed"
)
def test_exact_lp_escalation_with_esolver():
    from certify.feasible import _esolver_gordan
    from certify.ops import ExactOps

    X = np.zeros((3, 2, 2))
    X[0, 0], X[1, 0], X[2, 0] = [1.0, 0.0], [0.0, 1.0], [-0.5, -0.25]
    pr = AttentionProblem(X, np.ones(3), np.ones((3, 2)), np.ones(2), alpha=[0, 0, 0])
    g = _esolver_gordan(ExactOps(pr.decoder_constraints()))
    assert g is not None and g.fractions() == [Fraction(2, 7), Fraction(1, 7), Fraction(4, 7)]
    # a feasible system has no Gordan vector: nothing is claimed
    assert (
        _esolver_gordan(ExactOps(synthetic_problem(n=2, T=3, d=3).decoder_constraints("opt")))
        is None
    )


def test_esolver_missing_degrades_to_not_proven(monkeypatch):
    import certify.feasible as feas

    monkeypatch.setattr(feas.shutil, "which", lambda name: None)
    monkeypatch.setattr(feas, "_gordan_from_support", lambda *a, **k: None)
    X = np.array([[[1.0, 0.5], [0.0, 0.0]], [[-1.0, -0.5], [0.0, 0.0]]])
    pr = AttentionProblem(
        X, np.array([1.0, 1.0]), np.ones((2, 2)), np.array([1.0, 0.0]), alpha=[0, 0]
    )
    res = feasibility(pr, svm="decoder")
    assert res.feasible is None and "not proven" in res.method


# ---------------------------------------------------------------- adversarial review (round 2)
@pytest.mark.parametrize("sx, sz", [(1e-150, 1e-150), (1e150, 1e150), (1e-300, 1e300), (1.0, 1.0)])
@pytest.mark.parametrize("svm", ["attention", "decoder"])
def test_extreme_scales_give_a_proven_verdict(sx, sz, svm):
    """Finding: the float LP was built from ``cs.rows()`` at the data's own scale, so 1e-150 data
    underflowed to zero rows and 1e150 overflowed (ValueError / OverflowError tracebacks). Rows are
    now scaled per row by powers of two; the verdict is still proven exactly on the given data."""
    rng = np.random.default_rng(1)
    pr = AttentionProblem(
        rng.standard_normal((2, 3, 2)) * sx,
        np.ones(2),
        rng.standard_normal((2, 2)) * sz,
        np.ones(2),
        alpha=[0, 0],
    )
    res = feasibility(pr, svm=svm)
    assert res.feasible is True
    Z, _ = constraint_system(pr, svm, [0, 0]).exact_rows()
    w = np.array([int(k) for k in res.point_exact.ints], dtype=object)
    assert min(Z.dot(w)) > 0


def test_subnormal_tokens_feasible_and_infeasible():
    X = np.array([[[5e-324, 0.0], [0.0, 0.0], [0.0, 5e-324]]])
    pr = AttentionProblem(X, np.ones(1), np.array([[1.0, 1.0]]), np.ones(2), alpha=[0])
    assert feasibility(pr).feasible is True
    X2 = np.array([[[5e-324, 0.0], [1e-323, 0.0], [0.0, 0.0]]])  # rows l and -l: infeasible
    pr2 = AttentionProblem(X2, np.ones(1), np.array([[1.0, 1.0]]), np.ones(2), alpha=[0])
    res = feasibility(pr2)
    assert res.feasible is False
    _verify_gordan(pr2, "attention", res)
