"""Tests of certify.lp: l_p norm, potential, mirror maps, Bregman divergence (docs/theory.md section 2)."""

from __future__ import annotations

from fractions import Fraction

import mpmath
import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from certify import lp
from certify.errors import MdcertError

PS = ["1.1", "1.5", "7/4", "2", "3", "4", Fraction(21, 20), 2.5]
# zero or |x| in [1e-30, 8]: the maps of every tested p stay in the normal float64 range
finite = st.just(0.0) | st.tuples(st.floats(1e-30, 8), st.booleans()).map(
    lambda t: -t[0] if t[1] else t[0]
)
vectors = hnp.arrays(np.float64, st.integers(1, 6), elements=finite)
ps = st.sampled_from(PS) | st.fractions(Fraction(11, 10), Fraction(8), max_denominator=20)


def naive_bregman(A, B, p):
    e = float(Fraction(p))
    psi = lambda W: np.sum(np.abs(W) ** e) / e  # noqa: E731
    grad = np.sign(B) * np.abs(B) ** (e - 1)
    return psi(A) - psi(B) - np.sum(grad * (A - B))


@pytest.mark.parametrize("p", PS)
def test_norm_psi_against_naive(p):
    rng = np.random.default_rng(0)
    W = rng.normal(size=(3, 4, 5))
    e = float(Fraction(p)) if not isinstance(p, float) else p
    assert lp.lp_norm(W, p) == pytest.approx(np.sum(np.abs(W) ** e) ** (1 / e), rel=1e-14)
    assert lp.psi(W, p) == pytest.approx(np.sum(np.abs(W) ** e) / e, rel=1e-14)
    batched = lp.lp_norm(W, p, axis=(-2, -1))
    assert batched.shape == (3,)
    np.testing.assert_allclose(batched, [lp.lp_norm(W[i], p) for i in range(3)], rtol=1e-14)
    np.testing.assert_allclose(
        lp.psi(W, p, axis=(1, 2)), [lp.psi(W[i], p) for i in range(3)], rtol=1e-14
    )


def test_p2_is_frobenius_and_entrywise_not_spectral():
    W = np.array([[3.0, 0.0], [0.0, 4.0]])
    assert lp.lp_norm(W, 2) == pytest.approx(5.0)
    assert lp.lp_norm(W, 3) == pytest.approx((27 + 64) ** (1 / 3))


def test_norm_does_not_overflow():
    assert lp.lp_norm(np.array([1e300, 1e300]), 3) == pytest.approx(1e300 * 2 ** (1 / 3))
    assert lp.lp_norm(np.zeros((2, 2)), "7/4") == 0.0


def test_exact_exponents():
    assert lp.dual_exponent("1.1") == Fraction(11)
    assert lp.dual_exponent("7/4") == Fraction(7, 3)
    e = lp.exponents_of("1.1")
    assert (
        e.exact == Fraction(11, 10) and e.pm1 == 0.1 and e.inv_pm1 == 10.0
    )  # not 1.1 - 1 in binary
    assert lp.exponents_of(e) is e


@settings(deadline=None)
@given(vectors, ps)
@example(np.array([0.0, -1e-300, 5.0]), "1.1")
def test_round_trip(W, p):
    back = lp.inverse_mirror_map(lp.mirror_map(W, p), p)
    np.testing.assert_allclose(back, W, rtol=1e-12, atol=1e-300)
    Q = lp.mirror_map(W, p)
    np.testing.assert_allclose(
        lp.mirror_map(lp.inverse_mirror_map(Q, p), p), Q, rtol=1e-12, atol=1e-300
    )


def test_mirror_map_is_gradient_of_psi():
    rng = np.random.default_rng(1)
    W = rng.normal(size=7)
    for p in PS:
        h = 1e-6
        num = np.array(
            [
                (lp.psi(W + h * np.eye(7)[j], p) - lp.psi(W - h * np.eye(7)[j], p)) / (2 * h)
                for j in range(7)
            ]
        )
        np.testing.assert_allclose(lp.mirror_map(W, p), num, rtol=1e-7)


@settings(deadline=None)
@given(vectors, vectors, ps)
def test_bregman_nonnegative_zero_iff_equal(A, B, p):
    n = min(A.size, B.size)
    A, B = A[:n], B[:n]
    D = lp.bregman(A, B, p)
    assert D >= 0
    assert lp.bregman(A, A, p) == 0.0
    if not np.array_equal(A, B):
        assert D > 0


