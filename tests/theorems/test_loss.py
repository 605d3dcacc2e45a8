"""Tests of theorems.loss: symbolic checks of the loss assumption."""

from __future__ import annotations

import pytest

from certify.errors import MdcertError
from theorems.loss import NAMED_LOSSES, loss_admissible, parse_loss
from theorems.verdict import Method, Verdict


@pytest.mark.parametrize("loss", ["logistic", "exponential", "linear", "linear-decreasing", "2 - 3*u",
                                  "1/(1 + exp(u))", "-u**3"])
def test_admissible_losses_hold(loss):
    rep = loss_admissible(loss).check()
    assert rep.verdict is Verdict.HOLDS, rep.message
    assert all(e.method is Method.EXACT for e in rep.evidence)
    assert {e.quantity for e in rep.evidence} == {"l is differentiable on R",
                                                  "l' is bounded and Lipschitz on every closed interval",
                                                  "l is strictly decreasing on R"}


@pytest.mark.parametrize("loss,why", [
    ("hinge", "kink at u = 1"),
    ("squared", "increasing on"),
    ("Abs(u)", "kink at u = 0"),
    ("u", "increasing on"),
    ("exp(-u)/u", "not defined or not continuous"),
    ("Max(0, 1 - u)**2", "constant on"),
])
def test_inadmissible_losses_fail_with_exact_witness(loss, why):
    rep = loss_admissible(loss).check()
    assert rep.verdict is Verdict.FAILS
    assert why in rep.message


def test_hinge_fails_both_parts():
    rep = loss_admissible("hinge").check()
    failed = {e.quantity for e in rep.evidence if e.implies() is Verdict.FAILS}
    assert failed == {"l is differentiable on R", "l is strictly decreasing on R"}


def test_undecided_when_sympy_cannot_decide():
    # admissible (l' = -1 + cos(u)/2 < 0), but sympy proves neither the sign nor a counterexample
    rep = loss_admissible("-u + sin(u)/2").check()
    assert rep.verdict is Verdict.UNDECIDED
    # floor is outside the symbolic fragment (and the loss has jumps): never HOLDS
    assert loss_admissible("-u - floor(u)/1000").check().verdict is not Verdict.HOLDS


@pytest.mark.parametrize("bad,match", [
    ("", "invalid loss"),
    ("log(1 + exp(-x))", "free symbols"),
    ("1 +* u", "cannot parse"),
    (3, "invalid loss"),
])
def test_bad_loss_input(bad, match):
    with pytest.raises(MdcertError, match=match):
        parse_loss(bad)


def test_named_losses_parse():
    for name in NAMED_LOSSES:
        expr, u = parse_loss(name)
        assert expr.free_symbols <= {u}
