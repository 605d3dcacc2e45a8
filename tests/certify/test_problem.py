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
        (
            dict(z=np.array([[1.0, np.inf, 0, 0], [0, 0, 0, 0]])),
            r"z contains NaN or Inf \(first at index \(0, 1\)\)",
        ),
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
                exact = (Fraction(prob.X[i, alpha[i], j]) - Fraction(prob.X[i, t, j])) * Fraction(
                    prob.z[i, k]
                )
                assert Fraction(int(ints[r, 3 * j + k])) * Fraction(2) ** exp == exact
                assert A[r, 3 * j + k] == float(exact)
    W = np.random.default_rng(0).standard_normal((3, 3))
    i, t = cons.index[4]
    np.testing.assert_allclose(
        A[4] @ W.ravel(), (prob.X[i, alpha[i]] - prob.X[i, t]) @ W @ prob.z[i]
    )


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


# ---------------------------------------------------------------------- variable lengths and provenance
def _variable(seed: int = 4) -> AttentionProblem:
    """A synthetic problem with lengths 3..6 of T = 6 (padding zeroed)."""
    base = synthetic_problem(n=5, T=6, d=3, seed=seed)
    lengths = np.random.default_rng(seed).integers(3, 7, size=5)
    X = np.where(np.arange(6)[None, :, None] < lengths[:, None, None], base.X, 0.0)
    return AttentionProblem(X, base.y, base.z, base.v, lengths=lengths)


@pytest.mark.parametrize(
    ("change", "pattern"),
    [
        (dict(lengths=[1, 3]), r"lengths\[0\] = 1 leaves fewer than 2 tokens"),
        (dict(lengths=[3, 4]), r"lengths\[1\] = 4 leaves more than T tokens"),
        (dict(lengths=[2]), r"lengths must have shape \(2,\)"),
        (dict(lengths=[2, 2.5]), r"lengths\[1\] = 2.5 is not an integer"),
        (
            dict(X=np.ones((2, 3, 4)), lengths=[2, 3]),
            r"lengths disagree with X: token 2 of example 0 is padding",
        ),
        (
            dict(lengths=[2, 3], alpha=[2, 0]),
            r"alpha\[0\] = 2 is a padding token \(example 0 has lengths\[0\] = 2",
        ),
        (dict(provenance=["a"]), r"provenance must be a JSON object"),
    ],
)
def test_bad_lengths_and_provenance_are_rejected(change, pattern) -> None:
    with pytest.raises(MdcertError, match=pattern) as exc:
        AttentionProblem(**{**GOOD, **change})
    assert "\n" not in str(exc.value)


def test_full_length_is_bitwise_the_problem_without_lengths() -> None:
    prob = synthetic_problem(n=3, T=4, d=3, seed=2)
    full = AttentionProblem(
        prob.X, prob.y, prob.z, prob.v, lengths=[4, 4, 4], provenance={"note": "x"}
    )
    assert full.lengths is None and full.data_hash() == prob.data_hash()
    assert full.valid_lengths.tolist() == [4, 4, 4] and full.token_mask.all()
    assert full.to_dict().keys() == {"X", "y", "z", "v", "provenance"}
    a, b = prob.attention_constraints("opt"), full.attention_constraints("opt")
    assert a.index == b.index and np.array_equal(a.exact_rows()[0], b.exact_rows()[0])


def test_lengths_enter_the_hash_and_provenance_does_not() -> None:
    prob = _variable()
    other = AttentionProblem(
        prob.X, prob.y, prob.z, prob.v, lengths=prob.lengths, provenance={"seed": 1}
    )
    assert other.data_hash() == prob.data_hash()
    longer = prob.lengths.copy()
    longer[np.argmin(longer)] += 1  # one more (zero) token is another problem
    assert (
        AttentionProblem(prob.X, prob.y, prob.z, prob.v, lengths=longer).data_hash()
        != prob.data_hash()
    )
    assert repr(prob).endswith(f"lengths={list(prob.lengths)})")