@settings(deadline=None)
@given(vectors, vectors, ps, st.sampled_from([0.5, 2.0, 3.0, 1e-3]))
def test_bregman_homogeneity(A, B, p, c):
    n = min(A.size, B.size)
    A, B = A[:n], B[:n]
    e = float(Fraction(p))
    np.testing.assert_allclose(
        lp.bregman(c * A, c * B, p), c**e * lp.bregman(A, B, p), rtol=1e-9, atol=1e-300
    )


@settings(deadline=None)
@given(hnp.arrays(np.float64, (3, 4), elements=finite), ps)
def test_three_point_identity(M, p):
    A, B, C = M
    lhs = lp.bregman(A, B, p) + lp.bregman(B, C, p) - lp.bregman(A, C, p)
    rhs = float(np.dot(lp.mirror_map(C, p) - lp.mirror_map(B, p), A - B))
    scale = lp.psi(A, p) + lp.psi(B, p) + lp.psi(C, p) + 1.0
    assert abs(lhs - rhs) <= 1e-12 * scale


@pytest.mark.parametrize("p", PS)
def test_bregman_matches_naive_formula(p):
    rng = np.random.default_rng(2)
    A, B = rng.normal(size=20), rng.normal(size=20)
    assert lp.bregman(A, B, p) == pytest.approx(naive_bregman(A, B, p), rel=1e-12)
    assert lp.bregman(A, B, "2") == pytest.approx(0.5 * np.sum((A - B) ** 2), rel=1e-13)


@pytest.mark.parametrize("p", ["1.1", "7/4", "3"])
@pytest.mark.parametrize("rel", [1e-9, 1e-4, 0.3])
def test_bregman_accurate_near_equality(p, rel):
    """Relative accuracy where the naive formula cancels (checked against 50-digit mpmath)."""
    a, b = np.array([1.3, -0.7, 2.0]), np.array([1.3, -0.7, 2.0]) * (1 + rel)
    mpmath.mp.dps = 50
    pe = mpmath.mpf(Fraction(p).numerator) / Fraction(p).denominator
    exact = sum(
        abs(mpmath.mpf(x)) ** pe / pe
        - abs(mpmath.mpf(y)) ** pe / pe
        - mpmath.sign(y) * abs(mpmath.mpf(y)) ** (pe - 1) * (mpmath.mpf(x) - mpmath.mpf(y))
        for x, y in zip(a, b)
    )
    assert lp.bregman(a, b, p) == pytest.approx(float(exact), rel=1e-8)


def test_normalize():
    W = np.array([[3.0, -4.0], [0.0, 1.0]])
    for p in PS:
        assert lp.lp_norm(lp.lp_normalize(W, p), p) == pytest.approx(1.0, rel=1e-14)
    stack = np.stack([W, 2 * W])
    out = lp.lp_normalize(stack, 3, axis=(1, 2))
    np.testing.assert_allclose(out[0], out[1], rtol=1e-15)


@pytest.mark.parametrize(
    "call, exc, pattern",
    [
        (lambda: lp.lp_norm([1.0], 1), MdcertError, r"invalid p: 1\b.*p > 1"),
        (lambda: lp.psi([1.0], "0.5"), MdcertError, r"invalid p: '0.5'"),
        (lambda: lp.mirror_map([1.0], "inf"), MdcertError, r"p = inf is not supported"),
        (lambda: lp.mirror_map([1.0], "abc"), MdcertError, r"invalid p: 'abc'"),
        (lambda: lp.mirror_map([np.nan], 3), MdcertError, r"W contains NaN or Inf"),
        (lambda: lp.bregman([1.0], [np.inf], 3), MdcertError, r"B contains NaN or Inf"),
        (lambda: lp.lp_normalize(np.zeros(3), 3), MdcertError, r"zero matrix"),
        (lambda: lp.mirror_map([1e300], 3), FloatingPointError, r"mirror_map overflowed"),
        (
            lambda: lp.inverse_mirror_map([1e300], "1.5"),
            FloatingPointError,
            r"inverse_mirror_map overflowed",
        ),
        (lambda: lp.psi([1e200], 2), FloatingPointError, r"psi overflowed"),
    ],
)
def test_bad_inputs(call, exc, pattern):
    with pytest.raises(exc, match=pattern):
        call()
