"""Tests of theorems.balls: exact conversions and outward-rounded enclosures."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
from flint import arb, ctx

from theorems.balls import abs_pow, arb_array, arb_dyadic, arb_fraction, arb_of_float, enclosure


def test_exact_conversions():
    for x in [0.1, -3.5, 1e-300, 5e-324, 1.7976931348623157e308, 0.0]:
        b = arb_of_float(x)
        assert b.is_exact()
        lo, hi = enclosure(b)
        assert lo == hi == Fraction(x)
    assert arb_dyadic(3, -5).is_exact() and enclosure(arb_dyadic(3, -5))[0] == Fraction(3, 32)
    assert arb_fraction(Fraction(3, 8)).is_exact()
    lo, hi = enclosure(arb_fraction(Fraction(1, 10)))
    assert lo < Fraction(1, 10) < hi
    arr = arb_array(np.array([[0.5, -0.25]]))
    assert arr.shape == (1, 2) and all(a.is_exact() for a in arr.ravel())


def test_abs_pow_handles_balls_containing_zero():
    with ctx.workprec(64):
        e = arb(3) / 4
        z = arb(0).union(arb(1) / 100)
        r = abs_pow(z, e)
        assert not r.is_nan() and r.lower() <= 0 and r.upper() >= (arb(1) / 100) ** e
        assert abs_pow(arb(0), e).is_zero()
        assert abs(abs_pow(arb(-16), arb(1) / 2) - 4) < arb(1) / 10**15


def test_workprec_restores_on_exit_and_on_error():  # what the predicates rely on
    old = ctx.prec
    with ctx.workprec(300):
        assert ctx.prec == 300
    assert ctx.prec == old
    try:
        with ctx.workprec(200):
            raise RuntimeError
    except RuntimeError:
        pass
    assert ctx.prec == old


def test_enclosure_of_nonfinite_is_unbounded():
    assert enclosure(arb("nan")) == (None, None)