@pytest.mark.parametrize("suffix", [".npz", ".json"])
def test_lengths_and_provenance_round_trip(tmp_path, suffix) -> None:
    prov = {
        "source": {"file": "corpus.csv.bz2", "sha256": "ab" * 32},
        "projection_seed": 7,
        "selection": [3, 1, 4],
        "note": "é",
    }
    base = _variable()
    prob = AttentionProblem(
        base.X, base.y, base.z, base.v, lengths=base.lengths, provenance=prov, alpha=[0, 1, 2, 0, 1]
    )
    back = AttentionProblem.load(prob.save(tmp_path / f"p{suffix}"))
    for name in ("X", "y", "z", "v", "alpha", "lengths"):
        np.testing.assert_array_equal(getattr(back, name), getattr(prob, name))
    assert back.provenance == prov and back.data_hash() == prob.data_hash()
    assert back.lengths.dtype == np.int64


def test_npz_provenance_must_be_json_text(tmp_path) -> None:
    prob = synthetic_problem(n=2, T=3, d=2, seed=1)
    path = tmp_path / "p.npz"
    np.savez(path, X=prob.X, y=prob.y, z=prob.z, v=prob.v, provenance=np.arange(3))
    with pytest.raises(MdcertError, match="provenance must be stored as JSON text"):
        AttentionProblem.load(path)
    np.savez(path, X=prob.X, y=prob.y, z=prob.z, v=prob.v, provenance=np.array("{not json"))
    with pytest.raises(MdcertError, match="provenance is not valid JSON"):
        AttentionProblem.load(path)
    np.savez(path, X=prob.X, y=prob.y, z=prob.z, v=prob.v, lengths=np.array([2, 1]))
    with pytest.raises(MdcertError, match=r"lengths\[1\] = 1 leaves fewer than 2"):
        AttentionProblem.load(path)


def test_padding_takes_part_in_no_row_and_no_score() -> None:
    prob = _variable()
    L = prob.valid_lengths
    cons = prob.attention_constraints([0] * prob.n)
    assert cons.index == tuple((i, t) for i in range(prob.n) for t in range(1, int(L[i])))
    # padding scores 0; make every valid score negative: the argmax must still be a valid token
    neg = AttentionProblem(
        -np.abs(prob.X), np.ones(prob.n), prob.z, np.abs(prob.v) + 0.1, lengths=prob.lengths
    )
    gamma = neg.token_scores()
    assert np.all(gamma[neg.token_mask] < 0) and np.all(gamma[~neg.token_mask] == 0)
    for i, a in enumerate(neg.optimal_indices().indices):
        assert a < L[i] and gamma[i, a] == gamma[i, : L[i]].max()
    assert prob.token_mask.sum() == L.sum()


def test_padded_twin_has_the_same_rows_and_tokens() -> None:
    prob = synthetic_problem(n=4, T=5, d=3, seed=9)
    twin = prob.padded(8)
    assert twin.T == 8 and twin.lengths.tolist() == [5] * 4 and twin.data_hash() != prob.data_hash()
    assert twin.optimal_indices() == prob.optimal_indices()
    a, b = prob.attention_constraints("opt"), twin.attention_constraints("opt")
    assert a.index == b.index and np.array_equal(a.exact_rows()[0], b.exact_rows()[0])
    assert a.exact_rows()[1] == b.exact_rows()[1]
    assert (
        twin.padded(8).data_hash() == twin.data_hash()
        and twin.padded(9).padded(9).lengths.tolist() == [5] * 4
    )
    assert twin.with_alpha([0, 1, 2, 3]).lengths.tolist() == [5] * 4
    with pytest.raises(MdcertError, match="cannot pad to T = 4"):
        prob.padded(4)


def test_describe_shows_lengths_and_provenance() -> None:
    prob = _variable()
    assert prob.describe().startswith(
        f"n=5 T=6 d=3, lengths {prob.lengths.min()}..{prob.lengths.max()} "
    )
    assert synthetic_problem(n=2, T=3, d=2, seed=0).describe() == "n=2 T=3 d=2"
    many = {f"k{i}": i for i in range(8)} | {"source": {"file": "c.csv", "sha256": "ab"}}
    text = AttentionProblem(
        prob.X, prob.y, prob.z, prob.v, lengths=prob.lengths, provenance=many
    ).describe()
    assert "provenance: k0=0" in text and text.endswith(", ...") and "\n" not in text
