"""theorems.signdescent: Assumptions 3.2, 3.3, 3.8 of arXiv 2410.14158 decided exactly (or UNDECIDED)."""

from __future__ import annotations

from fractions import Fraction

import mpmath as mp
import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import theorems.signdescent as sd
from certify.errors import MdcertError
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


# Assumption 3.3 (eqs. 18-19 of arXiv 2410.14158; docs/theory.md section 8.6). The fixture's row 0 is
# x = (1/2, 1/2), y = 9/8: S = 1, m = 1/2, so (18) reads eps <= 3/64 and (19) right alpha <= 1/4, both
# with equality at the dyadic values; (19) left 9 eps <= 4 alpha m |y| is tight at eps = 1/32, alpha = 1/8.
# Row 1 (1/4, 1/4), y = 4 has room in all three.
_BOUNDARY = RegressionProblem(
    np.array([[0.5, 0.5, 0, 0], [0, 0, 0.25, 0.25]]), np.array([1.125, 4.0])
)
_UP, _DOWN = (lambda v: float(np.nextafter(v, 2))), (lambda v: float(np.nextafter(v, 0)))


@pytest.mark.parametrize(
    "eps, alpha, verdict, fragment",
    [
        (3 / 64, 0.25, Verdict.HOLDS, "holds"),  # equality in (18) and in (19) right: non-strict
        (_UP(3 / 64), 0.25, Verdict.FAILS, "eq. (18) at row 0"),
        (_DOWN(3 / 64), 0.25, Verdict.HOLDS, "holds"),
        (3 / 64, _UP(0.25), Verdict.FAILS, "eq. (19) right at row 0"),
        (3 / 64, _DOWN(0.25), Verdict.HOLDS, "holds"),
        (1 / 32, 1 / 8, Verdict.HOLDS, "holds"),  # equality in (19) left
        (1 / 32, _DOWN(1 / 8), Verdict.FAILS, "eq. (19) left at row 0"),
        (_UP(1 / 32), 1 / 8, Verdict.FAILS, "eq. (19) left at row 0"),
        (_DOWN(1 / 32), 1 / 8, Verdict.HOLDS, "holds"),
    ],
)
def test_assumption_3_3_boundary_is_exact(eps, alpha, verdict, fragment) -> None:
    rep = sd.assumption_3_3(_BOUNDARY, eps=eps, alpha=alpha)
    assert rep.verdict is verdict and fragment in rep.message
    assert all(e.lo == e.hi and e.relation == "<=" for e in rep.evidence)  # exact points


def test_assumption_3_3_evidence_names_the_binding_row_and_both_sides() -> None:
    X = np.array([[1.0, 3.0, 0, 0, 0], [0, 0, 0.5, 2.0, 1.0]])
    rep = sd.assumption_3_3(RegressionProblem(X, np.array([2.0, -0.5])), eps=1e-3, alpha=0.05)
    eq18, left, right = rep.evidence
    # (18): row 1 has m = 1/2, S = 7/2, |y| = 1/2; row 0 has m = 1, S = 4, |y| = 2: row 1 binds
    assert eq18.data["row"] == 1 and eq18.hi == 162 * Fraction(1e-3) ** 2 * Fraction(7, 2)
    assert eq18.threshold == Fraction(1, 4) * Fraction(1, 8)
    assert "eps = 0.001" in eq18.detail and "9 sqrt(2 S_n)) in [" in eq18.detail
    assert right.data["row"] == 1 and "sqrt(|y_n| / (2 S_n)) / 3 in [0.0890870806" in right.detail
    assert rep.verdict is Verdict.HOLDS


def test_assumption_3_3_zero_target_fails_exactly() -> None:
    pr = RegressionProblem(np.array([[1.0, 2.0, 0], [0, 0, 1.0]]), np.array([0.0, 1.0]))
    rep = sd.assumption_3_3(pr, eps=1e-6, alpha=1e-3)
    assert rep.verdict is Verdict.FAILS and "eq. (18) at row 0" in rep.message
    assert "= inf > alpha" in rep.message


@pytest.mark.parametrize(
    "X, fragment",
    [
        ([[1.0, 1.0], [1.0, -1.0]], "column 0 is shared"),  # 3.2 holds literally, rows overlap
        ([[1.0, 2.0, 0], [0, 0, 0]], "row 1 is zero"),
    ],
)
def test_assumption_3_3_is_undecided_off_the_block_notation(X, fragment) -> None:
    rep = sd.assumption_3_3(RegressionProblem(np.array(X), np.ones(len(X))), eps=1e-3, alpha=0.1)
    assert rep.verdict is Verdict.UNDECIDED and fragment in rep.message


