"""Tests for certify.ops: structured exact products equal the dense exact integer products."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from certify import synthetic_problem
from certify.ops import ExactOps, int_vector_to_float, ldexp_int


@pytest.mark.parametrize("svm", ["attention", "decoder"])
def test_products_match_dense_exact_rows(svm):
    pr = synthetic_problem(n=3, T=4, d=5, seed=2)
    cs = pr.attention_constraints("opt") if svm == "attention" else pr.decoder_constraints("opt")
    ops = ExactOps(cs)
    Z, e = cs.exact_rows()
    rng = np.random.default_rng(0)
    w = [int(k) for k in rng.integers(-(2**60), 2**60, size=cs.m)]
    w[0] = 3 << 200  # big integers too
    lam = [int(k) for k in rng.integers(0, 2**62, size=cs.N)]
    assert ops.exp == e
    assert ops.matvec(w) == [int(x) for x in Z.dot(np.array(w, dtype=object))]
    assert ops.rmatvec(lam) == [int(x) for x in Z.T.dot(np.array(lam, dtype=object))]
    G = ops.gram()
    dense = Z.dot(Z.T)
    assert [[int(G[i, j]) for j in range(cs.N)] for i in range(cs.N)] == [
        [int(x) for x in r] for r in dense
    ]
    sub = ops.subset([2, 0])
    assert sub.matvec(w) == [ops.matvec(w)[2], ops.matvec(w)[0]]
    assert np.allclose(sub.float_rows(), cs.rows()[[2, 0]], rtol=1e-15, atol=0)
    # structured float Hessian A_F diag(D) A_F^T equals the dense product
    A = cs.rows()
    D = rng.random(cs.m)
    F = rng.random(cs.N) > 0.3
    assert np.allclose(ops.hessian(D, F), (A[F] * D) @ A[F].T, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("planted", [False, True])
def test_attention_products_int64_and_python_int_factors(planted):
    """The per-example fmpz blocks give the exact products from int64 factors (synthetic) and
    Python-int factors (float data of wide range) alike, built once and reused; a row subset's
    exact factors equal the whole system's rows."""
    from certify.synth import planted_problem

    pr = planted_problem(n=4, T=5, d=3, seed=1) if planted else synthetic_problem(n=4, T=5, d=3)
    if planted:  # entries from 2^-80 to 1: exact factors beyond int64 (Python ints)
        X = pr.X.copy()
        X[:, :, 0] *= 2.0**-80
        pr = dataclasses.replace(pr, X=X)
    cs = pr.attention_constraints()
    assert cs.left.ints.dtype == (object if planted else np.int64)
    Z, _ = cs.exact_rows()
    ops = ExactOps(cs)
    rng = np.random.default_rng(1)
    w = [int(k) for k in rng.integers(-(2**60), 2**60, size=cs.m)]
    lam = [int(k) for k in rng.integers(0, 2**62, size=cs.N)]
    for _ in range(2):  # the second pass reuses whatever was kept
        assert ops.matvec(w) == [int(x) for x in Z.dot(np.array(w, dtype=object))]
        assert ops.rmatvec(lam) == [int(x) for x in Z.T.dot(np.array(lam, dtype=object))]
    sub = ops.subset([5, 1, 2])
    assert sub.L.tolist() == cs.left.as_object()[[5, 1, 2]].tolist()
    assert sub.R.tolist() == cs.right.as_object()[[5, 1, 2]].tolist()


def test_structural_zero_columns():
    from certify import AttentionProblem

    X = np.zeros((1, 2, 2))
    X[0, 0] = [1.0, 0.0]
    z = np.array([[0.0, 2.0]])
    pr = AttentionProblem(X, np.array([1.0]), z, np.array([1.0, 0.0]), alpha=[0])
    ops = ExactOps(pr.attention_constraints())
    # single row vec([1,0] [0,2]^T): only entry (0, 1) is nonzero
    assert ops.structural_zero_columns().tolist() == [True, False, True, True]


def test_ldexp_int_huge_and_tiny():
    assert ldexp_int(1 << 3000, -3000) == 1.0
    assert ldexp_int(-(3 << 100), -101) == -1.5
    assert ldexp_int(1, 5000) == float("inf")
    assert ldexp_int(0, 7) == 0.0
    assert np.array_equal(int_vector_to_float([1, -2, 0], -1), [0.5, -1.0, 0.0])


def test_fingerprint_representatives_equal_exact_keys(monkeypatch):
    """Many attention rows are grouped by modular fingerprints; the groups are the exact ones,
    including rows equal only up to a factor moved between l and z (l z^T = (2l)(z/2)^T)."""
    from certify import represent
    from certify.exact import DyadicArray
    from certify.problem import ConstraintSystem

    rng = np.random.default_rng(3)
    d, n, k = 4, 30, 5
    Zu = rng.integers(-3, 4, size=(n, d)).astype(object) << 70  # beyond int64: object rows
    Zu[:, 0] = 2 << 70
    Zu[1] = Zu[0] * 3  # example 1's z is 3 x example 0's
    L = rng.integers(-2, 3, size=(n * k, d)).astype(object) << 70
    L[k + 2] = L[1] * 3  # hence row (1, 2) = 3 l_1 z_1^T / 3 ... not equal; the next is
    L[k + 3] = L[1]  # (1, 3): l_1 (3 z_0)^T = 3 x row (0, 1): different
    L[7] = L[2]  # duplicate inside example 1
    L[k + 4] = 0 * L[0]
    L[k + 4][0] = 6 << 70  # row (1,4) = (6,0,..) (3 z_0)
    L[4] = 0 * L[0]
    L[4][0] = 18 << 70  # row (0,4) = (18,0,..) z_0: equal to row (1,4)
    index = tuple((i, t) for i in range(n) for t in range(k))
    R = np.repeat(Zu, k, axis=0)
    cs = ConstraintSystem("attention", index, DyadicArray(L, -70), DyadicArray(R, -70), d)
    exact = ExactOps(cs)._representatives()
    monkeypatch.setattr(represent, "FINGERPRINT_ROWS", 10)
    fast = ExactOps(cs)._representatives()
    assert fast.tolist() == exact.tolist()
    assert fast[k + 4] == 4
