"""Tests of theorems.stepsize: the rigorous relative-smoothness check along a recorded path."""

from __future__ import annotations

from fractions import Fraction

import mpmath
import numpy as np
import pytest

from certify.errors import MdcertError
from certify.synth import synthetic_problem
from theorems.logits import exact_logits
from theorems.stepsize import check_steps, step_size_convex_along_path
from theorems.verdict import Method, Verdict

H, F, U = Verdict.HOLDS, Verdict.FAILS, Verdict.UNDECIDED


def _grad(prob, W):
    s = np.einsum("ntd,de,ne->nt", prob.X, W, prob.z)
    s = s - s.max(1, keepdims=True)
    sig = np.exp(s)
    sig /= sig.sum(1, keepdims=True)
    h = prob.X @ prob.v
    f = (sig * h).sum(1)
    lp = -1 / (1 + np.exp(prob.y * f))
    c = (lp * prob.y)[:, None] * sig * (h - f[:, None])
    return np.einsum("nt,ntd,ne->de", c, prob.X, prob.z) / prob.n


def md_path(prob, W0, p, lr, K):
    """Plain numpy l_p mirror descent (logistic loss, fixed decoder), every iterate."""
    p = float(Fraction(p))
    out = [W0]
    W = W0
    for _ in range(K):
        Q = np.sign(W) * np.abs(W) ** (p - 1) - lr * _grad(prob, W)
        W = np.sign(Q) * np.abs(Q) ** (1 / (p - 1))
        out.append(W)
    return np.array(out)


def mp_bregmans(prob, A, B, p):
    """Independent D_L(A, B) and D_psi(A, B) in mpmath (W-space gradient, 60 digits)."""
    mpmath.mp.dps = 60
    X = [[[mpmath.mpf(float(c)) for c in x] for x in Xi] for Xi in prob.X]
    z = [[mpmath.mpf(float(c)) for c in zi] for zi in prob.z]
    v = [mpmath.mpf(float(c)) for c in prob.v]
    d = prob.d
    P = mpmath.mpf(Fraction(p).numerator) / Fraction(p).denominator
    Am = [[mpmath.mpf(float(A[j, k])) for k in range(d)] for j in range(d)]
    Bm = [[mpmath.mpf(float(B[j, k])) for k in range(d)] for j in range(d)]

    def loss_and_grad(W):
        L, G = mpmath.mpf(0), [[mpmath.mpf(0)] * d for _ in range(d)]
        for i in range(prob.n):
            Wz = [mpmath.fsum(W[j][k] * z[i][k] for k in range(d)) for j in range(d)]
            s = [mpmath.fsum(x[j] * Wz[j] for j in range(d)) for x in X[i]]
            e = [mpmath.exp(si) for si in s]
            Z = mpmath.fsum(e)
            sig = [ei / Z for ei in e]
            h = [mpmath.fsum(x[j] * v[j] for j in range(d)) for x in X[i]]
            f = mpmath.fsum(a * b for a, b in zip(sig, h))
            y = int(prob.y[i])
            L += mpmath.log(1 + mpmath.exp(-y * f))
            lp = -1 / (1 + mpmath.exp(y * f))
            for t, x in enumerate(X[i]):
                c = lp * y * sig[t] * (h[t] - f)
                for j in range(d):
                    for k in range(d):
                        G[j][k] += c * x[j] * z[i][k]
        return L / prob.n, [[g / prob.n for g in row] for row in G]

    LA, _ = loss_and_grad(Am)
    LB, GB = loss_and_grad(Bm)
    DL = LA - LB - mpmath.fsum(GB[j][k] * (Am[j][k] - Bm[j][k]) for j in range(d) for k in range(d))
    psi = lambda W: mpmath.fsum(abs(w) ** P for row in W for w in row) / P  # noqa: E731
    gpsi = lambda w: mpmath.sign(w) * abs(w) ** (P - 1)  # noqa: E731
    Dpsi = (
        psi(Am)
        - psi(Bm)
        - mpmath.fsum(gpsi(Bm[j][k]) * (Am[j][k] - Bm[j][k]) for j in range(d) for k in range(d))
    )
    return DL, Dpsi


