"""The p-GD hypotheses: separability from the exact certificate, the loss, the measured step size."""

from __future__ import annotations

import numpy as np
import pytest

from certify import ClassificationProblem, certify_max_margin, classification_problem
from certify.errors import MdcertError
from theorems.catalogue import PGD_STATEMENT
from theorems.pgd import loss_exponential_tail, separable, step_size_measured
from theorems.verdict import Verdict


def test_catalogue_entry_names_the_paper_and_says_hypotheses_are_standard() -> None:
    assert "2205.12808" in PGD_STATEMENT.reference and PGD_STATEMENT.standard_hypotheses
    assert PGD_STATEMENT.hypotheses == ("separable", "loss_exponential_tail", "step_size_measured")


def test_separable_holds_on_planted_data() -> None:
    rep = separable(certify_max_margin(classification_problem(n=20, d=3, seed=0), "2", digits=20))
    assert rep.verdict is Verdict.HOLDS


def test_conflicting_points_fail_exactly() -> None:
    X = np.array([[1.0, 2.0], [1.0, 2.0], [0.5, -1.0]])
    rep = separable(
        certify_max_margin(
            ClassificationProblem(X=X, y=np.array([1.0, -1.0, 1.0])), "1.5", digits=20
        )
    )
    assert rep.verdict is Verdict.FAILS and "Gordan" in rep.message


@pytest.mark.parametrize("loss", ["exponential", "logistic"])
def test_named_losses_hold(loss) -> None:
    assert loss_exponential_tail(loss).verdict is Verdict.HOLDS


def test_other_losses_are_refused() -> None:
    with pytest.raises(MdcertError, match="loss must be one of"):
        loss_exponential_tail("hinge")


@pytest.mark.parametrize(
    "values,verdict",
    [
        ([0.5, 0.1], Verdict.UNDECIDED),  # samples never prove it
        ([0.5, -1e-12], Verdict.UNDECIDED),  # within rounding
        ([0.5, -0.3], Verdict.FAILS),  # a clear violation refutes it
        ([], Verdict.UNDECIDED),
        ([float("inf"), float("nan")], Verdict.UNDECIDED),
    ],
)
def test_step_size_measured(values, verdict) -> None:
    assert step_size_measured(values).verdict is verdict
