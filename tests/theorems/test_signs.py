"""Tests of theorems.signs: certified signs and realness of exact numbers (exact zero, acb balls)."""

from __future__ import annotations

import pytest
import sympy as sp

from theorems.signs import exact_acb, not_real, real_ball, sign_at


@pytest.mark.parametrize(
    "x,sign",
    [
        (sp.Integer(0), 0),
        (sp.log(2) - sp.Rational(69, 100), 1),
        (sp.pi - sp.Rational(355, 113), -1),  # 2.7e-7 apart: the ball decides
        (sp.sqrt(2) ** 2 - 2, 0),
        (sp.exp(-100), 1),
        (sp.erfc(10) - sp.Rational(2, 10**45), 1),  # erfc(10) = 2.088e-45
        (-sp.atanh(sp.Rational(1, 2)), -1),
    ],
)
def test_sign_at(x, sign):
    assert sign_at(x) == sign


def test_sign_unknown_when_not_certified():
    assert sign_at(sp.log(2) + sp.log(3) - sp.log(6)) in (0, None)  # a zero sympy does not see


@pytest.mark.parametrize(
    "x",
    [
        sp.I,
        1 + sp.I,
        sp.Integer(-1) ** sp.Rational(1, 3),
        sp.log(-2 * sp.exp(1) / sp.exp(1)),
        sp.asin(2),
        sp.acosh(0),
    ],
)
def test_not_real_is_certified(x):
    assert not_real(x) and real_ball(x) is None


def test_real_ball_encloses():
    from flint import arb

    assert real_ball(sp.pi**2 / 6).overlaps(arb.pi() ** 2 / 6)
    assert real_ball(sp.Rational(1, 3)).overlaps(exact_acb(sp.Rational(1, 3), 128).real)
    assert real_ball(sp.Rational(1, 3)).rad() < arb(2) ** -100  # 128 bits, not 53
    assert exact_acb(sp.zeta(3), 128) is None  # unsupported: no ball
