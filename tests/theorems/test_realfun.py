"""Tests of theorems.realfun: structural proofs of real-valued continuity, and exact refutations."""

from __future__ import annotations

import pytest
import sympy as sp

from theorems.realfun import (
    breakpoints,
    jump,
    jump_candidates,
    real_continuous,
    smooth_fragment,
    witness,
)

u = sp.Symbol("u", real=True)
S = lambda t: sp.sympify(t, locals={"u": u})  # noqa: E731


@pytest.mark.parametrize(
    "text",
    [
        "log(1 + exp(-u))",
        "exp(-u)",
        "-u**3",
        "sqrt(u**2 + 1)",
        "Abs(u - 1)",
        "Max(0, 1 - u)",
        "atan(u) + erf(u)",
        "1/(1 + u**2)",
        "2**u",
        "Abs(u)**(2/3)",
        "Piecewise((-u, u < 0), (-u - u**2, True))",
        "E - u",
    ],
)
def test_proved_real_continuous(text):
    assert real_continuous(S(text), u)


@pytest.mark.parametrize(
    "text",
    [
        "sqrt(u)",
        "u**(1/3)",
        "log(u)",
        "1/u",
        "tan(u)",
        "asin(u)",
        "acosh(u)",
        "Abs(sqrt(u - 1))",
        "floor(u)",
        "frac(u)",
        "sign(u)",
        "Heaviside(u)",
        "Piecewise((-u, u < 0), (1 - u, True))",
        "u**u",
        "exp(-u) + I",
        "Piecewise((-u, u < 0), (-2*u, u > 0))",
        "Piecewise((-u, u < 1), (-u, u > 2))",
    ],
)
def test_not_proved(text):
    assert not real_continuous(S(text), u)


def test_jumps_ok_for_derivatives():
    assert not real_continuous(S("sign(u - 1)"), u)
    assert real_continuous(S("sign(u - 1)"), u, jumps_ok=True)
    assert not real_continuous(S("sign(sin(u))"), u, jumps_ok=True)  # infinitely many jumps


def test_smooth_fragment_and_breakpoints():
    assert smooth_fragment(S("log(1 + exp(-u))")) and not smooth_fragment(S("Max(0, u)"))
    assert breakpoints(S("Abs(u - 1) + Max(u, 2*u)"), u) == [0, 1]
    assert breakpoints(S("floor(u)"), u) is None
    assert breakpoints(S("Abs(sin(u))"), u) is None


def test_witness_and_jump():
    assert witness(S("sqrt(u)"), u, ["1", "-1"])[2] == "not real"
    assert witness(S("1/u"), u, ["0"])[2] == "not defined"
    assert witness(S("u**2"), u, ["-1", "0", "1"]) is None
    expr = S("floor(u)")
    c, left, value, right = jump(expr, u, jump_candidates(expr, u))
    assert (left, value, right) == (c - 1, c, c)
    assert jump(S("Abs(u)"), u, [0]) is None
