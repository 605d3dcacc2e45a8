"""`certify.plaininfo`: the first look at classification and regression data. Its "not separable"
and "inconsistent" hints are exact facts of the stored values, so each is tested on a case whose
proof is known, beside cases where nothing may be claimed."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from certify.classification import ClassificationProblem
from certify.plaininfo import RowGroups, classification_info, duplicate_groups, regression_info
from certify.regression.problem import RegressionProblem


def test_duplicates_are_exact_and_treat_minus_zero_as_zero() -> None:
    X = np.array([[0.0, 1.0], [-0.0, 1.0], [0.0, 1.0 + 2**-52], [3.0, 4.0], [3.0, 4.0]])
    count, groups = duplicate_groups(X)
    assert count == 2 and groups == [[0, 1], [3, 4]]  # 1 + 2^-52 is another point


@given(st.lists(st.integers(0, 3), min_size=0, max_size=30))
@example([])
@example([1, 1, 1])
def test_duplicate_groups_match_a_quadratic_reference(codes) -> None:
    X = np.array([[c, -c] for c in codes], dtype=np.float64).reshape(len(codes), 2)
    count, groups = duplicate_groups(X)
    reference = {}
    for i, c in enumerate(codes):
        reference.setdefault(c, []).append(i)
    expected = sorted((g for g in reference.values() if len(g) > 1), key=lambda g: g[0])
    assert count == len(expected) and groups == expected


def test_opposite_labels_on_equal_points_are_a_proof_of_non_separability() -> None:
    X = np.array([[1.0, 2.0], [0.5, 0.5], [1.0, 2.0]])
    info = classification_info(ClassificationProblem(X, np.array([1.0, -1.0, -1.0])))
    assert info["hint"].startswith("not separable (proven: points 0 and 2 are equal")
    assert info["duplicate_groups"] == 1 and info["label_counts"] == {"-1": 2, "1": 1}


def test_a_zero_point_is_a_proof_and_separable_data_get_no_claim() -> None:
    X = np.array([[1.0, 2.0], [0.0, -0.0], [2.0, 1.0]])
    info = classification_info(ClassificationProblem(X, np.array([1.0, -1.0, -1.0])))
    assert info["hint"].startswith("not separable (proven: point 1 is zero")
    clean = classification_info(ClassificationProblem(X[[0, 2]], np.array([1.0, -1.0])))
    assert clean["hint"].startswith("not decided here") and clean["zero_point_count"] == 0


def test_multiclass_counts_rows_and_variables() -> None:
    X = np.arange(12, dtype=np.float64).reshape(6, 2)
    info = classification_info(ClassificationProblem(X, np.array([0, 1, 2, 0, 1, 2]), classes=3))
    assert info["type"] == "multiclass" and info["K"] == 3
    assert info["label_counts"] == {"0": 2, "1": 2, "2": 2}
    assert info["rows"] == 12 and info["variables"] == 6  # n (K - 1) rows, K d variables


@pytest.mark.parametrize(
    "X, y, hint",
    [
        (
            [[0.0, 0.0], [1.0, 2.0]],
            [1.0, 3.0],
            r"^inconsistent \(proven: row 0 of X is zero and y\[0\] = 1\)$",
        ),
        (
            [[1.0, 2.0], [1.0, 2.0]],
            [1.0, 3.0],
            r"^inconsistent \(proven: rows 0 and 1 of X are equal",
        ),
        ([[0.0, 0.0], [1.0, 2.0]], [0.0, 3.0], r"^not decided here"),
        ([[1.0, 2.0], [1.0, 2.0]], [3.0, 3.0], r"^not decided here"),
    ],
)
def test_regression_inconsistency_hints(X, y, hint) -> None:
    info = regression_info(RegressionProblem(np.array(X), np.array(y)))
    assert __import__("re").search(hint, info["hint"])
    assert info["overparameterized"] is False  # D = N = 2


def test_regression_counts() -> None:
    X = np.array([[1.0, 0.0, 0.0, 2.0], [0.0, 3.0, 0.0, 0.0]])
    info = regression_info(RegressionProblem(X, np.array([1.0, 0.0])))
    assert info["N"] == 2 and info["D"] == 4 and info["overparameterized"]
    assert info["zero_targets"] == 1 and info["nonzeros_per_row"] == [1, 2]


@given(
    st.lists(st.tuples(st.integers(0, 3), st.sampled_from([-1.0, 1.0])), min_size=1, max_size=30)
)
@example([(0, 1.0), (1, 1.0), (0, -1.0)])
@example([(2, 1.0)])
def test_the_label_clash_is_the_problems_own_conflicting_pair(rows) -> None:
    rows = rows + [(9, 1.0), (8, -1.0)]  # both labels present: a valid binary problem
    X = np.array([[c, 1.0 - c] for c, _ in rows], dtype=np.float64)
    y = np.array([lab for _, lab in rows])
    problem = ClassificationProblem(X, y)
    assert RowGroups.of(X).clash(y) == problem.conflicting_pair()


def test_a_clash_beyond_the_listed_groups_is_still_found() -> None:
    # three duplicate groups, only the first listed; the inconsistent pair is in the third
    X = np.array([[1.0], [1.0], [2.0], [2.0], [3.0], [3.0]])
    y = np.array([5.0, 5.0, 6.0, 6.0, 7.0, 8.0])
    groups = RowGroups.of(X, limit=1)
    assert groups.count == 3 and groups.listed == [[0, 1]]
    assert groups.clash(y) == (4, 5)
    info = regression_info(RegressionProblem(X, y))
    assert info["hint"].startswith("inconsistent (proven: rows 4 and 5 of X are equal")
