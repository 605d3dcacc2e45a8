"""certify.regression.check: the independent checker refuses every false or stray claim."""

from __future__ import annotations

import dataclasses
import json
from fractions import Fraction

import numpy as np
import pytest
from flint import arb, ctx, fmpq

from certify.errors import MdcertError
from certify.exact import dyadic
from certify.regression import (
    ExactVec,
    InterpolationCertificate,
    InterpStatus,
    RegressionProblem,
    certify_interpolation,
    check_interpolation,
)
from certify.regression.check import (
    distance_upper,
    norm_ball,
    residual_bound,
    residual_of,
    sigma_lower,
    upper_ball,
)
from certify.regression.intmat import IntMatrix


def _b(x: Fraction):
    return arb(fmpq(x.numerator, x.denominator))


@pytest.fixture(scope="module")
def solved():
    rng = np.random.default_rng(5)
    pr = RegressionProblem(rng.standard_normal((5, 12)), rng.standard_normal(5))
    return pr, certify_interpolation(pr, "1.5").certificate


def _nudge(v: ExactVec, i: int = 0) -> ExactVec:
    ints = list(v.ints)
    ints[i] += 1 << max(1, abs(ints[i]).bit_length() - 20)
    return dataclasses.replace(v, ints=tuple(ints))


TAMPER = [
    (
        "opt_lower",
        lambda c: dataclasses.replace(c, opt_lower=c.opt_upper * Fraction(1 + 10**-9)),
        "opt_lower",
    ),
    (
        "opt_upper",
        lambda c: dataclasses.replace(c, opt_upper=c.opt_lower * Fraction(1 - 10**-9)),
        "opt_upper",
    ),
    (
        "distance",
        lambda c: dataclasses.replace(c, distance_upper=c.distance_upper / 1000),
        "distance_upper",
    ),
    ("residual", lambda c: dataclasses.replace(c, beta=_nudge(c.beta)), "residual"),
    ("mu", lambda c: dataclasses.replace(c, mu=_nudge(c.mu)), "opt_lower"),
    ("hash", lambda c: dataclasses.replace(c, data_hash="sha256:" + "0" * 64), "data_hash"),
    ("p", lambda c: dataclasses.replace(c, p=Fraction(7, 4)), "opt_upper|opt_lower|distance"),
]


@pytest.mark.parametrize("name, tamper, failing", TAMPER, ids=[t[0] for t in TAMPER])
def test_tampered_certificates_are_rejected(solved, name, tamper, failing) -> None:
    pr, cert = solved
    assert check_interpolation(pr, cert).ok
    bad = check_interpolation(pr, tamper(cert))
    assert not bad.ok and any(__import__("re").match(failing, f) for f in bad.failures), (
        bad.failures
    )


def test_json_round_trip_and_stray_fields(solved) -> None:
    pr, cert = solved
    obj = json.loads(json.dumps(cert.to_json()))
    assert check_interpolation(pr, InterpolationCertificate.from_json(obj)).ok
    for stray, status in (
        ("kernel", "optimal"),
        ("beta", "no_verified_result"),
        ("mu", "inconsistent"),
    ):
        bad = dict(obj, status=status, **{stray: obj.get(stray, obj["mu"])})
        with pytest.raises(MdcertError, match=f"carries no .*{stray}"):
            InterpolationCertificate.from_json(bad)


@pytest.mark.parametrize(
    "field, value, message",
    [
        ("p", "1", r"p"),
        ("shape", [5], r"shape must be \[N, D\]"),
        ("beta", {"ints": ["1"], "exp": 0, "den": "1"}, r"beta.ints must be a list of 12"),
        ("mu", {"ints": ["x"] * 5, "exp": 0, "den": "1"}, r"decimal integer strings"),
        ("mu", {"ints": ["1"] * 5, "exp": 0, "den": "0"}, r"mu.den must be a positive integer"),
        ("opt_lower", "abc", r"not an exact rational"),
    ],
)
def test_malformed_fields_are_refused_in_one_line(solved, field, value, message) -> None:
    _, cert = solved
    obj = dict(cert.to_json(), **{field: value})
    with pytest.raises(MdcertError, match=message):
        InterpolationCertificate.from_json(obj)