@pytest.mark.parametrize(
    "eps, alpha, pattern",
    [
        (0.0, 0.1, r"invalid eps: 0\.0; must be finite and > 0"),
        (-1e-3, 0.1, r"invalid eps: -0\.001; must be finite and > 0"),
        (1e-3, 0.0, r"invalid alpha: 0\.0; must be finite and > 0"),
        (1e-3, -2.0, r"invalid alpha: -2\.0"),
        (float("nan"), 0.1, r"invalid eps: nan"),
        (1e-3, float("nan"), r"invalid alpha: nan"),
        (float("inf"), 0.1, r"invalid eps: inf"),
        ("abc", 0.1, r"invalid eps: 'abc'; give a finite number > 0"),
        (None, 0.1, r"invalid eps: None"),
    ],
)
def test_assumption_3_3_refuses_bad_eps_alpha(eps, alpha, pattern) -> None:
    with pytest.raises(MdcertError, match=pattern):
        sd.assumption_3_3(_BOUNDARY, eps=eps, alpha=alpha)


_pos = st.floats(min_value=2.0**-6, max_value=2.0**6, allow_nan=False, allow_infinity=False)
_signed = st.tuples(_pos, st.booleans()).map(lambda t: -t[0] if t[1] else t[0])
_small = st.floats(min_value=2.0**-30, max_value=1.0, allow_nan=False, allow_infinity=False)


def _oracle(X: np.ndarray, y: np.ndarray, eps: float, alpha: float) -> tuple[mp.mpf, bool]:
    """The unsquared eqs. 18-19 at 80 digits: the smallest relative room and whether all hold."""
    with mp.workdps(80):
        room = []
        for n in range(len(y)):
            xs = [abs(mp.mpf(float(v))) for v in X[n] if v != 0]
            S, Y, E, A = mp.fsum(xs), abs(mp.mpf(float(y[n]))), mp.mpf(eps), mp.mpf(alpha)
            for x in xs:
                room.append(x * Y**1.5 / (9 * mp.sqrt(2 * S)) / E - 1)  # (18)
                room.append(A / (9 * E / (4 * x * Y)) - 1)  # (19) left
            room.append(mp.sqrt(Y / (2 * S)) / 3 / A - 1)  # (19) right
        worst = min(room)
        return abs(worst), worst >= 0


@settings(max_examples=150, deadline=None)
@given(
    rows=st.lists(st.lists(_signed, min_size=1, max_size=3), min_size=1, max_size=4),
    y=st.lists(_signed, min_size=4, max_size=4),
    eps=st.one_of(_small, _small.map(lambda v: v * 2.0**-14)),  # small eps: more HOLDS drawn
    alpha=_small,
)
@example(rows=[[0.5, 0.5], [0.25, 0.25]], y=[1.125, 4.0, 1.0, 1.0], eps=3 / 64, alpha=0.25)
@example(rows=[[0.5, 0.5], [0.25, 0.25]], y=[1.125, 4.0, 1.0, 1.0], eps=_UP(3 / 64), alpha=0.25)
@example(rows=[[0.5, 0.5], [0.25, 0.25]], y=[1.125, 4.0, 1.0, 1.0], eps=1 / 32, alpha=_DOWN(0.125))
@example(rows=[[1.0]], y=[1.0, 1.0, 1.0, 1.0], eps=2.0**-30, alpha=2.0**-30)
def test_assumption_3_3_agrees_with_an_80_digit_oracle(rows, y, eps, alpha) -> None:
    D = sum(len(r) for r in rows)
    X, col = np.zeros((len(rows), D)), 0
    for n, r in enumerate(rows):
        X[n, col : col + len(r)] = r
        col += len(r)
    yy = np.array(y[: len(rows)])
    rep = sd.assumption_3_3(RegressionProblem(X, yy), eps=eps, alpha=alpha)
    room, holds = _oracle(X, yy, eps, alpha)
    assert rep.verdict in (Verdict.HOLDS, Verdict.FAILS)  # always decided on block rows
    if room > mp.mpf(10) ** -60:  # the oracle is sure
        assert (rep.verdict is Verdict.HOLDS) == holds
    else:  # an exact tie in the unsquared form: both sides equal, the paper's <= holds
        assert rep.verdict is Verdict.HOLDS or not holds


def test_digits_like_data_decide_3_3_on_shared_columns_as_undecided() -> None:
    rep = sd.assumption_3_3(
        RegressionProblem(np.array([[1.0, 1.0], [0, 1.0]]), np.ones(2)), eps=1e-3, alpha=0.1
    )
    assert rep.verdict is Verdict.UNDECIDED