@pytest.fixture(scope="module")
def small():
    return synthetic_problem(n=3, T=4, d=3, seed=5)


def test_exact_logits_match_float(small):
    Ws = (
        np.random.default_rng(0).standard_normal((3, 3, 3))
        * np.array([1, 1e-200, 1e5])[:, None, None]
    )
    S = exact_logits(small, Ws)
    ref = np.einsum("ntd,kde,ne->knt", small.X, Ws, small.z)
    got = np.vectorize(lambda b: float(b.mid()))(S)
    assert np.allclose(got, ref, rtol=1e-12, atol=0)
    assert all(b.is_exact() for b in S.ravel())


@pytest.mark.parametrize("p", ["1.5", "2", "3"])
def test_holds_and_agrees_with_independent_mpmath(small, p):
    W0 = np.random.default_rng(1).standard_normal((3, 3)) * 0.3
    Ws = md_path(small, W0, p, 0.1, 12)
    res = check_steps(small, Ws, Fraction(1, 10), Fraction(p), prefilter=False)
    assert (res.status == 1).all()
    for k in (0, 5, 11):
        DL, Dpsi = mp_bregmans(small, Ws[k + 1], Ws[k], p)
        ratio = Fraction(1, 10) * Fraction(str(DL / Dpsi))
        tol = Fraction(1, 10**40)
        assert res.ratio_lo[k] - tol <= ratio <= res.ratio_hi[k] + tol
    rep = step_size_convex_along_path("0.1", Ws, p=p).check(small)
    assert rep.verdict is H
    assert rep.evidence[0].method is Method.INTERVAL and rep.evidence[0].hi == 0


def test_large_eta_fails_on_steps_where_L_curves_up(small):
    W0 = np.random.default_rng(2).standard_normal((3, 3)) * 0.1  # here D_L > 0 on every step
    Ws = md_path(small, W0, "2", 0.5, 6)
    rep = step_size_convex_along_path("100000", Ws, p="2").check(small)
    assert rep.verdict is F
    k = rep.evidence[0].data["first_refuted"][0]
    DL, Dpsi = mp_bregmans(small, Ws[k + 1], Ws[k], "2")
    assert DL > Dpsi / 100000  # the refuted step really violates the inequality
    assert "lower the step size" in rep.message


def test_repeated_iterate_passes_exactly(small):
    W0 = np.random.default_rng(3).standard_normal((3, 3))
    Ws = np.stack([W0, W0, W0 * 1.01])
    res = check_steps(small, Ws, Fraction(1), Fraction(3, 2))
    assert res.status[0] == 1 and res.ratio_lo[0] == res.ratio_hi[0] == 0 and res.precision[0] == 0


def test_undecided_when_precision_cannot_separate(small):
    W0 = np.random.default_rng(4).standard_normal((3, 3)) * 0.3
    Ws = md_path(small, W0, "2", 0.1, 3)
    rep = step_size_convex_along_path("0.1", Ws, p="2", precisions=(3,), prefilter=False).check(
        small
    )
    assert rep.verdict is U and "too close to separate" in rep.message
    ev = rep.evidence[0]
    assert ev.lo == 0 and ev.hi == 3


def test_non_rigorous_loss_is_undecided(small):
    Ws = md_path(small, np.eye(3), "2", 0.1, 2)
    rep = step_size_convex_along_path("0.1", Ws, p="2", loss="hinge").check(small)
    assert rep.verdict is U and rep.evidence[0].method is Method.SAMPLED


