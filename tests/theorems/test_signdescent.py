"""theorems.signdescent: Assumptions 3.2, 3.3, 3.8 of arXiv 2410.14158 decided exactly (or UNDECIDED)."""

from __future__ import annotations

import numpy as np
import pytest

import theorems.signdescent as sd
from certify.regression import RegressionProblem, regression_problem
from theorems.verdict import Verdict


def test_block_data_satisfy_3_2_and_3_8() -> None:
    pr = regression_problem("block", N=4, seed=0)
    assert sd.assumption_3_2(pr).verdict is Verdict.HOLDS
    assert sd.assumption_3_8(pr).verdict is Verdict.HOLDS


@pytest.mark.parametrize(
    "X, y, verdict, fragment",
    [
        ([[1.0, 2.0, 0, 0], [0, 0, 3.0, 1.0]], [1.0, 0.0], Verdict.FAILS, "y_1 = 0"),
        ([[1.0, 2.0, 0, 0], [0, 0, 0, 0]], [1.0, 1.0], Verdict.FAILS, "nonzero diagonal block"),
        ([[1.0, 1.0], [1.0, -1.0]], [1.0, 2.0], Verdict.HOLDS, ""),  # overlapping rows, X^T X = 2I
        (
            [[1.0, 1.0, 0], [1.0, 0, 1.0]],
            [1.0, 2.0],
            Verdict.FAILS,
            "1 nonzero diagonal block",
        ),  # one block, rank 2
        (
            [[1.0, 2.0, 0], [2.0, 4.0, 0]],
            [1.0, 2.0],
            Verdict.FAILS,
            "1 nonzero diagonal block",
        ),  # parallel rows
    ],
)
def test_assumption_3_2_is_decided_on_the_literal_statement(X, y, verdict, fragment) -> None:
    rep = sd.assumption_3_2(RegressionProblem(np.array(X), np.array(y)))
    assert rep.verdict is verdict, rep.message
    assert fragment in rep.message


def test_large_overlapping_data_are_undecided_not_guessed(monkeypatch) -> None:
    monkeypatch.setattr(sd, "LITERAL_LIMIT", 2)
    rep = sd.assumption_3_2(
        RegressionProblem(np.array([[1.0, 1.0, 0], [1.0, -1.0, 0]]), np.array([1.0, 2.0]))
    )
    assert rep.verdict is Verdict.UNDECIDED


@pytest.mark.parametrize(
    "X, fragment",
    [
        ([[1.0, 2.0, 0, 0, 0], [0, 0, 3.0, 1.0, 0]], "D = 5"),
        ([[1.0, 2.0, 3.0, 0], [0, 0, 0, 1.0]], "row 0 has 3 nonzeros"),
        ([[1.0, 2.0, 0, 0], [0, 2.0, 1.0, 0]], "column 1 is shared"),
    ],
)
def test_assumption_3_8_failures_name_the_reason(X, fragment) -> None:
    rep = sd.assumption_3_8(RegressionProblem(np.array(X), np.ones(len(X))))
    assert rep.verdict is Verdict.FAILS and fragment in rep.message


def test_assumption_3_3_is_never_decided() -> None:
    rep = sd.assumption_3_3(regression_problem("block", N=2, seed=0), eps=1e-3, alpha=0.1)
    assert rep.verdict is Verdict.UNDECIDED and "could not be confirmed" in rep.message
