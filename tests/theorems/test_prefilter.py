"""Tests of theorems.prefilter: the cheap rigorous bounds of the step-size check."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from flint import arb, ctx

from certify.synth import synthetic_problem
from tests.theorems.test_stepsize import md_path, mp_bregmans
from theorems.prefilter import _coefficients, _psi_lower, logit_increment_norms
from theorems.logits import dyadic_rows, logit_ints, token_values
from theorems.stepsize import check_steps


@pytest.fixture(scope="module")
def small():
    return synthetic_problem(n=3, T=4, d=3, seed=5)


@pytest.mark.parametrize("p", ["1.25", "2", "2.5", "3", "4.5"])
def test_prefilter_is_sound_and_consistent(small, p):
    """Pre-filter proofs agree with the full evaluation, and its ratio bounds sit above the true ratio."""
    rng = np.random.default_rng(11)
    W0 = rng.standard_normal((3, 3)) * 0.5
    W0[0, 0] = 0.0  # an entry at zero (p > 2: zero curvature there)
    Ws = md_path(small, W0, p, 0.2, 8)
    for eta in (Fraction(1, 10), Fraction(5), Fraction(50)):
        fast = check_steps(small, Ws, eta, Fraction(p))
        full = check_steps(small, Ws, eta, Fraction(p), prefilter=False)
        by_pre = fast.precision == -1
        assert (full.status[by_pre] == 1).all()
        assert (fast.status == full.status).all()
        for k in np.flatnonzero(by_pre)[:3]:
            DL, Dpsi = mp_bregmans(small, Ws[k + 1], Ws[k], p)
            assert eta * Fraction(str(DL)) <= fast.ratio_hi[k] * Fraction(str(Dpsi)) + Fraction(
                1, 10**40
            )
    assert (check_steps(small, Ws, Fraction(1, 10), Fraction(p)).precision == -1).any()


@pytest.mark.parametrize("p", ["1.25", "2", "2.5", "3", "4.5"])
def test_prefilter_bounds_bracket_the_true_divergences(small, p):
    rng = np.random.default_rng(5)
    Ws = np.cumsum(rng.standard_normal((6, 3, 3)) * 0.3, axis=0)
    Ws[2, 1, 1] = 0.0
    rows = dyadic_rows(Ws)
    S, E = logit_ints(small, Ws, rows)
    dsq, e = logit_increment_norms(S, E)
    h, hexp = token_values(small)
    with ctx.workprec(128):
        c = _coefficients(h, hexp, "logistic")
        lows = _psi_lower(rows, Ws, Fraction(p))
        for k in range(5):
            DL, Dpsi = mp_bregmans(small, Ws[k + 1], Ws[k], p)
            ub = (
                sum((ci * arb((int(x), 2 * int(e[k]))) for ci, x in zip(c, dsq[k])), arb(0))
                / small.n
            )
            assert float(DL) <= float(ub.upper()) * (1 + 1e-12)
            assert float(lows[k].lower()) <= float(Dpsi) * (1 + 1e-12)
