"""`certify.regression.psi`: the certified gradient-descent limit ``min Q_alpha(beta) s.t. X beta = y``
against its closed form on one constraint (mpmath at high precision), the refusals, and against the
limit of the gradient-descent paths of `experiments.diagnet` (docs/theory.md section 8.9)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from certify.regression import RegressionProblem, regression_problem
from certify.regression.certificate import InterpStatus
from certify.regression.psi import certify_psi
from certify.regression.psicheck import check_psi

mpmath = pytest.importorskip("mpmath")


def _mp(x: Fraction):
    return mpmath.mpf(x.numerator) / x.denominator


def _closed_form(a: np.ndarray, y: float, alpha: Fraction):
    """One row ``a^T beta = y``: ``beta_i = 2 alpha^2 sinh(a_i t)``, ``sum_i a_i beta_i = y``; OPT."""
    a2 = _mp(alpha) ** 2
    av = [mpmath.mpf(float(v)) for v in a]

    def f(t):
        return mpmath.fsum(ai * 2 * a2 * mpmath.sinh(ai * t) for ai in av) - mpmath.mpf(float(y))

    hi = mpmath.mpf(1)  # f is increasing in t: bracket the root, then the Illinois method
    while f(hi) < 0 or f(-hi) > 0:
        hi *= 2
    t = mpmath.findroot(f, (-hi, hi), solver="illinois") if y != 0 else mpmath.mpf(0)
    beta = [2 * a2 * mpmath.sinh(ai * t) for ai in av]

    def q(z):
        return 2 - mpmath.sqrt(4 + z * z) + z * mpmath.asinh(z / 2)

    return beta, mpmath.fsum(a2 * q(b / a2) for b in beta)


@pytest.mark.parametrize(
    "a, y, alpha",
    [
        ([1.0, -0.5, 0.25, 2.0], 1.5, Fraction(1, 10)),
        ([0.3, 0.7, -1.1], -2.0, Fraction(1)),
        ([1.0, 1.0, 1.0, 1.0, 1.0], 0.5, Fraction(3, 2)),
        ([2.0, -0.125, 0.5], 4.0, Fraction(1, 20)),
    ],
)
def test_one_row_enclosure_holds_the_high_precision_closed_form(a, y, alpha) -> None:
    problem = RegressionProblem(np.array([a]), np.array([y]))
    cert = certify_psi(problem, alpha).certificate
    assert cert.status is InterpStatus.OPTIMAL
    with mpmath.workdps(150):
        beta, opt = _closed_form(np.array(a), y, alpha)
        assert _mp(cert.opt_lower) <= opt <= _mp(cert.opt_upper)
        scale = Fraction(2) ** cert.beta.exp / cert.beta.den
        dist = mpmath.sqrt(
            mpmath.fsum((_mp(k * scale) - b) ** 2 for k, b in zip(cert.beta.ints, beta))
        )
        assert dist <= _mp(cert.distance_upper)
    assert cert.opt_upper - cert.opt_lower < Fraction(1, 10**60) * max(cert.opt_upper, 1)
    assert check_psi(problem, cert, alpha=alpha).ok


@pytest.mark.parametrize("kind, N, D", [("gaussian", 4, 9), ("block", 3, 6)])
@pytest.mark.parametrize("alpha", ["0.1", "1", "5/2"])
def test_certificates_are_tight_and_accepted(kind, N, D, alpha) -> None:
    problem = regression_problem(kind, N=N, D=D, seed=1)
    result = certify_psi(problem, alpha)
    cert = result.certificate
    assert cert.status is InterpStatus.OPTIMAL
    assert 0 < cert.opt_lower <= cert.opt_upper
    assert cert.opt_upper - cert.opt_lower < Fraction(1, 10**60) * cert.opt_upper
    assert cert.distance_upper < Fraction(1, 10**30)
    assert check_psi(problem, cert).ok
    assert np.allclose(problem.X @ result.point, problem.y, atol=1e-12)


def test_zero_target_gives_the_zero_point() -> None:
    problem = RegressionProblem(np.array([[1.0, 2.0, 3.0]]), np.array([0.0]))
    cert = certify_psi(problem, "0.5").certificate
    assert cert.status is InterpStatus.OPTIMAL
    assert not any(cert.beta.ints)  # OPT = 0 at beta = 0; the bounds carry the checker's slack
    assert -Fraction(1, 2**200) < cert.opt_lower <= 0 <= cert.opt_upper < Fraction(1, 2**200)
    assert cert.distance_upper < Fraction(1, 2**90)
    assert check_psi(problem, cert).ok


def test_dependent_rows_and_large_n_are_refused_with_a_reason(monkeypatch) -> None:
    X = np.array([[1.0, 2.0, 0.5], [2.0, 4.0, 1.0]])
    cert = certify_psi(RegressionProblem(X, np.array([1.0, 2.0])), "0.1").certificate
    assert cert.status is InterpStatus.NO_VERIFIED_RESULT and "singular" in cert.reason
    import certify.regression.psi as psi

    monkeypatch.setattr(psi, "EXACT_PROJECTION_LIMIT", 2)
    cert = certify_psi(regression_problem("gaussian", N=3, D=6, seed=0), "0.1").certificate
    assert cert.status is InterpStatus.NO_VERIFIED_RESULT and "N > 2" in cert.reason


def test_the_gradient_descent_paths_end_at_the_certified_point() -> None:
    """Gradient descent on beta = w+^2 - w-^2 from w+- = alpha 1 (loss ||X beta - y||^2 / 4) tends to
    argmin sum alpha^2 q(beta_i / alpha^2) on X beta = y: at step lr the limit is off by O(lr)
    (measured 0.020 lr at alpha = 0.1 and 0.013 lr at alpha = 0.5, lr = 1e-2 and 3e-3), while the
    potential with alpha in place of alpha^2 puts its minimizer 0.23 away."""
    pytest.importorskip("torch")
    from experiments.diagnet.engine import DiagConfig, Rule, run_diag_paths

    problem = regression_problem("gaussian", N=2, D=5, seed=0)
    for alpha in (0.1, 0.5):
        point = certify_psi(problem, str(alpha)).point
        dists = []
        for lr in (1e-2, 3e-3):
            steps = int(60 / lr)
            config = DiagConfig(
                rule=Rule.GD, alpha=(alpha,), lr=(lr,), steps=steps, record_every=steps
            )
            result = run_diag_paths(problem, config)
            assert result.loss[0, -1] < 1e-20
            dists.append(float(np.linalg.norm(result.beta_final[0] - point)))
            assert dists[-1] <= 0.05 * lr
        assert dists[1] < dists[0] / 2  # first order in lr
    wrong = certify_psi(problem, str(np.sqrt(0.1))).point  # Q with alpha in place of alpha^2
    assert np.linalg.norm(wrong - certify_psi(problem, "0.1").point) > 0.1
