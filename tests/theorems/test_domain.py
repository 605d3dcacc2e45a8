"""Tests of theorems.domain: domain conditions of a loss as written, proved on R or refuted at an exact point."""

from __future__ import annotations

import pytest
import sympy as sp

from tests.theorems.loss_trees import PINNED_TRAPS
from theorems.domain import (
    Kind,
    conditions,
    domain_check,
    evaluated,
    freeze,
    set_points,
    thaw,
    value_at,
)
from theorems.loss_parse import parse_written

U = sp.Symbol("u", real=True)


def written(text):
    expr, _, _ = parse_written(text)
    return expr


# each trap of issue 20 with the exact point (and the node) that breaks it
TRAPS = [
    ("-exp(log(u))", r"l\(0\) = zoo is not defined \(log\(u\)"),
    ("-u**2/u", r"l\(0\) = zoo is not defined \(1/u divides by zero"),
    ("-u*(u/u)", r"l\(0\) = zoo is not defined \(1/u divides by zero"),
    ("-u + 0*log(u)", r"l\(0\) = zoo is not defined \(log\(u\)"),
    ("-u + log(u) - log(u)", r"l\(0\) = zoo is not defined \(log\(u\)"),
    ("-sqrt(u)**2", r"l\(-1\) is not defined: sqrt\(u\) = I at u = -1 is not real"),
    ("-u + sin(u)/u - sin(u)/u", r"l\(0\) = zoo is not defined \(1/u divides by zero"),
    ("-u + (u - u)/u", r"l\(0\) = zoo is not defined \(1/u divides by zero"),
    ("-u + log(u)**0 - 1", r"l\(0\) = zoo is not defined \(log\(u\)"),
    ("-u + u/u", r"l\(0\) = zoo is not defined \(1/u divides by zero"),
    ("exp(-u)*exp(log(1/u))*u", r"l\(0\) = zoo is not defined \(1/u divides by zero"),
    ("-u + exp(log(u)) - u", r"l\(0\) = zoo is not defined \(log\(u\)"),
    (
        "Piecewise((-u, u < 0), (-2*u, u > 0))",
        r"l\(0\) is not defined \(no piece of .* applies at u = 0\)",
    ),
    (
        "Piecewise((-u, u < 1), (-u, u > 2))",
        r"l\(1\) is not defined \(no piece of .* applies at u = 1\)",
    ),
    (
        "-u + 0*log(-1)",
        r"log\(-1\) = I\*pi at u = 0 is not real",
    ),  # a constant subtree is examined too
    ("-u + 0*(u**2 - 2*u + 1)**(-1)", r"l\(1\) = zoo is not defined"),
    ("-u + tan(u)", r"l\(pi/2\) = zoo is not defined"),
    ("-u + asin(u)", r"asin\(2\) is not real"),
    ("-u + atanh(u)", r"l\(1\) = oo is not defined"),
    ("-u + (-8)**(1/3)", r"is not real"),
    ("-u + Max(u + 0*log(u), u + 1)", r"log\(u\)"),  # Max keeps both arguments as written
]


@pytest.mark.parametrize("text,why", TRAPS)
def test_traps_are_refuted_at_an_exact_point(text, why):
    rep = domain_check(written(text), U)
    assert rep.status == "fails" and rep.point is not None, rep
    assert pytest.importorskip("re").search(why, rep.detail), rep.detail


@pytest.mark.parametrize(
    "text",
    [
        "log(1 + exp(-u))",
        "exp(-u)",
        "-u",
        "1/(1 + exp(u))",
        "-u + log(u**2 + 1)",
        "sqrt(u**2 + 1)",
        "-u + 0*exp(u)",
        "-u + exp(u)/exp(u)",
        "2**u",
        "log(exp(u))",
        "Piecewise((-u, u < 0), (-u - u**2, True))",
        "Piecewise((-u, u < 0), (-u, u >= 0))",
        "acos(tanh(u))",
        "-u + atanh(tanh(u)/2)",
        "(u**2 + 1)**(-1/2)",
    ],
)
def test_defined_everywhere_is_proved(text):
    assert domain_check(written(text), U).status == "holds"


def test_every_pinned_trap_fails():
    assert all(
        domain_check(written(t), U).status == "fails" for t in PINNED_TRAPS[:12] + PINNED_TRAPS[14:]
    )


def test_undecided_when_neither_proved_nor_refuted():
    # sin(u) + 2 - 1/100 > 0 is true but beyond sympy's assumptions; no point refutes it
    rep = domain_check(written("-u + log(sin(u) + 199/100)"), U)
    assert rep.status in ("undecided", "holds")
    assert rep.status == "undecided" or "proved on R" in rep.detail


def test_conditions_as_written():
    kinds = {
        (c.kind, str(c.g)) for c in conditions(written("-u + u/u + log(u**2 + 1) + sqrt(u + 2)"), U)
    }
    assert (Kind.NONZERO, "u") in kinds and (Kind.POSITIVE, "u**2 + 1") in kinds
    assert (Kind.NONNEGATIVE, "u + 2") in kinds
    assert any(
        c.kind is Kind.COVERED for c in conditions(written("Piecewise((-u, u < 0), (-u, True))"), U)
    )


def test_piece_conditions_only_where_the_piece_is_used():
    # log(u) is only evaluated for u > 1, where it is defined
    assert (
        domain_check(written("Piecewise((-u, u <= 1), (-u - log(u), True))"), U).status == "holds"
    )


def test_value_at_as_written():
    assert value_at(written("-u + u/u"), U, sp.Integer(2)).value == -1
    pv = value_at(written("-u + u/u"), U, sp.Integer(0))
    assert pv.status == "undefined" and "divides by zero" in pv.why
    pv = value_at(written("-u + sqrt(u)"), U, sp.Integer(-4))
    assert pv.status == "not real" and pv.value == 4 + 2 * sp.I
    assert value_at(written("Piecewise((1, u < 0))"), U, sp.Integer(1)).status == "undefined"


def test_evaluated_is_sympys_simplified_form():
    assert evaluated(written("-u*(u/u)")) == -U
    assert str(written("-u*(u/u)")) != str(-U)


def test_set_points():
    assert set_points(sp.Interval.open(-sp.oo, 0)) == [0, -1]
    assert sp.pi / 2 in set_points(sp.solveset(sp.Eq(sp.cos(U), 0), U, sp.S.Reals))
    assert set_points(sp.S.Reals)[0] == 0


@pytest.mark.parametrize(
    "text",
    PINNED_TRAPS
    + (
        "hinge",
        "Piecewise((-u, u < 0), (-u - u**2, True))",
        "-u - Heaviside(u)",
        "Max(u + 0*log(u), u + 1)",
        "pi - E*u",
    ),
)
def test_freeze_thaw_keeps_the_tree_as_written(text):
    import pickle

    tree = written(text)
    assert thaw(pickle.loads(pickle.dumps(freeze(tree)))) == tree
