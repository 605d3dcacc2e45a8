"""Tests for certify.bounds: known answers, p = 2 exact vs ball path, LB <= UB for any inputs."""

from __future__ import annotations

from fractions import Fraction

import mpmath
import numpy as np
import pytest
from hypothesis import example, given, settings, strategies as st

from certify import AttentionProblem, synthetic_problem
from certify.bounds import arb_lower, arb_upper, ball_bounds, exact_kkt_p2, make_feasible, norm_pow
from certify.certificate import ExactVector
from certify.ops import ExactOps
from certify.refine import refine
from certify.svm import certify_svm
from certify.warmstart import warm_start


def _mp(x: Fraction):
    return mpmath.mpf(x.numerator) / x.denominator


@pytest.mark.parametrize("p", ["1.1", "1.5", "7/4", "2", "3"])
def test_single_constraint_opt_is_inverse_dual_norm(p):
    X = np.zeros((1, 2, 2))
    X[0, 0] = [1.0, 0.5]
    pr = AttentionProblem(
        X, np.array([1.0]), np.array([[2.0, -1.0]]), np.array([1.0, 0.0]), alpha=[0]
    )
    c = certify_svm(pr, p, digits=40)
    pp = Fraction(p)
    with mpmath.workdps(120):
        q = _mp(pp / (pp - 1))
        a = [mpmath.mpf(v) for v in (2, -1, 1, -0.5)]
        opt = 1 / sum(abs(x) ** q for x in a) ** (1 / q)
        assert _mp(c.opt_lower) <= opt <= _mp(c.opt_upper)
    assert c.opt_upper - c.opt_lower <= c.opt_lower / 10**40
    assert c.support.tight == ((0, 1),)


@pytest.mark.parametrize("p", ["1.5", "2", "3"])
def test_axis_aligned_decoder_exact_answer(p):
    # constraints 2 v_1 >= 1, 4 v_2 >= 1 (v_3 unconstrained, a structurally zero column): v* = (1/2, 1/4, 0)
    X = np.zeros((2, 2, 3))
    X[0, 0] = [2.0, 0.0, 0.0]
    X[1, 0] = [0.0, -4.0, 0.0]
    pr = AttentionProblem(
        X, np.array([1.0, -1.0]), np.ones((2, 3)), np.array([1.0, 1.0, 0.0]), alpha=[0, 0]
    )
    c = certify_svm(pr, p, svm="decoder", digits=50)
    pp = Fraction(p)
    with mpmath.workdps(100):
        opt = (mpmath.mpf(2) ** -_mp(pp) + mpmath.mpf(4) ** -_mp(pp)) ** (1 / _mp(pp))
        assert _mp(c.opt_lower) <= opt <= _mp(c.opt_upper)
    w = c.solution_exact()
    dist = max(abs(w[0] - Fraction(1, 2)), abs(w[1] - Fraction(1, 4)), abs(w[2]))
    assert dist <= c.distance_upper
    if pp == 2:
        assert c.exact_kkt and w == [Fraction(1, 2), Fraction(1, 4), 0]
    assert len(c.support.tight) == 2


def test_p2_exact_path_agrees_with_ball_path():
    cs = synthetic_problem().attention_constraints("opt")
    ops = ExactOps(cs)
    ws = warm_start(cs.rows(), 2.0)
    ref = refine(ops, Fraction(2), ws.lam, bits=200)
    ex = exact_kkt_p2(ops, ref.support, bits=200)
    w = make_feasible(ops, ref.w_ints, ref.w_exp, bits=200)
    ball = ball_bounds(
        ops, Fraction(2), w, ExactVector.from_dyadic(ref.lam_ints, ref.lam_exp), bits=200
    )
    assert ex is not None and ex.exact_kkt and ball is not None
    # enclosures intersect and the exact one is inside the ball one up to its width
    assert ball.opt_lower <= ex.opt_upper and ex.opt_lower <= ball.opt_upper
    assert ball.opt_upper - ball.opt_lower < Fraction(1, 10**55)
    assert set(ball.support.tight) == set(ex.support.tight)
    assert set(ball.support.inactive) == set(ex.support.inactive)
    # the exact optimum is within the certified distance of the ball path's point
    w_ball = np.array(w.fractions(), dtype=object)
    w_ex = np.array(ex.w.fractions(), dtype=object)
    assert float(sum((w_ball - w_ex) ** 2)) ** 0.5 <= float(ball.distance_upper) * (1 + 1e-9)


def test_norm_pow_and_endpoints():
    from flint import arb, ctx, fmpq

    with ctx.workprec(200):
        s = norm_pow([3, -4, 0], -1, arb(2))
        assert arb_lower(s) <= Fraction(25, 4) <= arb_upper(s)
        r = arb(fmpq(1, 3))
        assert arb_lower(r) < Fraction(1, 3) < arb_upper(r)
        assert arb_upper(arb("nan")) is None


_CS = synthetic_problem(n=2, T=3, d=3, seed=5).attention_constraints("opt")
_OPS = ExactOps(_CS)
_REF = certify_svm(synthetic_problem(n=2, T=3, d=3, seed=5), "1.5", digits=30)


@settings(max_examples=25, deadline=None)
@given(
    noise=st.lists(st.integers(-(2**40), 2**40), min_size=9, max_size=9),
    lam=st.lists(st.integers(0, 2**30), min_size=4, max_size=4).filter(any),
    p=st.sampled_from(["1.5"]),
)
@example(noise=[0] * 9, lam=[1, 0, 0, 0], p="1.5")
def test_lb_le_ub_for_any_feasible_point_and_multiplier(noise, lam, p):
    """Weak duality, rigorously: any feasible w and any lam >= 0 give LB <= OPT <= UB."""
    w_opt = _REF.w
    W = [k * (1 << 20) + n for k, n in zip(w_opt.ints, noise)]
    w = make_feasible(_OPS, W, w_opt.exp - 20, bits=80)
    if w is None:
        return
    b = ball_bounds(_OPS, Fraction(p), w, ExactVector.from_dyadic(lam, 0), bits=80)
    if b is None:  # A^T lam = 0 cannot happen on feasible data; anything else must give bounds
        pytest.fail("bounds refused a feasible point and a nonzero multiplier")
    assert b.opt_lower <= b.opt_upper
    assert b.opt_lower <= _REF.opt_upper and _REF.opt_lower <= b.opt_upper
    # support claims made from poor vectors must still be right
    assert set(b.support.tight) <= set(_REF.support.tight) | set(_REF.support.undecided)
    assert set(b.support.inactive) <= set(_REF.support.inactive) | set(_REF.support.undecided)


# ---------------------------------------------------------------- adversarial review (round 2)
def test_nan_upper_end_is_never_zero():
    """Finding: ``_nonneg_up(nan)`` returned 0, so a nan gap (e.g. ``pa - 1`` straddling 0 when p is
    within the working precision of 1) would have produced a distance / dual error of 0."""
    from flint import arb

    from certify.bounds import _nonneg_up

    assert not _nonneg_up(arb("nan")).is_finite()
    assert _nonneg_up(arb(-2)) == 0 and _nonneg_up(arb(3)) == 3
