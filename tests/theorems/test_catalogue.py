"""Tests of theorems.catalogue: the theorem list and check_theorem."""

from __future__ import annotations

import json
from fractions import Fraction

import numpy as np
import pytest

from certify.errors import MdcertError
from certify.problem import AttentionProblem
from theorems.catalogue import REFERENCE, THEOREMS, check_theorem, get_theorem
from theorems.verdict import Verdict

H, F, U = Verdict.HOLDS, Verdict.FAILS, Verdict.UNDECIDED
LOCAL_NOT_GLOBAL = AttentionProblem([[[0, 0], [-1, -1], [-10, 5]]], [1], [[1, 0]], [0, 1])
DECODER_INFEASIBLE = AttentionProblem(
    [[[1, 0], [0, 1]], [[1, 0], [0, 2]]], [1, -1], [[1, 0], [0, 1]], [1, 0]
)


def test_catalogue_lists_the_papers_theorems():
    assert set(THEOREMS) == {"6", "8", "10", "11", "31"}
    for th in THEOREMS.values():
        assert "2410.14581" in th.reference and th.reference.endswith(REFERENCE)
        assert th.hypotheses[0] == "loss_admissible" and th.conclusion
    assert "tokens_globally_optimal" in THEOREMS["6"].hypotheses
    assert "init_in_region" in THEOREMS["10"].hypotheses
    assert "step_size_convex_along_path" in THEOREMS["11"].hypotheses
    assert "joint_svms_feasible" in THEOREMS["31"].hypotheses
    assert get_theorem(10) is THEOREMS["10"]
    with pytest.raises(MdcertError, match="unknown theorem"):
        get_theorem("7")


def test_theorem10_local_alpha_without_path_is_undecided():
    rep = check_theorem("10", LOCAL_NOT_GLOBAL, p="1.75", alpha=[0])
    v = {h.name: h.verdict for h in rep.hypotheses}
    assert v == {
        "loss_admissible": H,
        "svm_feasible": H,
        "tokens_locally_optimal": H,
        "init_in_region": U,
        "step_size_convex_along_path": U,
    }
    assert rep.verdict is U
    assert "--init" in rep.hypothesis("init_in_region").message
    js = json.loads(json.dumps(rep.to_json()))
    assert js["theorem"] == "10" and js["verdict"] == "undecided"
    assert js["quantities"]["alpha"] == [0] and js["quantities"]["p"] == "7/4"
    assert js["quantities"]["attention_svm"]["support_counts"] == {
        "tight": 1,
        "inactive": 1,
        "undecided": 0,
    }


def test_theorem6_uses_globally_optimal_tokens():
    rep = check_theorem("6", LOCAL_NOT_GLOBAL, p="2")
    assert rep.quantities["alpha"] == [2] and rep.verdict is H
    rep = check_theorem("6", LOCAL_NOT_GLOBAL, p="2", alpha=[0])
    assert rep.hypothesis("tokens_globally_optimal").verdict is F and rep.verdict is F


def test_theorem31_needs_a_feasible_decoder_svm():
    rep = check_theorem("31", DECODER_INFEASIBLE, p="2", alpha=[0, 0], loss="exponential")
    assert rep.hypothesis("joint_svms_feasible").verdict is F
    assert rep.verdict is F
    assert "decoder_svm" not in rep.quantities
    ok = check_theorem("31", DECODER_INFEASIBLE, p="1.5", alpha=[0, 1])
    assert ok.hypothesis("joint_svms_feasible").verdict is H
    dec = ok.quantities["decoder_svm"]
    assert dec["status"] == "optimal" and Fraction(dec["opt_lower"]) <= Fraction(dec["opt_upper"])
    assert ok.quantities["attention_svm"]["status"] == "optimal"


def test_theorem8_with_path_and_region():
    W0 = np.array([[0.5, 0.2], [0.1, -0.3]])
    traj = np.stack([W0, W0 * 1.001, W0 * 1.002])
    rep = check_theorem(
        "8", LOCAL_NOT_GLOBAL, p="2", alpha=[0], W0=None, mu="10", R="0", eta="0.1", trajectory=traj
    )
    assert rep.hypothesis("init_in_region").verdict is H  # W0 taken from trajectory[0]
    assert rep.hypothesis("step_size_convex_along_path").verdict in (H, F)
    assert rep.quantities["steps"] == 2


# ---------------------------------------------------------------- adversarial review (round 2)
def test_reported_svm_bounds_come_only_from_checked_certificates(monkeypatch):
    """Finding: the theorem report copied OPT bounds of the SVM certificates into its quantities
    without the independent checker; a forged (too strong) lower bound was reported as optimal."""
    import dataclasses

    import certify.svm

    real = certify.svm.certify_svm

    def forged(*a, **k):
        c = real(*a, **k)
        return dataclasses.replace(c, opt_lower=c.opt_upper * 2) if c.opt_upper is not None else c

    monkeypatch.setattr(certify.svm, "certify_svm", forged)
    rep = check_theorem("6", LOCAL_NOT_GLOBAL, p="2")
    assert rep.quantities["attention_svm"]["status"] == "rejected by the independent checker"
    assert "opt_lower" not in rep.quantities["attention_svm"]


def test_check_pgd_names_the_statement_and_the_hypotheses_sources() -> None:
    from certify import classification_problem
    from theorems.catalogue import PGD, PGD_SOURCES, PGD_STATEMENT, check_pgd

    rep = check_pgd(classification_problem(n=12, d=3, seed=0), p="2")
    assert rep.theorem == PGD and "2205.12808" in rep.reference and "standard" in rep.reference
    assert tuple(h.name for h in rep.hypotheses) == PGD_STATEMENT.hypotheses
    assert rep.hypothesis("separable").verdict is Verdict.HOLDS
    assert rep.hypothesis("step_size_measured").verdict is Verdict.UNDECIDED  # no path given
    assert rep.quantities["hypothesis_sources"] == PGD_SOURCES
    assert all("not a quoted condition" in s for s in PGD_SOURCES.values())


def test_check_pgd_refutes_separability_and_the_step_size() -> None:
    from certify import ClassificationProblem
    from theorems.catalogue import check_pgd

    X = np.array([[1.0, 2.0], [1.0, 2.0], [0.5, -1.0]])
    rep = check_pgd(
        ClassificationProblem(X=X, y=np.array([1.0, -1.0, 1.0])),
        p="3/2",
        loss="exponential",
        smoothness=[0.5, -0.25],
    )
    assert rep.verdict is Verdict.FAILS
    assert rep.hypothesis("separable").verdict is Verdict.FAILS
    assert rep.hypothesis("step_size_measured").verdict is Verdict.FAILS
    assert rep.quantities["max_margin"] == {
        "status": "infeasible",
        "checker": "accepted",
        "opt_lower": None,
        "opt_upper": None,
        "direction_error_upper": None,
        "support_counts": None,
    }
