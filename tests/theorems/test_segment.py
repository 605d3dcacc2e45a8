"""Tests of theorems.segment: convexity of psi - eta L on whole segments (interval bisection)."""

from __future__ import annotations

from fractions import Fraction

import mpmath
import numpy as np
import pytest
from flint import arb, ctx

from certify.synth import synthetic_problem
from theorems.balls import arb_fraction
from theorems.segment import _g2, segment_convexity
from theorems.logits import exact_logits, token_values
from theorems.stepsize import check_steps, step_size_convex_along_path
from theorems.verdict import Verdict


@pytest.fixture(scope="module")
def small():
    return synthetic_problem(n=3, T=4, d=3, seed=5)


def _path(prob, W0, p, lr, K):
    p = float(Fraction(p))
    out, W = [W0], W0
    for _ in range(K):
        s = np.einsum("ntd,de,ne->nt", prob.X, W, prob.z)
        sig = np.exp(s - s.max(1, keepdims=True))
        sig /= sig.sum(1, keepdims=True)
        h = prob.X @ prob.v
        f = (sig * h).sum(1)
        c = (-1 / (1 + np.exp(prob.y * f)) * prob.y)[:, None] * sig * (h - f[:, None])
        G = np.einsum("nt,ntd,ne->de", c, prob.X, prob.z) / prob.n
        Q = np.sign(W) * np.abs(W) ** (p - 1) - lr * G
        W = np.sign(Q) * np.abs(Q) ** (1 / (p - 1))
        out.append(W)
    return np.array(out)


def _g_mp(prob, A, B, p, eta, tau):
    """g(tau) = psi(W_tau) - eta L(W_tau) in mpmath (independent of the ball code)."""
    P = mpmath.mpf(Fraction(p).numerator) / Fraction(p).denominator
    W = [
        [
            mpmath.mpf(float(B[j, k]))
            + tau * (mpmath.mpf(float(A[j, k])) - mpmath.mpf(float(B[j, k])))
            for k in range(prob.d)
        ]
        for j in range(prob.d)
    ]
    L = mpmath.mpf(0)
    for i in range(prob.n):
        s = [
            mpmath.fsum(
                float(x[j]) * W[j][k] * float(prob.z[i][k])
                for j in range(prob.d)
                for k in range(prob.d)
            )
            for x in prob.X[i]
        ]
        e = [mpmath.exp(si) for si in s]
        h = [
            mpmath.fsum(mpmath.mpf(float(a)) * float(b) for a, b in zip(x, prob.v))
            for x in prob.X[i]
        ]
        f = mpmath.fsum(ei * hi for ei, hi in zip(e, h)) / mpmath.fsum(e)
        L += mpmath.log(1 + mpmath.exp(-int(prob.y[i]) * f))
    psi = mpmath.fsum(abs(w) ** P for row in W for w in row) / P
    return psi - eta * L / prob.n


@pytest.mark.parametrize("p", ["1.5", "2", "3"])
def test_second_derivative_matches_mpmath(small, p):
    W0 = np.random.default_rng(7).standard_normal((3, 3)) * 0.5
    Ws = _path(small, W0, p, 0.5, 1)
    eta = Fraction(3)
    mpmath.mp.dps = 50
    ref = mpmath.diff(lambda t: _g_mp(small, Ws[1], Ws[0], p, eta, t), mpmath.mpf(1) / 3, 2)
    hint, hexp = token_values(small)
    with ctx.workprec(128):
        S = exact_logits(small, Ws)
        Wb = np.frompyfunc(arb, 1, 1)(Ws.reshape(2, -1))
        H = np.frompyfunc(lambda k: arb((int(k), hexp)), 1, 1)(hint)
        Y = np.where(small.y > 0, 1, -1).astype(object)
        tau = np.empty(1, dtype=object)
        tau[0] = arb_fraction(Fraction(1, 3))
        g = _g2(
            S[:1],
            S[1:] - S[:1],
            Wb[:1],
            Wb[1:] - Wb[:1],
            H,
            Y,
            tau,
            Fraction(p),
            arb_fraction(eta),
            "logistic",
            lower=False,
        )[0]
        assert abs(g - arb(mpmath.nstr(ref, 45))) < arb(10) ** -30
        lo = _g2(
            S[:1],
            S[1:] - S[:1],
            Wb[:1],
            Wb[1:] - Wb[:1],
            H,
            Y,
            tau,
            Fraction(p),
            arb_fraction(eta),
            "logistic",
            lower=True,
        )[0]
        assert lo.upper() <= g.upper() + arb(10) ** -30  # the proof path uses a lower bound


@pytest.mark.parametrize("p", ["1.5", "2", "3"])
def test_segment_implies_endpoint_inequality(small, p):
    W0 = np.random.default_rng(2).standard_normal((3, 3)) * 0.1
    Ws = _path(small, W0, p, 0.5, 6)
    for eta in (Fraction(1, 10), Fraction(100)):
        seg = segment_convexity(small, Ws, eta, Fraction(p))
        ends = check_steps(small, Ws, eta, Fraction(p))
        # convex on the segment => relative smoothness at its end points
        assert not np.any((seg.status == 1) & (ends.status == -1))
    assert (segment_convexity(small, Ws, Fraction(1, 10), Fraction(p)).status == 1).all()
    assert (segment_convexity(small, Ws, Fraction(10**5), Fraction(p)).status == -1).all()


def test_predicate_with_segment(small):
    W0 = np.random.default_rng(2).standard_normal((3, 3)) * 0.1
    Ws = _path(small, W0, "1.5", 0.5, 6)
    rep = step_size_convex_along_path("0.1", Ws, p="1.5", segment=True).check(small)
    assert rep.verdict is Verdict.HOLDS and "convex on every segment" in rep.message
    assert rep.evidence[-1].quantity.startswith("number of segments")
    rep = step_size_convex_along_path("100", Ws, p="1.5", segment=True).check(small)
    assert rep.verdict is Verdict.FAILS and "segment convexity" in rep.message


def test_bisection_turns_undecided_into_proofs(small):
    rng = np.random.default_rng(5)
    Ws = np.cumsum(rng.standard_normal((6, 3, 3)) * 0.5, axis=0)  # large steps: wide tau-enclosures
    shallow = segment_convexity(small, Ws, Fraction(10), Fraction(2), max_depth=0)
    deep = segment_convexity(small, Ws, Fraction(10), Fraction(2), max_depth=5)
    assert (shallow.status == 0).any() and not (shallow.status == -1).any()
    assert (deep.status == 1).all() and deep.evaluations > shallow.evaluations
    refuted = segment_convexity(small, Ws, Fraction(100), Fraction(2), max_depth=5)
    assert refuted.status[0] == -1