def test_a_false_inconsistency_claim_is_rejected() -> None:
    pr = RegressionProblem(np.array([[1.0, 2.0], [0.0, 1.0]]), np.array([1.0, 2.0]))
    fake = InterpolationCertificate(
        InterpStatus.INCONSISTENT,
        Fraction(3, 2),
        pr.data_hash(),
        (2, 2),
        kernel=ExactVec((1, 0), 0),
    )
    assert not check_interpolation(pr, fake).ok


@pytest.mark.parametrize("seed, shape", [(0, (6, 20)), (1, (30, 200)), (2, (3, 3))])
def test_sigma_lower_is_a_lower_bound_of_the_smallest_singular_value(seed, shape) -> None:
    rng = np.random.default_rng(seed)
    X = rng.standard_normal(shape) * np.exp2(rng.integers(-30, 30))
    low = sigma_lower(X)
    smin = np.linalg.svd(X, compute_uv=False).min()
    assert low is not None and 0 < float(low) <= smin * (1 + 1e-12)
    assert float(low) >= smin / (4 * np.sqrt(shape[0]))  # the trace costs at most sqrt(N)


def test_sigma_lower_without_blas(monkeypatch) -> None:
    X = np.random.default_rng(6).standard_normal((9, 40))
    monkeypatch.setenv("MDCERT_EXACT_PRODUCTS", "flint")
    low = sigma_lower(X)
    assert low is not None and 0 < float(low) <= np.linalg.svd(X, compute_uv=False).min()


def test_sigma_lower_refuses_rank_deficient_and_tall_data() -> None:
    X = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0]])
    assert sigma_lower(X) is None
    assert sigma_lower(np.ones((3, 2))) is None
    assert sigma_lower(np.zeros((2, 3))) is None


@pytest.mark.parametrize("p", [Fraction(3, 2), Fraction(3)])
def test_residual_bounds_of_both_routes_enclose_the_correction(p) -> None:
    """``||X^T (X X^T)^-1 r||_p`` for an exact residual: below both the rounded-data bound (with X)
    and the exact Gram matrix's bound (without)."""
    rng = np.random.default_rng(4)
    pr = RegressionProblem(rng.standard_normal((7, 25)), rng.standard_normal(7))
    (Zx, ex), dy = IntMatrix.of_float(pr.X), dyadic(pr.y)
    beta = ExactVec(tuple(int(v) for v in rng.integers(-(2**40), 2**40, 25)), -45)
    R, scale = residual_of(Zx, ex, [int(k) for k in dy.ints], dy.exp, beta)
    r = np.array([float(Fraction(k) * scale) for k in R])
    corr = pr.X.T @ np.linalg.solve(pr.X @ pr.X.T, r)
    true = float(np.sum(np.abs(corr) ** float(p)) ** (1 / float(p)))
    fast = residual_bound(Zx, ex, R, scale, p, X=pr.X)
    exact = residual_bound(Zx, ex, R, scale, p)
    assert true <= float(fast) * (1 + 1e-9) and true <= float(exact) * (1 + 1e-9)


def test_a_certificate_with_the_exact_gram_bound_still_checks(solved) -> None:
    """Certificates whose residual bound came from the exact Gram matrix (before the rounded-data
    bound) are accepted: the checker falls back to that bound when its first one is larger."""
    pr, cert = solved
    (Zx, ex), dy = IntMatrix.of_float(pr.X), dyadic(pr.y)
    R, scale = residual_of(Zx, ex, [int(k) for k in dy.ints], dy.exp, cert.beta)
    exact = residual_bound(Zx, ex, R, scale, cert.p)
    with ctx.workprec(400):
        ub = upper_ball(norm_ball(cert.beta.ints, Fraction(2) ** cert.beta.exp, cert.p) + _b(exact))
    dist = exact + distance_upper(ub, cert.opt_lower, cert.p)
    old = dataclasses.replace(cert, residual_upper=exact, opt_upper=ub, distance_upper=dist)
    assert check_interpolation(pr, old).ok


@pytest.mark.parametrize("a", [Fraction(2), Fraction(3), Fraction(3, 2), Fraction(4, 3)])
def test_norm_ball_encloses_the_norm(a) -> None:
    ints = [3, -(2**70) + 1, 0, 12345678901234567890, 1, -7]
    scale = Fraction(3, 2**80)
    with ctx.workprec(300):
        ball = norm_ball(ints, scale, a)
        ref = sum((_b(Fraction(abs(k))) * _b(scale)) ** _b(a) for k in ints if k) ** (1 / _b(a))
        assert ball.overlaps(ref) and ball.rad() < ref * arb(2) ** -250
