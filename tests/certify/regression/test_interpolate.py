"""certify.regression.interpolate: certified min-l_p-norm interpolation against closed forms."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from flint import arb, ctx, fmpq

from certify.exact import conjugate
from certify.regression import (
    InterpStatus,
    RegressionProblem,
    certify_interpolation,
    check_interpolation,
)


def _ball(x: Fraction):
    return arb(fmpq(x.numerator, x.denominator))


@pytest.mark.parametrize("p", ["1.1", "1.5", "2", "3", "7/2"])
def test_one_row_encloses_the_closed_form(p) -> None:
    """One equation x^T beta = y: OPT = |y| / ||x||_q exactly (Hoelder); the enclosure contains it."""
    x, y = np.array([3.0, -1.0, 0.5, 2.0]), 1.25
    pr = RegressionProblem(x[None, :], np.array([y]))
    cert = certify_interpolation(pr, p).certificate
    assert cert.status is InterpStatus.OPTIMAL and check_interpolation(pr, cert).ok
    q = conjugate(Fraction(p))
    with ctx.workprec(400):
        eq = _ball(q)
        opt = _ball(Fraction(y)) / sum((_ball(Fraction(abs(v))) ** eq for v in x), arb(0)) ** (
            1 / eq
        )
        assert _ball(cert.opt_lower) <= opt.lower() and opt.upper() <= _ball(cert.opt_upper)
    assert cert.opt_upper - cert.opt_lower < Fraction(1, 10**30) * cert.opt_upper


def test_block_data_returns_the_exact_closed_form_at_p_3_2() -> None:
    X = np.array([[1.0, 2.0, 0, 0, 0], [0, 0, 3.0, -1.0, 0.5]])
    pr = RegressionProblem(X, np.array([1.5, -2.0]))
    cert = certify_interpolation(pr, "1.5").certificate
    beta = [cert.beta.entry(i) for i in range(5)]
    # beta_i = sign(y x_i) x_i^2 |y| / sum |x_k|^3 per row
    s1, s2 = Fraction(9), Fraction(27 + 1) + Fraction(1, 8)
    want = [
        Fraction(3, 2) / s1,
        4 * Fraction(3, 2) / s1,
        -9 * 2 / s2,
        2 / s2,
        -Fraction(1, 4) * 2 / s2,
    ]
    assert beta == want and cert.residual_upper == 0
    assert check_interpolation(pr, cert).ok


@pytest.mark.parametrize("p", ["1.5", "2", "3"])
def test_random_data_certified_to_30_digits_and_checked(p) -> None:
    rng = np.random.default_rng(3)
    pr = RegressionProblem(rng.standard_normal((8, 30)), rng.standard_normal(8))
    res = certify_interpolation(pr, p)
    cert = res.certificate
    assert cert.status is InterpStatus.OPTIMAL
    assert check_interpolation(pr, cert, p=Fraction(p)).ok
    assert cert.opt_upper - cert.opt_lower < Fraction(1, 10**30) * cert.opt_upper
    assert np.allclose(pr.X @ res.point, pr.y, atol=1e-12)
    if p == "2":  # the minimum-l2-norm interpolator is the pseudo-inverse solution
        ref = np.linalg.pinv(pr.X) @ pr.y
        assert np.linalg.norm(res.point - ref) <= float(cert.distance_upper) + 1e-12


def test_inconsistent_system_gets_an_exact_fredholm_certificate() -> None:
    X = np.array([[1.0, 2.0], [2.0, 4.0], [0.0, 1.0]])  # rows 0 and 1 parallel, targets not
    pr = RegressionProblem(X, np.array([1.0, 3.0, 0.0]))
    cert = certify_interpolation(pr, "1.5").certificate
    assert cert.status is InterpStatus.INCONSISTENT
    assert check_interpolation(pr, cert).ok
    g = cert.kernel.ints
    assert sum(a * b for a, b in zip([1, 3, 0], g)) != 0


def test_duplicate_rows_with_equal_targets_are_not_verified_but_never_wrong() -> None:
    X = np.array([[1.0, 2.0, 3.0], [1.0, 2.0, 3.0]])
    pr = RegressionProblem(X, np.array([1.0, 1.0]))
    cert = certify_interpolation(pr, "2").certificate
    if cert.status is InterpStatus.OPTIMAL:  # only when the refined point solves X beta = y exactly
        assert cert.residual_upper == 0 and check_interpolation(pr, cert).ok
    else:
        assert cert.status is InterpStatus.NO_VERIFIED_RESULT and "full row rank" in cert.reason


def test_zero_targets_give_the_zero_solution() -> None:
    pr = RegressionProblem(np.ones((2, 3)), np.zeros(2))
    cert = certify_interpolation(pr, "1.5").certificate
    assert cert.opt_upper == 0 and check_interpolation(pr, cert).ok


@pytest.mark.parametrize("sep", [1e-5, 1e-7])
def test_nearly_dependent_rows_still_certify_and_fall_back_to_the_exact_gram_matrix(sep) -> None:
    """Rows ``sep`` apart: more refinement steps keep 30 digits at 1e-5; at 1e-7 the rounded data's
    bound (sigma_lower) is not positive and the exact Gram matrix's verified inverse bounds the
    residual; the checker agrees."""
    from certify.regression.check import sigma_lower

    rng = np.random.default_rng(7)
    X = rng.standard_normal((3, 12))
    X[2] = X[1] + sep * rng.standard_normal(12)
    pr = RegressionProblem(X, rng.standard_normal(3))
    assert (sigma_lower(pr.X) is None) == (sep < 1e-6)
    cert = certify_interpolation(pr, "1.5").certificate
    assert cert.status is InterpStatus.OPTIMAL and check_interpolation(pr, cert).ok
    assert 0 < cert.residual_upper
    if sep > 1e-6:
        assert cert.opt_upper - cert.opt_lower < Fraction(1, 10**30) * cert.opt_upper
