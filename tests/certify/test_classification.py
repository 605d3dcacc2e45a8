"""The ClassificationProblem data model: validation, data hash, lossless I/O, exact rows."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from certify.classification import ClassificationProblem, load_problem
from certify.errors import MdcertError
from certify.problem import AttentionProblem
from certify.synth import classification_problem, synthetic_problem

GOOD = dict(X=np.arange(8.0).reshape(4, 2), y=np.array([1.0, -1.0, 1.0, -1.0]))


@pytest.mark.parametrize(
    ("change", "pattern"),
    [
        (dict(X=np.zeros((0, 2)), y=np.zeros(0)), r"n >= 1 and d >= 1; got \(0, 2\)"),
        (dict(X=np.zeros((4, 0))), r"n >= 1 and d >= 1; got \(4, 0\)"),
        (dict(X=np.zeros(4)), r"X must have 2 dimensions"),
        (
            dict(X=np.array([[1.0, np.nan]] * 4)),
            r"X contains NaN or Inf \(first at index \(0, 1\)\)",
        ),
        (dict(X=np.array([[1.0, np.inf]] * 4)), r"X contains NaN or Inf"),
        (dict(y=np.array([1.0, np.nan, 1.0, -1.0])), r"y contains NaN or Inf"),
        (dict(y=np.array([1.0, -1.0])), r"y must have shape \(4,\)"),
        (dict(y=np.ones(4)), r"class -1 has no example"),
        (dict(y=np.array([0.0, 1.0, 1.5, 0.0])), r"y\[2\] = 1.5"),
        (
            dict(y=np.array([0.0, 1.0, 5.0, 0.0]), classes=3),
            r"label y\[2\] = 5 is outside the declared classes 0..2",
        ),
        (dict(y=np.array([0.0, 1.0, -1.0, 0.0])), r"label y\[2\] = -1 is outside 0..K-1"),
        (dict(y=np.array([1.0, -1.0, 1.0, -1.0]), classes=2), r"outside the declared classes 0..1"),
        (dict(y=np.array([0.0, 2.0, 2.0, 0.0])), r"class 1 has no example"),
        (dict(y=np.array([0.0, 1.0, 1.0, 0.0]), classes=3), r"class 2 has no example"),
        (dict(y=np.zeros(4)), r"at least 2 classes"),
        (dict(y=np.array([0.0, 1.0, 1.0, 0.0]), classes=1), r"classes must be an integer K >= 2"),
        (dict(y=np.array([0.0, 1.0, 1.0, 0.0]), classes=2.5), r"classes must be an integer K >= 2"),
        (dict(y="ab"), r"y must be a numeric array"),
    ],
)
def test_bad_inputs_are_one_line_errors(change, pattern) -> None:
    with pytest.raises(MdcertError, match=pattern) as info:
        ClassificationProblem(**{**GOOD, **change})
    assert "\n" not in str(info.value)


def test_binary_and_multiclass_kinds() -> None:
    b = ClassificationProblem(**GOOD)
    assert (b.kind, b.K, b.m, b.N, b.classes) == ("binary", 2, 2, 4, None)
    m = ClassificationProblem(GOOD["X"], [0, 2, 1, 2])
    assert (m.kind, m.K, m.m, m.N) == ("multiclass", 3, 6, 8)
    assert (
        ClassificationProblem(GOOD["X"], [0, 1, 1, 0]).kind == "multiclass"
    )  # 0/1 labels: Crammer-Singer, K = 2


def test_rows_binary_and_crammer_singer() -> None:
    X = np.array([[1.0, 2.0], [3.0, -4.0]])
    b = ClassificationProblem(X, [1.0, -1.0]).constraints()
    rows, exp = b.exact_rows()
    assert b.index == ((0,), (1,)) and [[int(v) * 2**exp for v in r] for r in rows] == [
        [1, 2],
        [-3, 4],
    ]
    m = ClassificationProblem(np.vstack([X, [[0.5, 0.0]]]), [2, 0, 1]).constraints()
    rows, exp = m.exact_rows()
    assert m.index == ((0, 0), (0, 1), (1, 1), (1, 2), (2, 0), (2, 2)) and m.m == 6
    got = np.array([[int(v) * 2.0**exp for v in r] for r in rows])
    assert got[:4].tolist() == [
        [-1, -2, 0, 0, 1, 2],
        [0, 0, -1, -2, 1, 2],
        [3, -4, -3, 4, 0, 0],
        [3, -4, 0, 0, -3, 4],
    ]


def test_data_hash_names_the_data() -> None:
    a = ClassificationProblem(**GOOD)
    assert (
        a.data_hash()
        == ClassificationProblem(
            GOOD["X"].copy(), GOOD["y"].copy(), provenance={"note": 1}
        ).data_hash()
    )
    assert a.data_hash() != ClassificationProblem(GOOD["X"] + 1, GOOD["y"]).data_hash()
    assert a.data_hash() != ClassificationProblem(GOOD["X"], -GOOD["y"]).data_hash()
    m2 = ClassificationProblem(GOOD["X"], [0, 1, 1, 0])
    assert (
        m2.data_hash() == ClassificationProblem(GOOD["X"], [0, 1, 1, 0], classes=2).data_hash()
    )  # K inferred = declared
    assert ClassificationProblem(
        np.array([[-0.0, 1.0], [0.0, 1.0]]), [1.0, -1.0]
    ).conflicting_pair() == (0, 1)


@pytest.mark.parametrize("suffix", [".npz", ".json"])
@pytest.mark.parametrize("classes", [None, 3])
def test_save_load_roundtrip(tmp_path, suffix, classes) -> None:
    prob = classification_problem(n=30, d=4, classes=classes, seed=3)
    prob = ClassificationProblem(prob.X, prob.y, classes=classes, provenance={"source": "test"})
    path = prob.save(tmp_path / f"p{suffix}")
    back = load_problem(path)
    assert isinstance(back, ClassificationProblem) and back.data_hash() == prob.data_hash()
    assert back.provenance == {"source": "test"} and back.classes == prob.classes
    assert not list(tmp_path.glob("*.tmp*"))
    with pytest.raises(MdcertError, match="not an attention problem"):
        AttentionProblem.load(path)


def test_load_problem_dispatches_and_refuses(tmp_path) -> None:
    att = synthetic_problem().save(tmp_path / "a.npz")
    assert isinstance(load_problem(att), AttentionProblem)
    bad = tmp_path / "b.json"
    bad.write_text(json.dumps({"kind": "regression", "X": [[1.0]], "y": [1.0]}))
    with pytest.raises(MdcertError, match=r"is a regression problem .*'mdcert interpolate b\.json"):
        load_problem(bad)
    bad.write_text(json.dumps({"kind": "lasso", "X": [[1.0]], "y": [1.0]}))
    with pytest.raises(MdcertError, match="unknown kind 'lasso'"):
        load_problem(bad)
    bad.write_text(json.dumps({"kind": "classification", "X": [[1.0]]}))
    with pytest.raises(MdcertError, match="lacks y"):
        load_problem(bad)
    bad.write_text(
        json.dumps({"kind": "classification", "X": [[1.0], [2.0]], "y": [1, -1], "z": [1]})
    )
    with pytest.raises(MdcertError, match=r"unknown keys \['z'\]"):
        load_problem(bad)


@settings(max_examples=25, deadline=None)
@given(
    st.integers(1, 40),
    st.integers(1, 5),
    st.sampled_from([None, 2, 3]),
    st.booleans(),
    st.integers(0, 99),
)
@example(n=3, d=1, classes=3, separable=False, seed=0)
def test_synth_is_valid_and_seeded(n, d, classes, separable, seed) -> None:
    if n < (classes or 2):
        with pytest.raises(MdcertError):
            classification_problem(n=n, d=d, classes=classes, separable=separable, seed=seed)
        return
    try:
        prob = classification_problem(n=n, d=d, classes=classes, separable=separable, seed=seed)
    except MdcertError as exc:  # a planted draw of a few points may miss a class: said so
        assert "miss a class" in str(exc)
        return
    assert prob.n == n and prob.d == d and prob.K == (classes or 2)
    again = classification_problem(n=n, d=d, classes=classes, separable=separable, seed=seed)
    assert again.data_hash() == prob.data_hash()
    assert np.all(prob.X * 2.0**16 == np.round(prob.X * 2.0**16))  # on the dyadic grid
