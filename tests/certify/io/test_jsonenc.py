"""`certify.io.jsonenc`: strict JSON from Fractions, numpy values, enums and non-finite floats; the
plain data it gives is what a JSON round trip gives back."""

from __future__ import annotations

import json
import math
from enum import Enum
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from certify.io.jsonenc import dumps, jsonable


class Color(str, Enum):
    RED = "red"


@pytest.mark.parametrize(
    "value, plain",
    [
        (math.nan, None),
        (math.inf, None),
        (-math.inf, None),
        (np.float32(np.nan), None),
        (np.float64(1.5), 1.5),
        (np.float32(0.25), 0.25),
        (np.int64(-3), -3),
        (np.bool_(True), True),
        (Fraction(3, 2), "3/2"),
        (Fraction(3), "3/1"),
        (Color.RED, "red"),
        ((1, (2.0, None)), [1, [2.0, None]]),
        (np.array([[1.0, np.inf], [np.nan, -0.5]]), [[1.0, None], [None, -0.5]]),
        (np.array(7), 7),
        (
            {2: "a", None: "b", True: "c", 0.5: "d", "k": np.nan},
            {"2": "a", "null": "b", "true": "c", "0.5": "d", "k": None},
        ),
    ],
)
def test_conversions(value, plain) -> None:
    assert jsonable(value) == plain
    assert json.loads(dumps(value)) == plain


def test_unknown_types_raise_or_go_to_default() -> None:
    with pytest.raises(TypeError, match="Path is not JSON serializable"):
        dumps({"p": Path("x")})
    assert dumps({"p": Path("x"), "s": {1, 2} and "ok"}, default=str) == '{"p": "x", "s": "ok"}'
    with pytest.raises(TypeError, match="object is not JSON serializable"):
        jsonable(object())


class Scalar:
    """A torch-like scalar: ``.item()`` gives a Python number (several elements: it raises)."""

    def __init__(self, *values: float) -> None:
        self.values = values

    def item(self) -> float:
        if len(self.values) != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        return self.values[0]


def test_scalars_with_item_are_their_item() -> None:
    assert jsonable({"loss": Scalar(0.5), "bad": Scalar(math.nan)}) == {"loss": 0.5, "bad": None}
    with pytest.raises(TypeError, match="Scalar is not JSON serializable"):
        jsonable(Scalar(1.0, 2.0))


def test_dumps_matches_json_on_plain_data() -> None:
    """For data json already writes, the text is json's own (outputs keep their bytes)."""
    data = {"b": [1, 2.5, "x", None, True], "a": {"n": -0.0, "big": 2**80}}
    for kw in ({}, {"indent": 1}, {"indent": 2, "sort_keys": True}, {"separators": (",", ":")}):
        assert dumps(data, **kw) == json.dumps(data, allow_nan=False, **kw)


_leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(),
    st.text(max_size=5),
    st.fractions(max_denominator=100),
    st.floats(width=32).map(np.float32),
    st.integers(-(2**63), 2**63 - 1).map(np.int64),
)
_values = st.recursive(
    _leaf,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.tuples(inner, inner),
        st.dictionaries(st.text(max_size=3), inner, max_size=4),
    ),
    max_leaves=20,
)


@given(_values)
@example({"x": [math.nan, (np.float32(np.inf), Fraction(-1, 3))]})
@example(np.int64(-(2**63)))
def test_jsonable_is_the_json_round_trip(value) -> None:
    def strict(token: str):
        raise AssertionError(f"non-standard JSON constant {token}")

    assert json.loads(dumps(value), parse_constant=strict) == jsonable(value)
