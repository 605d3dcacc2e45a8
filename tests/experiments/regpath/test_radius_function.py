"""The decoder-radius coupling r = f(R) (experiments/radius_function.py)."""

from __future__ import annotations

import math

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from certify import MdcertError
from experiments.regpath.radius_function import parse_radius_function


@pytest.mark.parametrize(
    "text, R, expected",
    [
        ("R", 7.0, 7.0),
        ("sqrt(R)", 16.0, 4.0),
        ("2*log(R)+1", math.e, 3.0),
        ("R^2/10", 10.0, 10.0),
        ("R**0.5 * pi", 4.0, 2 * math.pi),
        ("-(-R)", 3.0, 3.0),
        ("ln(R) + log10(R) + log2(R) + exp(0) + abs(-1)", 1.0, 2.0),
    ],
)
def test_radius_function_evaluates_whitelisted_expressions(text, R, expected) -> None:
    assert parse_radius_function(text)(R) == pytest.approx(expected)


@pytest.mark.parametrize(
    "text, match",
    [
        ("", "empty"),
        ("   ", "empty"),
        ("__import__('os')", "function call"),
        ("R.real", "Attribute"),
        ("lambda: 1", "Lambda"),
        ("x + R", "name 'x'"),
        ("R if R else 1", "IfExp"),
        ("[R]", "List"),
        ("sqrt(R, 2)", "function call"),
        ("open('f')", "function call"),
        ("R +", "not an arithmetic"),
        ("'R'", "constant"),
        ("R // 2", "FloorDiv"),
        ("True", "constant"),
        ("R" * 201, "too long"),
    ],
)
def test_radius_function_rejects_anything_else(text, match) -> None:
    with pytest.raises(MdcertError, match=match):
        parse_radius_function(text)


@pytest.mark.parametrize(
    "text, R, match",
    [
        ("-R", 2.0, "finite and positive"),
        ("log(R)", 1.0, "finite and positive"),
        ("1/(R-2)", 2.0, "cannot be evaluated"),
        ("log(R-5)", 2.0, "cannot be evaluated"),
        ("exp(R)", 1000.0, "cannot be evaluated|finite"),
        ("(-R)**0.5", 4.0, "not real"),
        ("sqrt((-R)**0.5)", 4.0, "not real"),
        ("-(-R)**0.5", 4.0, "not real"),
    ],
)
def test_radius_function_values_must_be_positive_and_finite(text, R, match) -> None:
    with pytest.raises(MdcertError, match=match):
        parse_radius_function(text)(R)


@settings(deadline=None, max_examples=60)
@given(st.text(alphabet="R0123456789.+-*/^() sqrtlogexpabie_[]'\",:", max_size=30))
@example("R**R**R**R")
@example("exp(exp(exp(R)))")
@example("(" * 50 + "R" + ")" * 50)
@example("(-R)**0.5")
def test_radius_function_never_fails_otherwise(text) -> None:
    """Any text either parses into a function whose values are finite positive floats, or gives MdcertError."""
    try:
        f = parse_radius_function(text)
    except MdcertError:
        return
    for R in (1.0, 10.0, 1000.0):
        try:
            value = f(R)
        except MdcertError:
            continue
        assert math.isfinite(value) and value > 0
