"""certify.regression.problem: exact reading of regression data, one-line refusals."""

from __future__ import annotations

import json

import numpy as np
import pytest

from certify.errors import MdcertError
from certify.regression import RegressionProblem, load_regression

BAD = [
    (np.array([[1.0, np.nan]]), np.array([1.0]), r"X entry \(0, 1\) is not finite"),
    (np.array([[1.0, 2.0]]), np.array([1.0, 2.0]), r"y has 2 entries but X has 1 rows"),
    (np.zeros((0, 3)), np.zeros(0), r"at least one row and one column"),
    (np.array([1.0, 2.0]), np.array([1.0]), r"X must have 2 dimension"),
    (
        np.array([[2**53 + 1, 1]], dtype=np.int64),
        np.array([1.0]),
        r"X\[0, 0\] = 9007199254740993 \(int64\) would "
        r"round to 9007199254740992.0 in float64; scale",
    ),
    (
        np.array([[1.0, 2.0]]),
        np.array([9007199254740993], dtype=object),
        r"y\[0\] = 9007199254740993 would round",
    ),
    (
        np.array([[1.0, 2.0]]),
        np.array([True], dtype=object),
        r"y\[0\] = true is a boolean where a number is expected",
    ),
]


@pytest.mark.parametrize("X, y, message", BAD)
def test_bad_data_is_refused_in_one_line(X, y, message) -> None:
    with pytest.raises(MdcertError, match=message) as err:
        RegressionProblem(X, y)
    assert "\n" not in str(err.value)


def test_long_double_that_would_round_is_refused() -> None:
    ld = np.array([[1, np.longdouble(1) + np.longdouble(2) ** -60]], dtype=np.longdouble)
    if ld[0, 1] == 1:  # a platform whose long double is float64: nothing can round
        pytest.skip("long double is float64 here")
    with pytest.raises(MdcertError, match=r"X\[0, 1\] = .* would round to 1.0 in float64"):
        RegressionProblem(ld, np.array([1.0]))


def test_exact_integers_and_float32_are_accepted_exactly() -> None:
    pr = RegressionProblem(
        np.array([[2**53, -3]], dtype=np.int64), np.array([0.1], dtype=np.float32)
    )
    assert pr.X[0, 0] == 2.0**53 and pr.y[0] == float(np.float32(0.1))
    assert not pr.X.flags.writeable


@pytest.mark.parametrize("suffix", [".npz", ".json"])
def test_round_trip_keeps_the_data_and_its_hash(tmp_path, suffix) -> None:
    rng = np.random.default_rng(1)
    pr = RegressionProblem(rng.standard_normal((3, 5)), rng.standard_normal(3))
    path = tmp_path / f"reg{suffix}"
    pr.save(path)
    back = load_regression(path)
    assert back.data_hash() == pr.data_hash() and (back.X == pr.X).all()
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]  # no temporary left


def test_a_file_of_another_kind_is_refused(tmp_path) -> None:
    path = tmp_path / "p.json"
    path.write_text(json.dumps({"X": [[1.0]], "y": [1.0]}))
    with pytest.raises(MdcertError, match="not a regression problem .*kind = 'regression'"):
        load_regression(path)


def test_hash_separates_data() -> None:
    a = RegressionProblem(np.eye(2), np.ones(2))
    b = RegressionProblem(np.eye(2), np.array([1.0, 1.0 + 2**-52]))
    assert a.data_hash() != b.data_hash() and a.data_hash().startswith("sha256:")
