"""Tests for certify.refine: high-precision Newton on the reduced dual system."""

from __future__ import annotations

from fractions import Fraction

import mpmath
import numpy as np
import pytest

from certify import synthetic_problem
from certify.ops import ExactOps
from certify.refine import phi_fixed, refine
from certify.warmstart import warm_start


def test_phi_fixed_matches_mpmath():
    q = Fraction(7, 3)
    U = [12345678901234567890123, -987654321, 0, 1]
    W, e = phi_fixed(U, -40, q, 200)
    with mpmath.workdps(80):
        exact = [
            mpmath.sign(k) * abs(mpmath.mpf(k) * mpmath.mpf(2) ** -40) ** (mpmath.mpf(4) / 3)
            for k in U
        ]
        top = max(abs(x) for x in exact)
        for x, wk in zip(exact, W):  # fixed point: accuracy relative to the largest entry
            assert abs(mpmath.mpf(wk) * mpmath.mpf(2) ** e - x) <= mpmath.mpf(2) ** (-195) * top


def test_phi_fixed_restores_the_working_precision():
    import flint

    old = flint.ctx.prec
    phi_fixed([3, -5], -10, Fraction(4, 3), 300)  # works at 340 bits inside
    assert flint.ctx.prec == old


@pytest.mark.parametrize("p", [Fraction(11, 10), Fraction(3)])
def test_refine_reaches_requested_bits(p):
    cs = synthetic_problem().attention_constraints("opt")
    ops = ExactOps(cs)
    ws = warm_start(cs.rows(), float(p))
    ref = refine(ops, p, ws.lam, bits=300)
    assert ref.converged
    assert ref.residual < 2.0**-280
    assert all(k >= 0 for k in ref.lam_ints) and all(ref.lam_ints[i] > 0 for i in ref.support)
    # reduced system holds at the returned point: A_S w = 1 to ~300 bits
    Aw = ops.matvec(ref.w_ints)
    e = ops.exp + ref.w_exp
    for i in ref.support:
        assert abs(Fraction(Aw[i]) * Fraction(2) ** e - 1) < Fraction(1, 2**280)


def test_refine_recovers_from_a_wrong_active_set():
    cs = synthetic_problem().attention_constraints("opt")
    ops = ExactOps(cs)
    ws = warm_start(cs.rows(), 1.5)
    lam = ws.lam.copy()
    drop = int(np.argmax(lam))
    lam[drop] = 0.0  # a tight row missing from the start
    extra = int(np.flatnonzero(ws.lam == 0)[0])
    lam[extra] = 1e-3  # an inactive row wrongly included
    ref = refine(ops, Fraction(3, 2), lam, bits=120)
    assert ref.converged
    assert set(ref.support) == set(np.flatnonzero(ws.lam > 0).tolist())


@pytest.mark.parametrize("p, bits", [(Fraction(7, 4), 3400), (Fraction(3), 5000)])
def test_refine_goes_past_the_float64_range(p, bits):
    """Residuals below 1e-308 are no float64 (issue 11 item 3): the residual and the Newton step are
    scaled, so refinement reaches thousands of bits rather than stalling at 2**-1074."""
    cs = synthetic_problem().attention_constraints("opt")
    ops = ExactOps(cs)
    ws = warm_start(cs.rows(), float(p))
    ref = refine(ops, p, ws.lam, bits=bits)
    assert ref.converged and ref.residual_log2 < -bits + 40
    Aw = ops.matvec(ref.w_ints)
    e = ops.exp + ref.w_exp
    for i in ref.support:
        assert abs(Fraction(Aw[i]) * Fraction(2) ** e - 1) < Fraction(1, 2 ** (bits - 40))
