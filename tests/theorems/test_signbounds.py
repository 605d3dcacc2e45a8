"""theorems.signbounds: the explicit terms of Theorem 3.9 / Corollaries 3.10-3.12 of arXiv 2410.14158 as
exact enclosures (docs/theory.md section 8.6), checked against 50-digit closed forms."""

from __future__ import annotations

from fractions import Fraction

import mpmath as mp
import numpy as np
import pytest

from certify.errors import MdcertError
from certify.regression import RegressionProblem, regression_problem
from theorems.signbounds import SIGN_THEOREMS, leading_terms


def _inside(iv, value, width=Fraction(1, 10**12)) -> bool:
    """value (50 digits, so within 1e-40 of the truth) lies in the enclosure, which is narrow."""
    lo, hi, v, tol = iv[0], iv[1], Fraction(mp.nstr(value, 45)), Fraction(1, 10**40)
    return lo - tol <= v <= hi + tol and hi - lo < width


def test_block_3_4_matches_the_closed_forms() -> None:
    # x = (3, 4): lambda = 25, |cos| - |sin| = 1/5; y = 4 (mpmath at 50 digits as the reference)
    pr = RegressionProblem(np.array([[3.0, 4.0]]), np.array([-4.0]))
    t = leading_terms(pr, alpha=0.125)
    with mp.workdps(50):
        (b,) = t.blocks
        assert b.lam == 25 and b.cos_minus_sin[0] <= Fraction(1, 5) <= b.cos_minus_sin[1]
        assert _inside(b.mbar, mp.mpf(1) / 5 * 2 / mp.sqrt(5))
        assert _inside(b.mminus, mp.mpf(1) / 5 * (2 / mp.root(50, 4) - mp.mpf("0.125")))
        assert _inside(b.slope, mp.sqrt(2) / 400)
        assert _inside(t.mbar_sum, mp.mpf(2) / 5 / mp.sqrt(5))
        # eps_bar = min((18), (19) left) = min(3 * 8 / (9 sqrt(14)), 4 alpha 3 4 / 9)
        assert _inside(t.eps_bar, min(24 / (9 * mp.sqrt(14)), mp.mpf(4) * 0.125 * 12 / 9))
        assert _inside(
            t.limit_bound,
            max(
                abs(mp.mpf(2) / 5 / mp.sqrt(5)),
                abs(mp.mpf(1) / 5 * (2 / mp.root(50, 4) - mp.mpf("0.125"))),
            ),
        )
    assert t.alpha_admissible  # 18 alpha^2 S = 18 * 7 / 64 <= 4
    assert any("O(eps)" in s for s in t.not_explicit) and any("J" in s for s in t.not_explicit)


def test_equal_entries_give_zero_terms_and_inadmissible_alpha_is_reported() -> None:
    pr = RegressionProblem(np.array([[1.0, 1.0, 0, 0], [0, 0, 2.0, -1.0]]), np.array([1.0, 2.0]))
    t = leading_terms(pr, alpha=1.0)
    assert t.blocks[0].mbar == (0, 0) and t.blocks[0].slope == (0, 0)
    assert not t.alpha_admissible  # 18 * 1 * 2 > 1


def test_sums_cover_the_blocks() -> None:
    pr = regression_problem("block", N=3, seed=0)
    t = leading_terms(pr, alpha=0.1)
    assert sum(b.mbar[0] for b in t.blocks) <= t.mbar_sum[1]
    assert t.mbar_sum[0] <= sum(b.mbar[1] for b in t.blocks)
    assert t.limit_bound[0] >= t.mbar_sum[0] - Fraction(1, 10**12)


@pytest.mark.parametrize(
    "X, y, alpha, pattern",
    [
        ([[1.0, 2.0, 3.0]], [1.0], 0.1, r"blocks of size two \(Assumption 3\.8"),
        ([[1.0, 2.0]], [0.0], 0.1, r"y_n != 0"),
        ([[1.0, 2.0]], [1.0], 0.0, r"invalid alpha: 0\.0"),
        ([[1.0, 2.0]], [1.0], float("nan"), r"invalid alpha: nan"),
    ],
)
def test_refusals(X, y, alpha, pattern) -> None:
    with pytest.raises(MdcertError, match=pattern):
        leading_terms(RegressionProblem(np.array(X), np.array(y)), alpha=alpha)


def test_catalogue_names_what_is_not_explicit() -> None:
    assert list(SIGN_THEOREMS) == ["3.9", "3.10", "3.11", "3.12"]
    assert all("assumption_3_3" in s.hypotheses for s in SIGN_THEOREMS.values())
    assert "O(sqrt(eps))" in SIGN_THEOREMS["3.9"].not_explicit
    assert "existence" in SIGN_THEOREMS["3.12"].not_explicit
