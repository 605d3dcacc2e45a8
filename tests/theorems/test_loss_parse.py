"""Tests of theorems.loss_parse: the bounds checked before sympy sees a loss expression."""

from __future__ import annotations

import time

import pytest
import sympy as sp

from certify.errors import MdcertError
from theorems.loss_parse import LIMITS, check_expr_bounds, parse_loss, parse_written

U = sp.Symbol("u", real=True)


@pytest.mark.parametrize(
    "text,match",
    [
        ("10**999*" * 33 + "u", r"numbers too large"),
        ("(u + 10**400)**1000", r"numbers too large"),
        ("1e5000 - u", r"numbers too large"),
        ("u" + "**u" * 29, r"tower of powers"),
        ("2**exp(u)", r"tower of powers"),
        ("9**9**9**9", r"tower of powers"),
        ("exp(" * 80 + "u" + ")" * 80, r"nests functions more than 6 deep|too long"),
        ("exp(" * 7 + "-u" + ")" * 7, r"nests functions more than 6 deep"),
        ("-" * 30 + "u", r"nested too deeply"),
        ("+".join(["u"] * 200), r"too large \(\d+ syntax nodes"),
        ("u" * 501, r"too long"),
        ("(" * 200000 + "u" + ")" * 200000, r"too long"),
        ("u**1001", r"constant exponent above 1000"),
        ("u.real", r"Attribute is not allowed"),
        ("u[0]", r"Subscript is not allowed"),
        ("lambda: u", r"Lambda is not allowed"),
        ("exp(x=u)", r"function call"),
        ("'u'", r"constant 'u'"),
        ("I*u", r"the name 'I'"),
        ("u^2", r"write powers as \*\*"),
        ("u == 1", r"this comparison"),
    ],
)
def test_refused_before_sympy(text, match):
    t0 = time.perf_counter()
    with pytest.raises(MdcertError, match=match):
        parse_loss(text)
    assert time.perf_counter() - t0 < 2


def test_decimals_are_exact_rationals():
    expr, u = parse_loss("0.1*u + 1e-400")
    assert expr == sp.Rational(1, 10) * u + sp.Rational(1, 10**400)


def test_bounds_on_api_expressions():
    with pytest.raises(MdcertError, match="too large"):
        check_expr_bounds(sp.Integer(10) ** 4000 * U, "x")
    with pytest.raises(MdcertError, match="nested too deeply"):
        e = U
        for _ in range(2 * LIMITS["depth"] + 1):
            e = sp.exp(e, evaluate=False)
        check_expr_bounds(e, "x")
    with pytest.raises(MdcertError, match="not allowed"):
        parse_loss(sp.exp(-U) + sp.I)
    with pytest.raises(MdcertError, match="not an expression"):
        parse_loss(sp.Eq(U, 1))


def test_symbol_named_u_is_the_real_variable():
    expr, u = parse_loss(-sp.Symbol("u"))
    assert expr == -u and u.is_real


def test_api_floats_become_exact_rationals_within_the_bounds():
    expr, u = parse_loss(sp.Float("1e400") * sp.exp(-sp.Symbol("u")))
    assert not expr.atoms(sp.Float) and expr.has(sp.exp)
    with pytest.raises(MdcertError, match="number too large"):
        parse_loss(sp.Float("1e99999") * sp.Symbol("u"))


@pytest.mark.parametrize(
    "text,simple",
    [
        ("-u*(u/u)", "-u"),
        ("-u + 0*log(u)", "-u"),
        ("-exp(log(u))", "-u"),
        ("-sqrt(u)**2", "-u"),
        ("-u + log(u)**0 - 1", "-u"),
        ("Max(u + 0*log(u), u + 1)", "u + 1"),
    ],
)
def test_written_form_is_kept(text, simple):
    """Issue 20: the check examines the tree as written; sympy's simplified form is returned beside it."""
    written, evaluated, u = parse_written(text)
    assert str(evaluated) == simple and written != evaluated
    assert written.has(sp.log) or written.has(sp.Pow)
    assert parse_loss(text)[0] == evaluated
