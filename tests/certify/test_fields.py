"""Validation of the problem fields: numeric arrays, lengths (padding) and provenance."""

from __future__ import annotations

import numpy as np
import pytest

from certify.errors import MdcertError
from certify.fields import (
    MAX_PROVENANCE_CHARS,
    check_lengths,
    check_provenance,
    numeric_array,
    provenance_text,
)

X = np.zeros((3, 4, 2))
X[:, :2] = 1.0  # every example has 2 nonzero tokens, then zeros


@pytest.mark.parametrize(
    ("lengths", "pattern"),
    [
        ([1, 2, 2], r"lengths\[0\] = 1 leaves fewer than 2 tokens"),
        ([2, 5, 2], r"lengths\[1\] = 5 leaves more than T tokens"),
        ([2, 2.5, 2], r"lengths\[1\] = 2.5 is not an integer"),
        ([2, 2], r"lengths must have shape \(3,\)"),
        ([[2, 2, 2]], r"lengths must have shape \(3,\)"),
        ([True, True, True], r"lengths must be 3 integers.*booleans"),
        ("abc", r"lengths must be 3 integers"),
        ([2, float("nan"), 2], r"lengths\[1\] = nan is not an integer"),
    ],
)
def test_bad_lengths_are_refused_in_one_line(lengths, pattern) -> None:
    with pytest.raises(MdcertError, match=pattern) as exc:
        check_lengths(lengths, X)
    assert "\n" not in str(exc.value)


def test_nonzero_padding_means_lengths_disagree_with_the_arrays() -> None:
    Xb = X.copy()
    Xb[2, 3, 1] = 1e-300
    with pytest.raises(
        MdcertError,
        match=r"token 3 of example 2 is padding \(lengths\[2\] = 2\) but X\[2, 3\] is nonzero",
    ):
        check_lengths([2, 2, 2], Xb)
    assert check_lengths([2, 2, 4], Xb).tolist() == [2, 2, 4]


def test_full_lengths_are_none_and_integral_floats_are_accepted() -> None:
    assert check_lengths(None, X) is None
    assert check_lengths([4, 4, 4], X) is None
    out = check_lengths(np.array([2.0, 3.0, 4.0]), X)
    assert out.dtype == np.int64 and out.tolist() == [2, 3, 4] and not out.flags.writeable


def test_provenance_is_a_json_copy() -> None:
    given = {"source": {"file": "a.csv", "sha256": "00"}, "seed": 3, "selection": [1, 2]}
    out = check_provenance(given)
    given["seed"] = 4
    assert out == {"source": {"file": "a.csv", "sha256": "00"}, "seed": 3, "selection": [1, 2]}
    assert check_provenance(None) is None
    assert provenance_text({"b": 1, "a": 2}) == '{"a":2,"b":1}'


@pytest.mark.parametrize(
    ("value", "pattern"),
    [
        ([1, 2], r"provenance must be a JSON object \(a dict\), got list"),
        ("text", r"provenance must be a JSON object"),
        ({"s": {1, 2}}, r"provenance must be JSON-serializable"),
        ({"x": float("nan")}, r"provenance must be JSON-serializable"),
        ({"big": "x" * MAX_PROVENANCE_CHARS}, r"at most 1048576"),
    ],
)
def test_bad_provenance_is_refused(value, pattern) -> None:
    with pytest.raises(MdcertError, match=pattern):
        check_provenance(value)


def test_deeply_nested_provenance_is_refused_not_a_crash() -> None:
    deep: dict = {}
    cur = deep
    for _ in range(100_000):
        cur["a"] = {}
        cur = cur["a"]
    with pytest.raises(MdcertError, match="JSON-serializable"):
        check_provenance(deep)


def test_numeric_array_is_read_only_float64() -> None:
    out = numeric_array("v", [1, 2], 1)
    assert out.dtype == np.float64 and not out.flags.writeable
    with pytest.raises(MdcertError, match=r"v must have 1 dimensions"):
        numeric_array("v", [[1]], 1)
