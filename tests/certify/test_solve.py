"""`certify.solve`: the Clarabel rescue of a failed working-set warm start at extreme p, and the
reason given when even the exact refinement cannot converge (docs/theory.md section 7.4)."""

from __future__ import annotations

import numpy as np
import pytest

import certify.solve as solve_mod
from certify import CertStatus, check_certificate
from certify.classification import ClassificationProblem
from certify.maxmargin import certify_max_margin
from certify.solve import ws_span
from certify.warmstart import WarmStart


def _relu_features(n: int) -> ClassificationProblem:
    """Digits through a seeded random two-layer ReLU net (16 features and a constant 1, K = 10):
    last-layer features like those of `mdcert study pgd`, with dead units and tiny margins."""
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    rng = np.random.default_rng(0)
    idx = np.sort(rng.permutation(len(y))[:n])
    W1 = rng.standard_normal((64, 32)) / 8
    W2 = rng.standard_normal((32, 16)) / 6
    H = np.maximum(np.maximum(X[idx] / 16 @ W1, 0) @ W2, 0).astype(np.float32).astype(np.float64)
    return ClassificationProblem(
        np.hstack([H, np.ones((n, 1))]), y[idx].astype(np.float64), classes=10
    )


def test_p_1_1_features_are_certified_through_the_clarabel_rescue(monkeypatch) -> None:
    """The working-set Newton stalls at q = 11 on these features; Clarabel's multipliers start the
    exact refinement, which converges: an enclosure the checker re-proves. Without the rescue: no
    verified result (separable, proven)."""
    prob = _relu_features(150)
    cert = certify_max_margin(prob, "1.1", digits=6)
    assert cert.status is CertStatus.OPTIMAL
    assert "did not converge" in cert.info["warm_start_failed"]
    assert cert.opt_lower <= cert.opt_upper <= cert.opt_lower * (1 + 1e-6)
    res = check_certificate(prob, cert)
    assert res.ok, res.first_failure
    monkeypatch.setattr(solve_mod, "RESCUE_ENTRIES", 0)
    off = certify_max_margin(prob, "1.1", digits=6)
    assert off.status is CertStatus.NO_VERIFIED_RESULT
    assert "feasible (proven)" in off.info["reason"]


def test_p_10_features_say_why_no_result() -> None:
    """At p = 10 neither the float warm start nor the refinement from Clarabel converges; the
    reason names both and the float64 resolution of w = |u|^(1/9)."""
    cert = certify_max_margin(_relu_features(100), "10", digits=6)
    if cert.status is CertStatus.OPTIMAL:  # a better solver: then the claim must hold up
        assert check_certificate(_relu_features(100), cert).ok
        return
    assert cert.status is CertStatus.NO_VERIFIED_RESULT
    why = cert.info["reason"]
    assert "did not converge either" in why and "feasible (proven)" in why
    assert "float64 resolves w = |u|^(1/(p-1))" in why


@pytest.mark.parametrize(
    ("p", "expect"), [("10", True), ("3", False), ("2", False), ("1.1", False)]
)
def test_ws_span_names_entries_below_float_resolution(p, expect) -> None:
    """|u| = |w|^(p-1) relative to the largest: below 1e-8 at p = 10 (1e-3^9), not at p = 3
    (1e-4^2 = 1e-8) nor at p <= 2 (not the reason there)."""
    from fractions import Fraction

    w = np.array([1.0, 0.5, 1e-3, -1e-4, 0.0])
    text = ws_span(WarmStart(np.ones(2), w, "x", np.inf), Fraction(p))
    assert bool(text) is expect
    if expect:
        assert f"at p = {p} " in text and "% of the entries of u" in text


def test_next_bits_from_the_shortfall_decides_the_undecided_rows() -> None:
    """p = 1.1 at 40 bits leaves rows with a multiplier undecided; the bits `next_bits` picks
    from the bounds' shortfall decide them all in one more refinement (doubling would not)."""
    from fractions import Fraction

    from certify.bounds import ball_bounds, make_feasible
    from certify.certificate import ExactVector
    from certify.ops import ExactOps
    from certify.refine import refine
    from certify.synth import planted_problem
    from certify.warmstart import warm_start

    cs = planted_problem(n=20, T=6, d=4, seed=0).attention_constraints()
    ops, pf = ExactOps(cs), Fraction("1.1")
    ws = warm_start(cs.rows(), float(pf))

    def bounds(bits):
        ref = refine(ops, pf, ws.lam, bits=bits)
        w = make_feasible(ops, ref.w_ints, ref.w_exp, bits=bits)
        lam = ExactVector.from_dyadic(ref.lam_ints, ref.lam_exp)
        return ball_bounds(ops, pf, w, lam, bits=bits)

    b = bounds(40)
    assert b.support.undecided and b.short_log2 is not None and b.short_log2 > 0
    bits = solve_mod.next_bits(40, b, pf, 5)
    assert bits > 80  # more than doubling: the dual error scales like gap^(1/q), q = 11
    b2 = bounds(bits)
    assert not b2.support.undecided and b2.short_log2 is None


@pytest.mark.parametrize(
    "short, width, p, expect",
    [
        (None, True, "1.1", 200),  # no hint: double
        (3.0, False, "1.1", 200),  # width not reached: double
        (3.0, True, "1.1", 155),  # 100 + 11 * 5
        (0.0, True, "3", 125),  # at least 1.25x
        (1000.0, True, "1.5", 400),  # at most 4x
        (-5.0, True, "2", 125),  # a shortfall below 1 counts as 1: 100 + 2 * 2, then 1.25x
    ],
)
def test_next_bits_table(short, width, p, expect) -> None:
    from fractions import Fraction
    from types import SimpleNamespace

    hi = Fraction(1) + (Fraction(0) if width else Fraction(1, 10))
    b = SimpleNamespace(short_log2=short, opt_lower=Fraction(1), opt_upper=hi)
    assert solve_mod.next_bits(100, b, Fraction(p), 5) == expect
    assert solve_mod.next_bits(100, None, Fraction(p), 5) == 200