@pytest.mark.parametrize(
    "traj,eta,match",
    [
        (np.zeros((1, 3, 3)), "0.1", "K >= 1"),
        (np.zeros((2, 3, 2)), "0.1", r"shape \(K\+1, 3, 3\)"),
        (np.full((2, 3, 3), np.nan), "0.1", "NaN or Inf"),
        (np.zeros((2, 3, 3)), "0", "must be > 0"),
        (np.zeros((2, 3, 3)), "-1", "must be >= 0"),
        ("abc", "0.1", "numeric array"),
    ],
)
def test_bad_inputs(small, traj, eta, match):
    with pytest.raises(MdcertError, match=match):
        step_size_convex_along_path(eta, traj, p="2").check(small)


@pytest.mark.slow
@pytest.mark.parametrize("p", ["1.1", "1.75", "2", "3"])
def test_paper_size_2000_steps_decided(p):
    prob = synthetic_problem()
    W0 = np.random.default_rng(1).standard_normal((10, 10)) * 0.1
    Ws = md_path(prob, W0, p, 0.1, 2000)
    rep = step_size_convex_along_path("0.1", Ws, p=p).check(prob)
    assert rep.verdict is not U


# ------------------------------------------------------- normalized steps: one step size per step
def md_path_normalized(prob, W0, p, lr, K):
    """Numpy l_p mirror descent with normalized steps G/||G||_q; every iterate and each step's lr/||G||_q."""
    pf = float(Fraction(p))
    q = pf / (pf - 1)
    out, etas, W = [W0], [], W0
    for _ in range(K):
        G = _grad(prob, W)
        eta_k = lr / float((np.abs(G) ** q).sum() ** (1 / q))
        Q = np.sign(W) * np.abs(W) ** (pf - 1) - eta_k * G
        W = np.sign(Q) * np.abs(Q) ** (1 / (pf - 1))
        out.append(W)
        etas.append(Fraction(eta_k))
    return np.array(out), etas


@pytest.mark.parametrize("p", ["2", "1.5"])
def test_per_step_sizes_equal_to_eta_agree_with_the_constant_check(small, p):
    W0 = np.random.default_rng(1).standard_normal((3, 3)) * 0.3
    Ws = md_path(small, W0, p, 0.1, 8)
    const = check_steps(small, Ws, Fraction(1, 10), Fraction(p))
    per = check_steps(small, Ws, [Fraction(1, 10)] * 8, Fraction(p))
    assert (const.status == per.status).all() and const.ratio_hi == per.ratio_hi


def test_normalized_path_checked_with_its_own_step_sizes(small):
    W0 = np.random.default_rng(2).standard_normal((3, 3)) * 0.3
    Ws, etas = md_path_normalized(small, W0, "1.75", 0.1, 10)
    rep = step_size_convex_along_path("0.1", Ws, p="1.75", step_etas=etas).check(small)
    assert rep.verdict is H and "eta_k = eta/||G(W_k)||_q (normalized steps)" in rep.message
    assert rep.evidence[0].data["step_rule"] == "normalized"
    big = list(etas)
    k = 4
    DL, Dpsi = mp_bregmans(small, Ws[k + 1], Ws[k], "1.75")
    big[k] = Fraction(str(2 * Dpsi / DL)) if DL > 0 else big[k]  # twice the largest passing size
    if DL > 0:
        bad = step_size_convex_along_path("0.1", Ws, p="1.75", step_etas=big).check(small)
        assert bad.verdict is F and bad.evidence[0].data["first_refuted"] == [k]


@pytest.mark.parametrize(
    "etas,options,match",
    [
        ([Fraction(1, 10)] * 3, {}, "3 step sizes for a trajectory of 2 steps"),
        ([Fraction(1, 10), Fraction(0)], {}, "must all be > 0"),
        ([Fraction(1, 10)] * 2, {"segment": True}, "--segment.* is for constant steps"),
    ],
)
def test_bad_per_step_sizes(small, etas, options, match):
    Ws = md_path(small, np.eye(3), "2", 0.1, 2)
    with pytest.raises(MdcertError, match=match):
        step_size_convex_along_path("0.1", Ws, p="2", step_etas=etas, **options).check(small)
