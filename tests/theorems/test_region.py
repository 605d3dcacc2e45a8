"""Tests of theorems.region: certified enclosures of D_psi(Wbar_mm, Wbar(0)) and ||W(0)||_p."""

from __future__ import annotations

from fractions import Fraction

import mpmath
import numpy as np
import pytest

from certify.errors import MdcertError
from certify.lp import bregman, lp_norm
from certify.synth import synthetic_problem
from theorems.context import CheckContext
from theorems.region import init_in_region
from theorems.verdict import Method, Verdict

H, F, U = Verdict.HOLDS, Verdict.FAILS, Verdict.UNDECIDED


@pytest.fixture(scope="module")
def ctx():
    return CheckContext(synthetic_problem(n=4, T=4, d=4, seed=3))


@pytest.fixture(scope="module")
def W0():
    return np.random.default_rng(0).standard_normal((4, 4))


def _enc(ctx, W0, p):
    d_ev, n_ev, cert = init_in_region(W0, p=p, alpha="opt").enclose(ctx)
    return d_ev, n_ev, cert


@pytest.mark.parametrize("p", ["1.25", "2", "3"])
def test_enclosures_contain_float_values(ctx, W0, p):
    d_ev, n_ev, cert = _enc(ctx, W0, p)
    assert d_ev.method is Method.INTERVAL and n_ev.method is Method.INTERVAL
    u = cert.direction_float()
    B = W0 / lp_norm(W0, p)
    approx = bregman(u, B, p)
    assert float(d_ev.lo) - 1e-9 <= approx <= float(d_ev.hi) + 1e-9
    assert d_ev.hi - d_ev.lo <= 2 * cert.direction_error_upper + Fraction(1, 10**30)
    assert float(n_ev.lo) <= lp_norm(W0, p) * (1 + 1e-12) and lp_norm(W0, p) * (1 - 1e-12) <= float(
        n_ev.hi
    )


def test_p2_matches_independent_mpmath(ctx, W0):
    d_ev, n_ev, cert = _enc(ctx, W0, "2")
    mpmath.mp.dps = 80
    w = [mpmath.mpf(f.numerator) / f.denominator for f in cert.solution_exact()]
    b = [mpmath.mpf(float(x)) for x in W0.ravel()]
    nw, nb = mpmath.sqrt(mpmath.fsum(x * x for x in w)), mpmath.sqrt(mpmath.fsum(x * x for x in b))
    D = mpmath.fsum((x / nw - y / nb) ** 2 for x, y in zip(w, b)) / 2  # D_psi for p = 2
    delta = cert.direction_error_upper
    lo, hi = (
        Fraction(str(D)) - delta - Fraction(1, 10**60),
        Fraction(str(D)) + delta + Fraction(1, 10**60),
    )
    assert lo <= d_ev.lo and d_ev.hi <= hi  # no wider than the certified direction error allows
    assert d_ev.lo - Fraction(1, 10**60) <= Fraction(str(D)) <= d_ev.hi + Fraction(1, 10**60)
    assert (
        n_ev.lo <= Fraction(str(nb)) + Fraction(1, 10**60)
        and Fraction(str(nb)) - Fraction(1, 10**60) <= n_ev.hi
    )


def test_holds_fails_undecided(ctx, W0):
    d_ev, n_ev, cert = _enc(ctx, W0, "1.5")
    assert (
        init_in_region(W0, mu=d_ev.hi + Fraction(1, 100), R=n_ev.lo / 2, p="1.5", alpha="opt")
        .check(ctx)
        .verdict
        is H
    )
    rep = init_in_region(W0, mu=d_ev.lo / 2, R="0", p="1.5", alpha="opt").check(ctx)
    assert rep.verdict is F and "start closer" in rep.message
    rep = init_in_region(W0, mu="100", R=n_ev.hi * 2, p="1.5", alpha="opt").check(ctx)
    assert rep.verdict is F and "scale W0 up" in rep.message
    if d_ev.lo < d_ev.hi:
        mid = (d_ev.lo + d_ev.hi) / 2
        assert init_in_region(W0, mu=mid, R="0", p="1.5", alpha="opt").check(ctx).verdict is U
    rep = init_in_region(W0, p="1.5", alpha="opt").check(ctx)
    assert rep.verdict is U and "give --mu and --R" in rep.message


def test_init_on_the_max_margin_direction_is_at_distance_zero(ctx):
    cert = ctx.certificate("3", alpha="opt")
    W = cert.solution_float() * 5.0
    rep = init_in_region(W, mu="1e-12", R="1", p="3", alpha="opt").check(ctx)
    assert rep.verdict is H
    assert rep.message.startswith(
        "W(0) is in the region for the given mu = 1e-12, R = 1:"
    )  # inputs, named
    assert rep.evidence[0].lo == 0


