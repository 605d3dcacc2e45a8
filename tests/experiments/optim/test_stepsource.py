"""Tests of the C source of the streaming step kernel (`experiments.optim.stepsource`).

The kernel itself is tested against inductor's loop bit for bit in test_native.py; here: the shared
operation orders (`square_and_multiply`, `horner`) against exact arithmetic, and the bodies that
`c_power` writes for each recipe."""

from __future__ import annotations

import operator
from fractions import Fraction

import pytest
import torch

from experiments.optim.fused import _recipe
from experiments.optim.stepsource import (
    CBRT_SERIES,
    INV_CBRT_SERIES,
    NativeUnavailable,
    c_power,
    horner,
    square_and_multiply,
    step_source,
)


@pytest.mark.parametrize("m", [0, 1, 2, 3, 7, 10, 17])
def test_square_and_multiply_is_the_power(m):
    got = square_and_multiply(Fraction(3, 2), m, operator.mul)
    assert got == (None if m == 0 else Fraction(3, 2) ** m)


def test_square_and_multiply_order_is_the_one_both_kernels_use():
    """a^10: the squares a^2, a^4, a^8 first, each odd bit multiplied in as it comes (the order is
    what makes the C kernel and inductor's loop round alike)."""
    got = square_and_multiply("a", 10, lambda x, y: f"({x}*{y})")
    assert got == "((a*a)*(((a*a)*(a*a))*((a*a)*(a*a))))"


def test_horner_is_the_truncated_binomial_series():
    d = Fraction(1, 10)
    for coefs, expo in ((INV_CBRT_SERIES, Fraction(-1, 3)), (CBRT_SERIES, Fraction(-2, 3))):
        exact = [Fraction(c).limit_denominator(1000) for c in coefs]
        value = 1 + d * horner(d, tuple(exact), lambda x, y, c: x * y + Fraction(c))
        series, term = Fraction(1), Fraction(1)
        for k, c in enumerate(exact, start=1):
            term = term * (expo - k + 1) / k
            assert c == term  # the coefficients are the binomial ones
            series += c * d**k
        assert value == series


def test_c_power_bodies_name_the_recipe():
    assert "sqrt(t)" in c_power(_recipe(Fraction(1, 2)), torch.float64)
    assert "sqrtf(t)" in c_power(_recipe(Fraction(1, 2)), torch.float32)
    assert "y3" in c_power(_recipe(Fraction(4, 3)), torch.float32)
    assert "y3" not in c_power(_recipe(Fraction(4, 3)), torch.float64)  # float64: no division
    body = c_power(_recipe(Fraction(10)), torch.float32)
    assert "y3" not in body and "sqrt" not in body
    assert "mdcert_step" in step_source(_recipe(Fraction(4, 3)), torch.float32)
    with pytest.raises(NativeUnavailable, match="no exp2 recipe"):
        c_power(_recipe(Fraction(7, 5)), torch.float32)
