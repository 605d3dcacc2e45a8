"""certify.exactfloat: every input number converts to float64 exactly or is refused in one line naming the
first entry that would round (issue 21 item 1)."""

from __future__ import annotations

import json
import re
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from certify.errors import MdcertError
from certify.exactfloat import exact_float64, json_float64, json_indices

B = 2**53
LONG = np.finfo(np.longdouble).nmant > np.finfo(np.float64).nmant  # an 80- or 128-bit longdouble


@pytest.mark.parametrize(
    ("value", "pattern"),
    [
        (
            np.array([[1, B + 1]], dtype=np.int64),
            r"^X\[0, 1\] = 9007199254740993 \(int64\) would round to 9007199254740992\.0",
        ),
        (
            np.array([-3, -(3 * B + 3)], dtype=np.int64),
            r"^X\[1\] = -27021597764222979 \(int64\) would round",
        ),
        (
            np.array([2**64 - 1], dtype=np.uint64),
            r"X\[0\] = 18446744073709551615 \(uint64\) would round",
        ),
        ([1, 2.5, B + 1], r"^X\[2\] = 9007199254740993 would round"),
        ([[1.0, 2**1100]], r"^X\[0, 1\] = .* is beyond the float64 range"),
        ([Decimal("0.1")], r"^X\[0\] = 0\.1 would round to 0\.1 in float64"),
        ([Fraction(1, 3)], r"^X\[0\] = 1/3 would round"),
        ([1.0, True], r"^X\[1\] = true is a boolean where a number is expected"),
        ([[1.0], [2.0, 3.0]], r"ragged"),
        (["a"], r"X must be a numeric array of real numbers.*X\[0\] = 'a' is not a number"),
    ],
)
def test_values_float64_cannot_hold_are_refused_naming_the_first(value, pattern) -> None:
    with pytest.raises(MdcertError, match=pattern) as exc:
        exact_float64("X", value)
    assert "\n" not in str(exc.value)
    assert re.search(r"scale the data|a number|ragged|not a number", str(exc.value))


@pytest.mark.skipif(not LONG, reason="longdouble is float64 on this platform")
def test_longdouble_tokens_2_to_the_minus_60_apart_are_refused() -> None:
    X = np.array([1, 1], dtype=np.longdouble)
    X[1] += np.ldexp(np.longdouble(1), -60)
    with pytest.raises(
        MdcertError, match=r"X\[1\] = .* \(float(96|128)\) would round to 1\.0 in float64"
    ):
        exact_float64("X", X)
    assert exact_float64("X", np.array([0.5, 3.0], dtype=np.longdouble)).tolist() == [0.5, 3.0]


def test_exact_values_pass_unchanged() -> None:
    ints = [0, -B, B, 2**60, -(2**63), 3 * 2**62, 2**1000]
    assert [int(f) for f in exact_float64("X", ints)] == ints
    assert exact_float64("X", np.array([-(2**63), 2**62], dtype=np.int64)).tolist() == [
        -(2.0**63),
        2.0**62,
    ]
    assert exact_float64("X", np.array([2**64 - 2**11], dtype=np.uint64)).tolist() == [
        2.0**64 - 2.0**11
    ]
    assert exact_float64("X", np.float32([0.1])).tolist() == [float(np.float32(0.1))]
    mixed = [Decimal("0.5"), Fraction(3, 4), np.float16(0.1)]
    assert exact_float64("X", mixed).tolist() == [0.5, 0.75, float(np.float16(0.1))]
    assert np.isnan(exact_float64("X", [float("nan")])[0])  # non-finite: the caller's message


@pytest.mark.parametrize(
    ("text", "ok"),
    [
        ("0.1", True),
        ("0.10000000000000001", True),
        ("1.000000000000000056e-01", True),
        ("1e23", True),
        ("0.30000000000000004", True),
        ("9007199254740992", True),
        ("9007199254740993", False),
        ("9007199254740993.0", False),
        ("0.1000000000000000000000001", False),
        ("100000000000000000000000", False),
        ("1e400", False),
        ("1e-400", False),
        ("-0.0", True),
        ("5e-324", True),
    ],
)
def test_json_literals_are_their_float64_correctly_rounded(text, ok) -> None:
    value = json.loads(f"[{text}]", parse_float=Decimal, parse_int=int)
    if ok:
        assert json_float64("X", value)[0] == float(text)
    else:
        with pytest.raises(MdcertError, match=r"^X\[0\] = "):
            json_float64("X", value)


def test_json_indices_keep_integers_and_refuse_booleans() -> None:
    assert json_indices("alpha", [0, Decimal("2.0"), 1]) == [0, 2.0, 1]
    with pytest.raises(
        MdcertError, match=r"alpha\[1\] = true is a boolean where an integer is expected"
    ):
        json_indices("alpha", [0, True])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(-(2**63), 2**63 - 1), min_size=1, max_size=6))
@example([1, B + 1]).via("issue 21 reproducer 1")
@example([-3, -(3 * B + 3)]).via("issue 21 reproducer 1")
@example([B + 1, B]).via("issue 21 reproducer 2")
@example([-(2**63), 2**63 - 1])
def test_no_accepted_int64_differs_from_its_stored_value(ints) -> None:
    arr = np.array(ints, dtype=np.int64)
    try:
        out = exact_float64("X", arr)
    except MdcertError:
        assert any(int(float(k)) != k for k in ints)  # refused only when something would round
        return
    assert [int(f) for f in out] == ints


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(-(2**80), 2**80), min_size=1, max_size=6))
@example([9007199254740993, 9007199254740992]).via("issue 21: JSON integers")
def test_no_accepted_json_integer_differs_from_its_stored_value(ints) -> None:
    parsed = json.loads(json.dumps(ints), parse_float=Decimal, parse_int=int)
    try:
        out = json_float64("X", parsed)
    except MdcertError:
        assert any(int(float(k)) != k for k in ints)
        return
    assert [int(f) for f in out] == ints


@pytest.mark.skipif(not LONG, reason="longdouble is float64 on this platform")
@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.floats(-1e300, 1e300), st.integers(0, 80), st.integers(-1, 1)),
        min_size=1,
        max_size=5,
    )
)
@example([(1.0, 60, 1)]).via("issue 21: tokens 2^-60 apart")
def test_no_accepted_longdouble_differs_from_its_stored_value(parts) -> None:
    arr = np.array(
        [np.longdouble(x) + s * np.ldexp(np.longdouble(abs(x) or 1.0), -e) for x, e, s in parts]
    )
    try:
        out = exact_float64("X", arr)
    except MdcertError:
        assert any(np.longdouble(float(v)) != v for v in arr)
        return
    assert all(np.longdouble(f) == v for f, v in zip(out, arr))


@settings(max_examples=200, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False), st.integers(1, 25))
def test_json_decimals_of_any_printed_precision_read_back_or_are_refused(x, digits) -> None:
    text = f"{x:.{digits}e}"
    try:
        f = json_float64("X", [Decimal(text)])[0]
    except MdcertError:
        assert float(text) != x  # x's own digits always read back
        return
    assert Decimal(text) == Decimal(f) or f"{f:.{digits}e}" == text
