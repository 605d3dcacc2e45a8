"""Tests for certify.ops: structured exact products equal the dense exact integer products."""

from __future__ import annotations

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


def _loop_representatives(ops: ExactOps) -> list[int]:
    """The reference: the per-row Python-integer keys of `ExactOps._representatives`."""
    from certify.ops import _primitive

    keys: dict = {}
    out = []
    L, R = ops.L, ops.R
    for r in range(ops.N):
        key = _primitive(L[r])
        if R is not None:
            kz = _primitive(R[r])
            key = (key[0], kz[0], key[1] * kz[1])
        out.append(keys.setdefault(key, r))
    return out


def test_int64_representatives_equal_the_python_integer_keys():
    from certify import AttentionProblem

    rng = np.random.default_rng(3)
    n, T, d = 6, 5, 3
    X = rng.integers(-3, 4, size=(n, T, d)).astype(np.float64)
    X[0, 2] = X[0, 3]  # coinciding rows within one example
    X[1, 1] = X[1, 0] + 2 * (X[1, 0] - X[1, 2])  # l = -2 * l' (content and sign)
    z = rng.integers(-3, 4, size=(n, d)).astype(np.float64)
    z[1] = 2 * z[1] + np.array([1.0, 0.0, 0.0])  # nonzero and even in its first entry
    z[2], X[2] = -z[1] / 2, -2 * X[1]  # (-2 l)(-z/2)^T = l z^T: equal rows across examples
    z[3] = 0.0  # zero right factor: zero rows (distinct keys by l, as before)
    X[4, 1] = X[4, 0]  # zero left factor (a duplicated token)
    pr = AttentionProblem(X, np.ones(n), z, np.array([1.0, 0.0, 0.0]), alpha=[0] * n)
    cs = pr.attention_constraints()
    ops = ExactOps(cs)
    assert cs.left.ints.dtype == np.int64 and ops._lay.int64()  # no object copy
    rep = ops.representatives().tolist()
    assert rep == _loop_representatives(ops)
    per = T - 1  # rows of each example
    assert rep[2 * per : 3 * per] == list(range(per, 2 * per))  # example 2 repeats example 1
    sub = ops.subset([7, 3, 9, 2, 11, 10, 6])
    assert sub.representatives().tolist() == _loop_representatives(sub)
    # object (beyond 62-bit) data takes the Python-integer path: the same answer
    Xo = X.copy()
    Xo[5, 0, 0] = 2.0**-1000  # a tiny entry: integers of about 1000 bits
    cso = AttentionProblem(Xo, np.ones(n), z, np.array([1.0, 0.0, 0.0]), alpha=[0] * n)
    opso = ExactOps(cso.attention_constraints())
    assert not opso._lay.int64()
    assert opso.representatives().tolist() == _loop_representatives(opso)


def test_representatives_confirm_equal_hashes_on_the_keys(monkeypatch):
    import certify.ops as ops_mod
    from certify import AttentionProblem

    monkeypatch.setattr(ops_mod, "hash", lambda key: 0, raising=False)  # every key collides
    rng = np.random.default_rng(4)
    X = rng.integers(-2, 3, size=(4, 4, 2)).astype(np.float64)
    X[1] = X[0]
    X[3, 3, 1] = 2.0**-1000  # beyond 62 bits: the Python-integer path
    z = rng.integers(1, 3, size=(4, 2)).astype(np.float64)
    z[1] = z[0]
    pr = AttentionProblem(X, np.ones(4), z, np.array([1.0, 0.0]), alpha=[0] * 4)
    ops = ExactOps(pr.attention_constraints())
    assert not ops._lay.int64()
    rep = ops.representatives().tolist()
    assert rep == _loop_representatives(ops) and rep[3:6] == [0, 1, 2]


@pytest.mark.parametrize("svm", ["attention", "decoder"])
def test_gram_factors_by_row_blocks_equal_the_exact_gram(svm, monkeypatch):
    import certify.ops as ops_mod

    monkeypatch.setattr(ops_mod, "_GRAM_BLOCK", 2)  # several blocks and a short last one
    pr = synthetic_problem(n=3, T=4, d=5, seed=2)
    cs = pr.attention_constraints("opt") if svm == "attention" else pr.decoder_constraints("opt")
    sub = ExactOps(cs).subset([4, 0, 2, 7, 5] if svm == "attention" else [2, 0, 1])
    Z, _ = cs.exact_rows()
    Zs = Z[sub.rows]
    factors = sub.gram_factors()
    M = factors[0] if len(factors) == 1 else factors[0] * factors[1]
    assert M.dtype == object and M.shape == (sub.N, sub.N)
    assert [[int(x) for x in r] for r in M] == [[int(x) for x in r] for r in Zs.dot(Zs.T)]
