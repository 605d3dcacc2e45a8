"""Tests of theorems.loss: symbolic checks of the loss assumption (never a HOLDS sympy did not prove)."""

from __future__ import annotations

import threading

import pytest
import sympy as sp

from certify.errors import MdcertError
from theorems.loss import (
    NAMED_LOSSES,
    Q_DEC,
    Q_DIFF,
    Q_LIP,
    Q_REAL,
    analyse_loss,
    loss_admissible,
    parse_loss,
)
from theorems.verdict import Method, Verdict

U = sp.Symbol("u", real=True)


@pytest.mark.parametrize(
    "loss",
    [
        "logistic",
        "exponential",
        "linear",
        "linear-decreasing",
        "2 - 3*u",
        "1/(1 + exp(u))",
        "-u**3 - u",
        "-u + E",
        "pi - u",
        "erfc(u)",
        "-atan(u)",
        "-u + 0.1*u",
        "-exp(u)",
    ],
)
def test_admissible_losses_hold(loss):
    rep = loss_admissible(loss).check()
    assert rep.verdict is Verdict.HOLDS, rep.message
    assert all(e.method is Method.EXACT for e in rep.evidence)
    assert {e.quantity for e in rep.evidence} == {Q_REAL, Q_DIFF, Q_LIP, Q_DEC}


@pytest.mark.parametrize(
    "loss,why",
    [
        ("hinge", "kink at u = 1"),
        ("squared", "not decreasing"),
        ("Abs(u)", "kink at u = 0"),
        ("u", "not decreasing"),
        ("exp(-u)/u", "not defined or not continuous"),
        ("Max(0, 1 - u)**2", "not decreasing"),
        # strictly decreasing, but l' vanishes at a point: the check needs l' < 0 everywhere (docs/theory.md section 5.1)
        ("-u**3", r"l'\(0\) = 0 exactly"),
        ("-u + sin(u)", r"l'\(0\) = 0 exactly"),
        ("-u + log(u**2 + 1)", r"l'\(1\) = 0 exactly"),
        ("-u - log(u**2 + 1)", r"l'\(-1\) = 0 exactly"),
        # complex-valued on part of R: an exact point where l is not real
        ("-u + sqrt(u)", r"l\(-1\) = .*I is not real"),
        ("-u + sqrt(u - 10)", "is not real"),
        ("-u + u**(1/3)", "is not real"),
        ("-u + log(-exp(u))", r"I\*pi is not real"),
        ("-u + acosh(u)", "is not real"),
        ("-u + tan(u)", r"l\(pi/2\) = zoo is not defined"),
        # jumps: exact one-sided limits that differ
        ("-u + frac(u)", "at u = 0 the left limit"),
        ("-u - floor(u)/1000", "at u = 0 the left limit"),
        ("-u + ceiling(u)", "at u = 0 the left limit"),
        ("-u - Heaviside(u)", "at u = 0 the left limit"),
        ("-u + sign(u)", "at u = 0 the left limit"),
        # real (|sqrt(u-1)| = sqrt(|u-1|)) but flat between 1 and 2: refuted exactly, not via Abs of a complex
        ("-u + Abs(sqrt(u - 1))", "not decreasing"),
    ],
)
def test_inadmissible_losses_fail_with_exact_witness(loss, why):
    rep = loss_admissible(loss).check()
    assert rep.verdict is Verdict.FAILS, rep.message
    assert pytest.importorskip("re").search(why, rep.message), rep.message


def test_hinge_fails_both_parts():
    rep = loss_admissible("hinge").check()
    failed = {e.quantity for e in rep.evidence if e.implies() is Verdict.FAILS}
    assert failed == {Q_DIFF, Q_DEC}


@pytest.mark.parametrize(
    "loss",
    [
        "-u + sin(u)/2",  # admissible, but sympy proves neither the sign nor a witness
        "Piecewise((-u, u < 0), (-u - u**2, True))",
        "-u + sqrt(u**2 + 1)",
    ],
)
def test_undecided_when_sympy_cannot_decide(loss):
    rep = loss_admissible(loss).check()
    assert rep.verdict is Verdict.UNDECIDED
    assert "could not prove or refute" in rep.message


