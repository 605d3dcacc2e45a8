"""Tests for certify.splitexact: the float64-pair rows are the exact rows of attention_constraints."""

from __future__ import annotations

import numpy as np
import pytest

from certify import AttentionProblem
from certify.exact import dyadic
from certify.ops import ExactOps
from certify.splitexact import SplitDyadic, attention_system, dyadic_exponent, nonzero, take
from certify.structured import row_factors
from certify.synth import planted_problem


@pytest.mark.parametrize(
    "a",
    [
        np.array([0.0, 0.0]),
        np.array([1.0, -3.0, 4.0]),
        np.array([0.1, -2.5e-7, 3.0, 0.0]),
        np.array([5e-324, 1.0, -(2.0**-1060)]),
        np.array([2.0**600, 3.0, -(2.0**-30)]),
        np.random.default_rng(0).standard_normal((4, 5, 3)),
    ],
)
def test_dyadic_exponent_is_dyadics(a):
    exp, fits = dyadic_exponent(a)
    D = dyadic(a)
    assert exp == D.exp and fits == (D.ints.dtype != object)


def _problem(scale_tiny: bool) -> AttentionProblem:
    rng = np.random.default_rng(5)
    X = rng.standard_normal((5, 4, 3))
    X[1, 2] = X[1, 0]  # a zero left factor (duplicated token)
    X[3, 1, 2] = 1e-9  # integers beyond 62 bits
    if scale_tiny:
        X[2, 1, 0] = 3e-310  # subnormal entries: their rows are rounded through the integers
        X[2, 0, 0] = X[2, 3, 0] = 0.0  # alpha_2 = 3: l = x_23 - x_21 has a subnormal entry
    z = rng.standard_normal((5, 3))
    return AttentionProblem(X, np.ones(5), z, rng.standard_normal(3), alpha=[0, 1, 3, 0, 2])


@pytest.mark.parametrize("tiny", [False, True])
def test_split_rows_equal_the_exact_rows(tiny):
    pr = _problem(tiny)
    ref = pr.attention_constraints()
    cs = attention_system(pr)
    assert isinstance(cs.left, SplitDyadic) and ref.left.ints.dtype == object
    assert len(cs.left.tiny_rows()) == (1 if tiny else 0)
    assert cs.index == ref.index and cs.d == ref.d and cs.kind == ref.kind
    assert cs.left.exp == ref.left.exp and cs.right.exp == ref.right.exp
    assert cs.left.ints.tolist() == ref.left.ints.tolist()
    assert take(cs.left, [4, 1]).tolist() == ref.left.ints[[4, 1]].tolist()
    assert np.array_equal(nonzero(cs.left), ref.left.ints != 0)
    assert np.array_equal(cs.right.ints, ref.right.ints)
    a, b = row_factors(cs), row_factors(ref)
    assert np.array_equal(a.left, b.left) and np.array_equal(a.right, b.right)
    # the exact products and the row identities
    ops, opr = ExactOps(cs), ExactOps(ref)
    rng = np.random.default_rng(1)
    w = [int(k) for k in rng.integers(-(2**60), 2**60, size=cs.m)]
    lam = [int(k) for k in rng.integers(0, 2**62, size=cs.N)]
    assert ops.matvec(w) == opr.matvec(w) and ops.rmatvec(lam) == opr.rmatvec(lam)
    assert ops.representatives().tolist() == opr.representatives().tolist()
    assert np.array_equal(ops.structural_zero_columns(), opr.structural_zero_columns())
    sub, sur = ops.subset([3, 0, 7]), opr.subset([3, 0, 7])
    ga, gb = sub.gram_factors(), sur.gram_factors()
    assert [g.tolist() for g in ga] == [g.tolist() for g in gb]
    assert sub.L.tolist() == sur.L.tolist()


def test_int64_data_keeps_the_int64_system():
    X = np.arange(24, dtype=np.float64).reshape(2, 4, 3)
    pr = AttentionProblem(X, np.ones(2), np.ones((2, 3)), np.ones(3), alpha=[0, 1])
    cs = attention_system(pr)
    assert not isinstance(cs.left, SplitDyadic) and cs.left.ints.dtype == np.int64


def test_certify_svm_claims_are_those_of_the_object_rows(monkeypatch):
    from certify import certify_svm
    from certify.check import check_certificate
    import certify.feasible as feasible

    pr = planted_problem(n=20, T=6, d=4, seed=0)
    split = certify_svm(pr, "7/4", digits=20)
    monkeypatch.setattr(feasible, "attention_system", lambda p, a: p.attention_constraints(a))
    plain = certify_svm(pr, "7/4", digits=20)
    assert split.status == plain.status and split.opt_lower == plain.opt_lower
    assert split.opt_upper == plain.opt_upper and split.support == plain.support
    assert check_certificate(pr, split).ok
