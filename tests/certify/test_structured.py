"""certify.structured: the structured float products equal the dense rows' products."""

from __future__ import annotations

import numpy as np
import pytest

from certify import AttentionProblem, synthetic_problem
from certify.structured import row_factors


def _padded_problem() -> AttentionProblem:
    base = synthetic_problem(n=5, T=6, d=4, seed=3)
    return AttentionProblem(
        base.X * (np.arange(6)[None, :, None] < np.array([6, 3, 2, 6, 4])[:, None, None]),
        base.y,
        base.z,
        base.v,
        lengths=[6, 3, 2, 6, 4],
    )


@pytest.mark.parametrize(
    "make", [lambda: synthetic_problem(n=4, T=5, d=3, seed=1), _padded_problem]
)
@pytest.mark.parametrize("svm", ["attention", "decoder"])
def test_products_equal_dense_rows(make, svm):
    pr = make()
    cs = pr.attention_constraints("opt") if svm == "attention" else pr.decoder_constraints("opt")
    rf = row_factors(cs)
    A = cs.rows()
    rng = np.random.default_rng(0)
    w, lam = rng.standard_normal(cs.m), rng.random(cs.N)
    assert (rf.N, rf.m) == A.shape
    assert np.allclose(rf.matvec(w), A @ w, rtol=1e-13, atol=1e-14)
    assert np.allclose(rf.rmatvec(lam), A.T @ lam, rtol=1e-13, atol=1e-14)
    idx = np.array([cs.N - 1, 0, 2])
    assert np.allclose(
        rf.rows(idx), A[idx], rtol=3e-16, atol=0
    )  # products of correctly rounded factors
    assert np.allclose(rf.row_norms(), np.linalg.norm(A, axis=1), rtol=1e-14)
    assert row_factors(cs) is rf  # cached on the system


def test_padding_has_no_row_and_a_padded_layout():
    pr = _padded_problem()
    cs = pr.attention_constraints("opt")
    rf = row_factors(cs)
    assert cs.N == sum(k - 1 for k in (6, 3, 2, 6, 4)) and rf.slot is not None
    assert rf.padded.shape == (5, 5, 4)
    full = row_factors(synthetic_problem(n=4, T=5, d=3).attention_constraints("opt"))
    assert full.slot is None and np.shares_memory(full.padded, full.left)  # no copy without padding


def test_only_the_last_example_short():
    """Rows 0..N-1 in slot order but fewer than n*k of them (a real-data problem: one short review last)."""
    base = synthetic_problem(n=3, T=5, d=3, seed=2)
    lengths = np.array([5, 5, 3])
    pr = AttentionProblem(
        base.X * (np.arange(5)[None, :, None] < lengths[:, None, None]),
        base.y,
        base.z,
        base.v,
        lengths=lengths,
    )
    cs = pr.attention_constraints("opt")
    rf = row_factors(cs)
    assert rf.padded.shape == (3, 4, 3) and rf.slot is not None
    w = np.random.default_rng(0).standard_normal(cs.m)
    assert np.allclose(rf.matvec(w), cs.rows() @ w, rtol=1e-13, atol=1e-14)
