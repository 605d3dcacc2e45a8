"""Exact p parsing and exact dyadic views of float64 data (docs/theory.md sections 1 and 4)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from certify.errors import MdcertError
from certify.exact import (
    conjugate,
    decimal_digits,
    dyadic,
    format_exact,
    format_fraction,
    format_g,
    format_sci,
    parse_fraction,
    parse_nonnegative,
    parse_p,
)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("1.1", Fraction(11, 10)),
        (1.1, Fraction(11, 10)),
        ("7/4", Fraction(7, 4)),
        (3, Fraction(3)),
        (Fraction(3, 2), Fraction(3, 2)),
        (" 1.75 ", Fraction(7, 4)),
        ("1.0001", Fraction(10001, 10000)),
    ],
)
def test_parse_p_is_exact(value, expected) -> None:
    assert parse_p(value) == expected


@pytest.mark.parametrize(
    ("value", "pattern"),
    [
        ("1", r"p > 1"),
        (1, r"p > 1"),
        ("0.5", r"p > 1"),
        (-2, r"p > 1"),
        ("inf", r"finite"),
        (float("inf"), r"finite"),
        (float("nan"), r"finite"),
        ("nan", r"finite"),
        ("abc", r"invalid p"),
        (None, r"invalid p"),
        (True, r"invalid p"),
        ("1/0", r"invalid p"),
    ],
)
def test_parse_p_rejects_bad_values(value, pattern) -> None:
    with pytest.raises(MdcertError, match=pattern):
        parse_p(value)


def test_conjugate_and_fraction_strings() -> None:
    assert conjugate(Fraction(7, 4)) == Fraction(7, 3)
    assert format_fraction(Fraction(3)) == "3/1"
    assert parse_fraction(format_fraction(Fraction(-22, 7))) == Fraction(-22, 7)
    with pytest.raises(MdcertError, match="num/den"):
        parse_fraction("x")


finite = st.floats(allow_nan=False, allow_infinity=False, width=64)


@settings(max_examples=60)
@given(arrays(np.float64, st.integers(1, 12), elements=finite))
@example(np.array([0.0, 0.0]))
@example(np.array([5e-324, 1.7976931348623157e308]))
@example(np.array([0.3, -1e-3, 2.5]))
def test_dyadic_is_exact(values: np.ndarray) -> None:
    d = dyadic(values)
    for i, x in enumerate(values):
        assert d.fraction(i) == Fraction(float(x))


def test_dyadic_uses_int64_when_it_fits() -> None:
    x = np.random.default_rng(0).standard_normal((4, 5))
    d = dyadic(x)
    assert d.ints.dtype == np.int64
    np.testing.assert_array_equal(d.to_float(), x)
    assert d.to_fmpz_mat().nrows() == 4


def test_dyadic_rejects_non_finite() -> None:
    with pytest.raises(MdcertError, match="NaN or Inf"):
        dyadic(np.array([1.0, math.nan]))


def test_parse_nonnegative():
    assert parse_nonnegative("0.1", "x") == Fraction(1, 10)
    assert parse_nonnegative(0.1, "x") == Fraction(1, 10)
    assert parse_nonnegative("3/4", "x") == Fraction(3, 4)
    with pytest.raises(MdcertError, match="finite"):
        parse_nonnegative(float("nan"), "x")
    with pytest.raises(MdcertError):
        parse_nonnegative(True, "x")


@settings(max_examples=200, deadline=None)
@given(num=st.integers(1, 10**30), k=st.integers(-50, 3000))
@example(num=1, k=1000)
@example(num=5, k=325)
def test_decimal_digits_is_exact(num, k) -> None:
    x = Fraction(num, 10**k) if k >= 0 else Fraction(num * 10**-k)
    n = decimal_digits(x)
    assert x <= Fraction(10) ** -n and x > Fraction(10) ** -(n + 1)


@pytest.mark.parametrize(
    ("x", "text"),
    [
        (Fraction(1, 10**1000), "1.00e-1000"),
        (Fraction(5, 10**324), "5.00e-324"),
        (Fraction(10**400 * 3), "3.00e+400"),
        (Fraction(0), "0"),
        (Fraction(-2, 3), "-6.67e-01"),
        (Fraction(3, 10**5), "3.00e-05"),
        (Fraction(428, 100), "4.28e+00"),
    ],
)
def test_format_sci_has_no_float_range(x, text) -> None:
    assert format_sci(x) == text


@pytest.mark.parametrize(
    ("p", "text"),
    [
        (Fraction(3), "3"),
        (Fraction(2), "2"),
        (Fraction(7, 4), "1.75"),
        (Fraction(11, 10), "1.1"),
        (Fraction(4, 3), "4/3"),
        (Fraction(10) ** 400, "1e400"),
        (Fraction(10**20), "1e20"),
        (Fraction(123456789, 1000), "123456.789"),
        (Fraction(1, 10**12), "1e-12"),
        (1 + Fraction(1, 2**60), "1152921504606846977/1152921504606846976"),
        (Fraction(10**60 + 1), "~1.00000000000e+60"),
    ],
)
def test_format_p_is_what_a_user_reads(p, text) -> None:
    """Whole p prints as ``3`` (never ``3/1``), terminating decimals as decimals, others as num/den."""
    assert format_exact(p) == text
    if not text.startswith("~"):
        assert Fraction(text) == p  # exact, never rounded


@settings(max_examples=200, deadline=None)
@given(num=st.integers(1, 10**25), den=st.integers(1, 10**12))
@example(num=7, den=4)
@example(num=3, den=1)
def test_format_p_round_trips_exactly(num, den) -> None:
    text = format_exact(Fraction(num, den))
    assert not text.endswith("/1") and (
        text.startswith("~") or Fraction(text) == Fraction(num, den)
    )


@settings(max_examples=300, deadline=None)
@given(
    x=st.floats(allow_nan=False, allow_infinity=False, min_value=-1e300, max_value=1e300),
    digits=st.sampled_from([3, 6, 12]),
)
@example(x=1e-05, digits=6)
@example(x=123456.0, digits=6)
@example(x=1234567.0, digits=6)
def test_format_g_is_printf_g_without_floats(x, digits) -> None:
    """On a float (an exact dyadic) ``format_g`` agrees with C's correctly rounded ``%g``."""
    assert format_g(Fraction(x), digits) == f"{x + 0.0:.{digits}g}"  # + 0.0: Fraction(-0.0) is 0


