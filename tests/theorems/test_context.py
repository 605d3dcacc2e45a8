"""Tests of theorems.context: the predicate interface and the per-problem cache."""

from __future__ import annotations

import pytest

import certify.svm
from certify.problem import AttentionProblem
from theorems.context import CheckContext, Predicate, as_context
from theorems.tokens import tokens_locally_optimal
from theorems.verdict import Verdict

PROB = AttentionProblem([[[0, 0], [-1, -1], [-10, 5]]], [1], [[1, 0]], [0, 1])


def test_cache_and_wrapping():
    ctx = CheckContext(PROB)
    assert as_context(ctx) is ctx and as_context(PROB).problem is PROB
    c1 = ctx.certificate("1.75", alpha=[0])
    assert ctx.certificate("7/4", alpha="0") is c1  # same exact p, same alpha: one solve
    assert ctx.feasibility(alpha=[0]) is ctx.feasibility(alpha=[0])
    assert ctx.constraints(svm="decoder", alpha=[0]).kind == "decoder"
    with pytest.raises(TypeError):
        CheckContext("problem.npz")


def test_computed_certificate_never_solves():
    ctx = CheckContext(PROB)
    assert ctx.computed_certificate("1.75", alpha=[0]) is None  # not solved yet, and not solved now
    assert ctx.computed_certificate("1.75", alpha=[0]) is None
    cert = ctx.certificate("1.75", alpha=[0])
    assert ctx.computed_certificate("7/4", alpha="0") is cert
    assert ctx.computed_certificate("1.75", svm="decoder", alpha=[0]) is None


def test_internal_solver_failure_is_no_verified_result(monkeypatch):
    def boom(*a, **k):
        raise ArithmeticError("overflow in a warm start")

    monkeypatch.setattr(certify.svm, "certify_svm", boom)
    ctx = CheckContext(PROB)
    cert = ctx.certificate("2", alpha=[0])
    assert cert.status.value == "no_verified_result" and "overflow" in cert.info["error"]
    assert tokens_locally_optimal([0], "2").check(ctx).verdict is Verdict.UNDECIDED


def test_predicates_share_one_interface():
    import theorems

    preds = [
        theorems.loss_admissible("logistic"),
        theorems.svm_feasible([0]),
        theorems.decoder_svm_feasible([0]),
        theorems.joint_svms_feasible([0]),
        theorems.tokens_globally_optimal([0]),
        theorems.tokens_locally_optimal([0], "2"),
    ]
    names = set()
    for pred in preds:
        assert isinstance(pred, Predicate)
        rep = pred.check(PROB)
        assert rep.name == pred.name
        names.add(pred.name)
    assert len(names) == len(preds)
