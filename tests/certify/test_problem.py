"""The AttentionProblem data model: validation, lossless I/O, exact scores and constraints."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from certify.errors import MdcertError
from certify.problem import AttentionProblem, resolve_alpha
from certify.synth import synthetic_problem


def _small() -> AttentionProblem:
    X = np.array([[[0.0, 0.0], [-1.0, -1.0], [-10.0, 5.0]]])
    return AttentionProblem(X, [1.0], [[1.0, 0.0]], [0.0, 1.0])


GOOD = dict(X=np.zeros((2, 3, 4)), y=np.array([1.0, -1.0]), z=np.ones((2, 4)), v=np.ones(4))


@pytest.mark.parametrize(
    ("change", "pattern"),
    [
        (dict(X=np.zeros((2, 3))), r"X must have 3 dimensions"),
        (dict(X=np.zeros((2, 1, 4))), r"T >= 2"),
        (dict(y=np.array([1.0, 0.0])), r"labels must be -1 or \+1; y\[1\]"),
        (dict(y=np.array([1.0, 2.0])), r"labels must be -1 or \+1"),
        (dict(y=np.array([1.0])), r"y must have shape \(2,\)"),
        (dict(z=np.ones((2, 3))), r"z must have shape \(2, 4\)"),
        (dict(v=np.ones(5)), r"v must have shape \(4,\)"),
        (dict(X=np.full((2, 3, 4), np.nan)), r"X contains NaN or Inf"),
        (dict(z=np.array([[1.0, np.inf, 0, 0], [0, 0, 0, 0]])), r"z contains NaN or Inf \(first at index \(0, 1\)\)"),
        (dict(v="abc"), r"v must be a numeric array"),
        (dict(alpha=[0, 3]), r"alpha\[1\] = 3 is not a token index"),
        (dict(alpha=[0]), r"one token index per example"),
        (dict(alpha="x,y"), r"invalid alpha"),
    ],
)
def test_bad_inputs_are_rejected_with_clear_messages(change, pattern) -> None:
    kwargs = {**GOOD, **change}
    with pytest.raises(MdcertError, match=pattern):
        AttentionProblem(**kwargs)


def test_problem_is_immutable() -> None:
    prob = synthetic_problem(seed=1)
    with pytest.raises(ValueError):
        prob.X[0, 0, 0] = 1.0
    with pytest.raises(AttributeError):
        prob.X = np.zeros(3)  # type: ignore[misc]


@pytest.mark.parametrize("suffix", [".npz", ".json"])
def test_save_load_round_trip_is_lossless(tmp_path, suffix) -> None:
    prob = synthetic_problem(n=3, T=4, d=5, seed=3).with_alpha([0, 1, 2])
    path = prob.save(tmp_path / f"p{suffix}")
    back = AttentionProblem.load(path)
    for name in ("X", "y", "z", "v", "alpha"):
        np.testing.assert_array_equal(getattr(back, name), getattr(prob, name))
    assert back.data_hash() == prob.data_hash()
    assert not list(tmp_path.glob("*.tmp*"))


def test_load_errors(tmp_path) -> None:
    with pytest.raises(MdcertError, match="problem file not found"):
        AttentionProblem.load(tmp_path / "missing.npz")
    (tmp_path / "bad.json").write_text("[1, 2]")
    with pytest.raises(MdcertError, match="JSON object"):
        AttentionProblem.load(tmp_path / "bad.json")
    (tmp_path / "bad2.json").write_text('{"X": [[[1.0]]]}')
    with pytest.raises(MdcertError, match="lacks y, z, v"):
        AttentionProblem.load(tmp_path / "bad2.json")
    (tmp_path / "p.txt").write_text("x")
    with pytest.raises(MdcertError, match="use .npz or .json"):
        AttentionProblem.load(tmp_path / "p.txt")
    (tmp_path / "broken.npz").write_bytes(b"not a zip")
    with pytest.raises(MdcertError, match="cannot read problem"):
        AttentionProblem.load(tmp_path / "broken.npz")
    with pytest.raises(MdcertError, match="use a .npz or .json"):
        _small().save(tmp_path / "p.csv")


def test_data_hash_changes_with_data() -> None:
    a = synthetic_problem(seed=1)
    X = a.X.copy()
    X[0, 0, 0] = np.nextafter(X[0, 0, 0], 2.0)
    b = AttentionProblem(X, a.y, a.z, a.v)
    assert a.data_hash() != b.data_hash()


def test_exact_scores_and_ties() -> None:
    X = np.array([[[1.0, 0.0], [0.5, 0.25], [1.0, 0.0]], [[0.1, 0.2], [0.3, 0.0], [0.0, 0.0]]])
    prob = AttentionProblem(X, [1.0, -1.0], np.ones((2, 2)), [1.0, 1.0])
    tokens = prob.optimal_indices()
    assert tokens.ties == ((0, (0, 2)),)
    assert not tokens.unique
    # example 1: scores -(0.1+0.2), -0.3, 0 -> argmax token 2 exactly
    assert tokens.indices[1] == 2
    gamma, exp = prob.token_scores_exact()
    assert Fraction(int(gamma[1, 0])) * Fraction(2) ** exp == -(Fraction(0.1) + Fraction(0.2))
    with pytest.raises(MdcertError, match="tied in example 0"):
        resolve_alpha(prob, "opt")


def test_float_rounding_tie_is_detected_exactly() -> None:
    # 0.1 + 0.2 != 0.3 exactly: float scores may tie or not, exact scores decide.
    X = np.array([[[0.1, 0.2], [0.3, 0.0]]])
    prob = AttentionProblem(X, [1.0], [[1.0, 1.0]], [1.0, 1.0])
    assert prob.optimal_indices().indices == (0,)  # 0.1 + 0.2 > 0.3 in exact dyadics
    assert prob.optimal_indices().unique


def test_attention_constraints_match_definition() -> None:
    prob = synthetic_problem(n=3, T=4, d=3, seed=5)
    alpha = (1, 0, 3)
    cons = prob.attention_constraints(alpha)
    assert cons.N == 3 * 3 and cons.m == 9 and cons.kind == "attention"
    ints, exp = cons.exact_rows()
    A = cons.rows()
    for r, (i, t) in enumerate(cons.index):
        assert t != alpha[i]
        for j in range(3):
            for k in range(3):
                exact = (Fraction(prob.X[i, alpha[i], j]) - Fraction(prob.X[i, t, j])) * Fraction(prob.z[i, k])
                assert Fraction(int(ints[r, 3 * j + k])) * Fraction(2) ** exp == exact
                assert A[r, 3 * j + k] == float(exact)
    W = np.random.default_rng(0).standard_normal((3, 3))
    i, t = cons.index[4]
    np.testing.assert_allclose(A[4] @ W.ravel(), (prob.X[i, alpha[i]] - prob.X[i, t]) @ W @ prob.z[i])


def test_decoder_constraints_match_definition() -> None:
    prob = synthetic_problem(n=3, T=4, d=3, seed=5)
    cons = prob.decoder_constraints([2, 2, 0])
    assert cons.index == ((0,), (1,), (2,)) and cons.right is None
    np.testing.assert_array_equal(cons.rows(), prob.y[:, None] * prob.X[[0, 1, 2], [2, 2, 0]])


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 4), st.integers(2, 5), st.integers(1, 4), st.integers(0, 2**32 - 1))
def test_synthetic_problem_properties(n, T, d, seed) -> None:
    prob = synthetic_problem(n=n, T=T, d=d, seed=seed)
    assert prob.X.shape == (n, T, d)
    np.testing.assert_allclose(np.linalg.norm(prob.X, axis=-1), 1.0, rtol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(prob.z, axis=-1), 1.0, rtol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(prob.v), 1.0, rtol=1e-12)
    assert set(np.unique(prob.y)) <= {-1.0, 1.0}
    again = synthetic_problem(n=n, T=T, d=d, seed=seed)
    assert again.data_hash() == prob.data_hash()
