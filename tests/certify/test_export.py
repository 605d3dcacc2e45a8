"""`certify.export`: the certified solution as float64 arrays, with rigorous distances to the optimum."""

from __future__ import annotations

import json
from dataclasses import replace
from fractions import Fraction

import mpmath
import numpy as np
import pytest

from certify import (
    AttentionProblem,
    CertifiedSolution,
    CertStatus,
    ExactVector,
    certified_solution,
    certify_svm,
    synthetic_problem,
)
from certify.errors import MdcertError


@pytest.fixture(scope="module")
def problem() -> AttentionProblem:
    return synthetic_problem(n=3, T=4, d=4, seed=3)


@pytest.fixture(scope="module")
def cert(problem):
    return certify_svm(problem, "1.75", alpha="opt", digits=30)


def _lp_distance(a: np.ndarray, exact: list[Fraction], p: Fraction) -> mpmath.mpf:
    """``||a - exact||_p`` at 200 digits (a float array against exact rationals)."""
    with mpmath.workdps(200):
        pf = mpmath.mpf(p.numerator) / p.denominator
        s = sum(
            abs(
                mpmath.mpf(Fraction(float(x)).numerator) / Fraction(float(x)).denominator
                - mpmath.mpf(e.numerator) / e.denominator
            )
            ** pf
            for x, e in zip(a.ravel(), exact)
        )
        return s ** (1 / pf)


def _mp(x: Fraction) -> mpmath.mpf:
    with mpmath.workdps(200):
        return mpmath.mpf(x.numerator) / x.denominator


def test_attention_point_is_row_major_and_feasible(problem, cert) -> None:
    sol = certified_solution(cert, problem=problem)
    assert isinstance(sol, CertifiedSolution) and sol.svm == "attention" and sol.p == Fraction(7, 4)
    W = sol.point
    assert W.shape == (4, 4) and W.dtype == np.float64 and not W.flags.writeable
    assert np.array_equal(W.ravel(), cert.w.to_float())  # W[j, k] = w[j*d + k]
    cs = problem.attention_constraints(list(cert.alpha))
    left, right = cs.left.to_float(), cs.right.to_float()
    margins = np.einsum("rj,jk,rk->r", left, W, right)  # a^T vec(W) = left^T W right
    assert margins.min() > 1 - 1e-12
    assert (
        np.einsum("rj,jk,rk->r", left, W.T, right).min() < 0.9
    )  # the transpose is not the solution


def test_rounding_terms_are_rigorous(problem, cert) -> None:
    sol = certified_solution(cert)
    w = cert.w.fractions()
    assert _lp_distance(sol.point, w, cert.p) <= _mp(sol.rounding)
    assert sol.distance_upper == cert.distance_upper + sol.rounding
    with mpmath.workdps(200):
        pf = mpmath.mpf(7) / 4
        norm = sum(abs(mpmath.mpf(x.numerator) / x.denominator) ** pf for x in w) ** (1 / pf)
        u = [mpmath.mpf(x.numerator) / x.denominator / norm for x in w]
        err = sum(
            abs(mpmath.mpf(Fraction(float(a)).numerator) / Fraction(float(a)).denominator - b) ** pf
            for a, b in zip(sol.direction.ravel(), u)
        ) ** (1 / pf)
    assert err <= _mp(sol.direction_error_upper - cert.direction_error_upper)
    assert 0 < sol.rounding < Fraction(1, 10**14) and sol.direction_error_upper < Fraction(
        1, 10**14
    )


def test_distance_to_a_sharper_certificate(problem, cert) -> None:
    """||point - w_ref|| <= ||point - W_mm|| + ||W_mm - w_ref||: both bounds rigorous, so this must hold."""
    sol = certified_solution(cert)
    ref = certify_svm(problem, "1.75", alpha="opt", digits=90)
    assert _lp_distance(sol.point, ref.w.fractions(), cert.p) <= _mp(
        sol.distance_upper + ref.distance_upper
    )


def test_decoder_vector_and_exact_kkt(problem) -> None:
    dec = certify_svm(problem, "3", svm="decoder", alpha="opt", digits=30)
    sol = certified_solution(dec.to_json(), problem=problem)  # a JSON dict works too
    assert sol.point.shape == (4,) and sol.direction.shape == (4,)
    assert np.all(
        problem.decoder_constraints(list(dec.alpha)).left.to_float() @ sol.point > 1 - 1e-12
    )
    p2 = certify_svm(problem, "2", alpha="opt", digits=30)
    sol2 = certified_solution(p2)
    assert p2.exact_kkt and sol2.exact_kkt and sol2.distance_upper == sol2.rounding
    assert "row-major" in sol2.describe() and json.loads(json.dumps(sol2.to_json()))["shape"] == [
        4,
        4,
    ]


def _infeasible():
    X = np.zeros((2, 2, 2))
    X[0, 0], X[1, 0] = [1.0, 2.0], [-2.0, -4.0]
    pr = AttentionProblem(X, np.ones(2), np.ones((2, 2)), np.ones(2), alpha=[0, 0])
    return certify_svm(pr, "1.5", svm="decoder")


@pytest.mark.parametrize(
    "make, pattern",
    [
        (lambda c, pr: _infeasible(), "status is infeasible"),
        (
            lambda c, pr: replace(c, status=CertStatus.NO_VERIFIED_RESULT),
            "status is no_verified_result",
        ),
        (
            lambda c, pr: replace(c, w=ExactVector(c.w.ints[:-1], c.w.exp, c.w.den)),
            "has 15 entries, but d = 4 needs 16",
        ),
        (
            lambda c, pr: replace(c, w=ExactVector(c.w.ints, c.w.exp + 4000, c.w.den)),
            "beyond the float64 range",
        ),
        (lambda c, pr: replace(c, w=ExactVector((0,) * 16, 0, 1)), "zero|direction"),
    ],
)
def test_refuses_what_holds_no_exportable_solution(problem, cert, make, pattern) -> None:
    with pytest.raises(MdcertError, match=pattern):
        certified_solution(make(cert, problem))


def test_refuses_a_certificate_the_checker_rejects(problem, cert) -> None:
    bad = replace(cert, opt_lower=cert.opt_upper * 2)  # a false claim
    certified_solution(bad)  # without the problem the claims are taken as given ...
    with pytest.raises(MdcertError, match="does not verify against this problem"):
        certified_solution(bad, problem=problem)  # ... with it, the checker must accept them first
    other = synthetic_problem(n=3, T=4, d=4, seed=4)
    with pytest.raises(MdcertError, match="data hash differs"):
        certified_solution(cert, problem=other)