@pytest.mark.parametrize(
    ("x", "text"),
    [
        (Fraction(1, 10**400), "1e-400"),
        (Fraction(10**400, 3), "3.33333e+399"),
        (Fraction(1, 3), "0.333333"),
        (Fraction(3, 10**5), "3e-05"),
        (Fraction(0), "0"),
    ],
)
def test_format_g_beyond_the_float_range(x, text) -> None:
    assert format_g(x) == text


def test_ldexp_array_of_integers_beyond_the_float_range() -> None:
    """Data from 5e-324 to 1 has 1075-bit integers: ``astype(float64)`` raised OverflowError and
    ``mdcert certify`` exited 70 (found by the certificate fuzzer, issue 11)."""
    from certify.exact import ldexp_array

    ints = np.array([2**1074, -(2**1074) - 1, 1, 0, 2**2200], dtype=object)
    out = ldexp_array(ints, -1074)
    assert out.tolist() == [1.0, -1.0, 5e-324, 0.0, math.inf]
    X = np.array([[[1.0, 0.5], [0.0, -5e-324]], [[-1.0, -0.5], [0.0, 0.0]]])
    d = dyadic(X)
    assert np.array_equal(d.to_float(), X)
    from certify import AttentionProblem

    rows = (
        AttentionProblem(X, np.ones(2), np.ones((2, 2)), np.array([1.0, 0.0]))
        .decoder_constraints([0, 0])
        .rows()
    )
    assert np.array_equal(rows, [[1.0, 0.5], [-1.0, -0.5]])