@pytest.mark.parametrize(
    "loss",
    [
        "exp(-u) + I",
        "-u + I",
        "-u + zoo",
        "-u + nan",
        "-u + oo",
        "-u + sqrt(-1)",
        "-u + log(-2)",
        "-u + x",
        "-u + S",
        "-u + Q",
        "N",
    ],
)
def test_non_real_constants_and_other_names_are_refused(loss):
    with pytest.raises(MdcertError):
        loss_admissible(loss).check()


@pytest.mark.parametrize(
    "expr",
    [
        sp.exp(-U) + sp.I,
        -U + sp.sqrt(-2),
        -U + sp.zoo,
        -U + sp.oo,
        -U + sp.nan,
        -U + sp.Symbol("v"),
    ],
)
def test_api_expressions_with_non_real_atoms_are_refused(expr):
    with pytest.raises(MdcertError):
        loss_admissible(expr).check()


def test_api_expression_that_is_complex_somewhere_never_holds():
    # an unevaluated root of a negative number hides the imaginary unit from the atom scan
    expr = -U + sp.Pow(-1 - U**2, sp.Rational(1, 2), evaluate=False)
    rep = loss_admissible(expr).check()
    assert rep.verdict is Verdict.FAILS and "not real" in rep.message


def test_api_float_coefficients_are_exact():
    rep = loss_admissible(sp.Float(0.5) * sp.exp(-U)).check()
    assert rep.verdict is Verdict.HOLDS


@pytest.mark.parametrize("loss", ["-u - Max(0, u)", "-u + Abs(u)"])
def test_kinked_decreasing_loss_is_not_differentiable(loss):
    rep = loss_admissible(loss).check()
    assert rep.verdict is Verdict.FAILS and "kink at u = 0" in rep.message


def test_time_limit_ends_undecided_with_a_message():
    rep = loss_admissible("sin(u)**1000 - u", time_limit=0.5).check()
    assert rep.verdict is Verdict.UNDECIDED and "did not finish within 0.5 s" in rep.message


def test_time_limit_from_a_worker_thread():
    out = {}

    def work():
        out["slow"] = loss_admissible("sin(u)**1000 - u", time_limit=1.0).check()
        out["fast"] = loss_admissible("exp(-u)/u").check()

    t = threading.Thread(target=work)
    t.start()
    t.join(60)
    assert out["slow"].verdict is Verdict.UNDECIDED and "did not finish" in out["slow"].message
    assert out["fast"].verdict is Verdict.FAILS


def test_written_form_survives_the_worker_subprocess():
    """Off the main thread the check runs in a subprocess; a pickled sympy tree comes back simplified
    (``-u*(u/u)`` as ``-u``), so the tree crosses frozen (issue 20)."""
    out = {}

    def work():
        out.update(
            {t: loss_admissible(t, time_limit=30).check() for t in ("-u*(u/u)", "-exp(log(u))")}
        )

    t = threading.Thread(target=work)
    t.start()
    t.join(120)
    assert all(
        r.verdict is Verdict.FAILS and "l(0) = zoo is not defined" in r.message
        for r in out.values()
    ), out
    assert len(out) == 2


def test_analyse_loss_runs_on_a_parsed_expression():
    expr, _ = parse_loss("exponential")
    assert analyse_loss(expr).verdict is Verdict.HOLDS


@pytest.mark.parametrize(
    "bad,match",
    [
        ("", "invalid loss"),
        ("log(1 + exp(-x))", "the name 'x'"),
        ("1 +* u", "cannot parse"),
        (3, "invalid loss"),
    ],
)
def test_bad_loss_input(bad, match):
    with pytest.raises(MdcertError, match=match):
        parse_loss(bad)


def test_named_losses_parse():
    for name in NAMED_LOSSES:
        expr, u = parse_loss(name)
        assert expr.free_symbols <= {u}