def test_scale_invariance_and_data_quantities(ctx, W0):
    d1, n1, _ = _enc(ctx, W0, "1.75")
    d3, n3, _ = _enc(ctx, 4 * W0, "1.75")
    assert max(d1.lo, d3.lo) <= min(d1.hi, d3.hi)  # D_psi of the directions: the same true value
    assert abs(d1.lo - d3.lo) < Fraction(1, 10**50) + 2 * (d1.hi - d1.lo)
    assert n3.lo <= 4 * n1.hi and 4 * n1.lo <= n3.hi
    rep = init_in_region(W0, mu="1", R="0", p="1.75", alpha="opt").check(ctx)
    names = [e.quantity for e in rep.evidence]
    assert "OPT = ||W_mm||_p" in names and "max_it ||x_it||_2 ||z_i||_2" in names
    assert any(n.startswith("score gap") for n in names) and any(
        n.startswith("margin gap") for n in names
    )
    for e in rep.evidence[2:]:
        assert not e.deciding and e.method.rigorous
        assert e.lo is not None and e.hi is not None and e.lo <= e.hi
    gap = next(e for e in rep.evidence if e.quantity.startswith("margin gap"))
    assert gap.lo > 0  # non-support logits are strictly above the support margin


@pytest.mark.parametrize(
    "W,mu,R,match",
    [
        (np.ones((3, 4)), "1", "1", r"shape \(4, 4\)"),
        (np.full((4, 4), np.inf), "1", "1", "NaN or Inf"),
        (np.ones((4, 4)), "-1", "1", "must be >= 0"),
        (np.ones((4, 4)), "1", "x", "invalid R"),
    ],
)
def test_bad_inputs(ctx, W, mu, R, match):
    with pytest.raises(MdcertError, match=match):
        init_in_region(W, mu=mu, R=R, p="2", alpha="opt").check(ctx)


def test_no_certified_wmm_never_holds(monkeypatch, W0):
    import certify.svm

    def boom(*a, **k):
        raise ArithmeticError("solver failure")

    monkeypatch.setattr(certify.svm, "certify_svm", boom)
    ctx = CheckContext(synthetic_problem(n=4, T=4, d=4, seed=3))
    rep = init_in_region(W0, mu="100", R="0", p="2", alpha="opt").check(ctx)
    assert rep.verdict is U  # the norm part holds, the Bregman part cannot be enclosed


# ---------------------------------------------------------------- adversarial review (round 2)
def test_zero_init_fails_the_norm_or_is_undecided(ctx):
    """W(0) = 0 has no direction: a report (FAILS when R > 0, UNDECIDED otherwise), never a crash."""
    W = np.zeros((4, 4))
    rep = init_in_region(W, mu="1", R="1", p="2", alpha="opt").check(ctx)
    assert rep.verdict is Verdict.FAILS and "R" in rep.message
    rep = init_in_region(W, mu="1", R="0", p="2", alpha="opt").check(ctx)
    assert rep.verdict is U and "no direction" in rep.message
    rep = init_in_region(-0.0 * np.ones((4, 4)), mu="1", R=None, p="1.5", alpha="opt").check(ctx)
    assert rep.verdict is U


@pytest.mark.parametrize("W", [np.full((4, 4), np.nan), np.eye(4) * np.array([1, 1, np.nan, 1])])
def test_nan_init_is_bad_input(ctx, W):
    with pytest.raises(MdcertError, match="NaN"):
        init_in_region(W, mu="1", R="1", p="2", alpha="opt").check(ctx)


def test_certificate_rejected_by_the_checker_is_not_used(monkeypatch, W0):
    """A certificate the independent checker rejects (here: a corrupted direction error of 0) gives
    an unbounded Bregman enclosure, never a HOLDS built on it."""
    import dataclasses

    import certify.svm

    real = certify.svm.certify_svm

    def forged(*a, **k):
        c = real(*a, **k)
        return dataclasses.replace(c, direction_error_upper=Fraction(0), distance_upper=Fraction(0))

    monkeypatch.setattr(certify.svm, "certify_svm", forged)
    ctx2 = CheckContext(synthetic_problem(n=4, T=4, d=4, seed=3))
    d_ev, _, _ = init_in_region(W0, mu="100", R="0", p="1.5", alpha="opt").enclose(ctx2)
    assert d_ev.hi is None and not d_ev.method.rigorous
    rep = init_in_region(W0, mu="100", R="0", p="1.5", alpha="opt").check(ctx2)
    assert rep.verdict is U
