"""certify.info: trailing zero tokens, duplicated tokens (exact), the problem summary and its warnings."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from certify import AttentionProblem, synthetic_problem
from certify.info import (
    Feasibility,
    duplicate_tokens,
    input_warnings,
    problem_info,
    summarize,
    trailing_zero_tokens,
)


def _brute(X: np.ndarray, lengths: np.ndarray) -> tuple:
    out = []
    for i in range(X.shape[0]):
        groups: dict = {}
        for t in range(int(lengths[i])):
            groups.setdefault(tuple((X[i, t] + 0.0).tolist()), []).append(t)
        out += [(i, tuple(ts)) for ts in groups.values() if len(ts) > 1]
    return tuple(sorted(out))


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 4),
    st.integers(2, 6),
    st.integers(1, 3),
    st.integers(0, 2**32 - 1),
    st.integers(0, 3),
)
def test_duplicate_tokens_match_a_brute_force_search(n, T, d, seed, copies) -> None:
    rng = np.random.default_rng(seed)
    X = rng.integers(-1, 2, size=(n, T, d)).astype(
        np.float64
    )  # few values: many natural duplicates
    for _ in range(copies):
        i, a, b = rng.integers(n), rng.integers(T), rng.integers(T)
        X[i, a] = -0.0 * X[i, b] if rng.integers(2) else X[i, b]
    X[:, :, 0] += 0.5  # no all-zero token: nothing is padding
    pr = AttentionProblem(X, np.ones(n), np.ones((n, d)), np.ones(d))
    assert duplicate_tokens(pr) == _brute(X, np.full(n, T))


def test_trailing_zeros_count_only_without_lengths() -> None:
    X = np.ones((3, 4, 2))
    X[0, 2:] = 0.0
    X[2, 1:] = 0.0
    X[1, 1] = 0.0  # an inner zero token is not padding
    pr = AttentionProblem(X, np.ones(3), np.ones((3, 2)), np.ones(2))
    assert trailing_zero_tokens(pr).tolist() == [2, 0, 3]
    declared = AttentionProblem(X, np.ones(3), np.ones((3, 2)), np.ones(2), lengths=[2, 4, 2])
    assert trailing_zero_tokens(declared).tolist() == [0, 0, 0]
    warn = input_warnings(pr)
    assert len(warn) == 2 and warn[0].startswith(
        "2 of 3 examples end in all-zero tokens (example 0: last 2 of 4)"
    )
    assert "identical tokens" in warn[1]  # example 0 tokens 0, 1 (both ones)


def test_summary_of_a_generic_problem() -> None:
    pr = synthetic_problem(n=4, T=3, d=3, seed=0)
    info = problem_info(pr)
    assert info.rows == 8 and info.variables == 9 and info.feasibility is Feasibility.FEW_ROWS
    assert (
        info.optimal == pr.optimal_indices().indices and info.padded == () and info.duplicates == ()
    )
    assert info.to_json()["rows_per_variable"] == 8 / 9
    assert (
        summarize(range(12), first=3) == "0, 1, 2, ... (12 in all)" and summarize([1, 2]) == "1, 2"
    )


def test_zero_z_is_a_zero_row() -> None:
    pr = synthetic_problem(n=2, T=3, d=2, seed=0)
    z = pr.z.copy()
    z[1] = 0.0
    info = problem_info(AttentionProblem(pr.X, pr.y, z, pr.v))
    assert info.feasibility is Feasibility.INFEASIBLE and {i for i, _ in info.zero_rows} == {1}
    assert "z_i = 0" in info.hint
