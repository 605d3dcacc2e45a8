"""`certify.regression.psicheck`: the trusted checker of ``min Q_alpha(beta) s.t. X beta = y``
certificates accepts honest ones, rejects tampered ones claim by claim, parses strictly, and loads
no solver (docs/theory.md section 8.9)."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest

from certify.errors import MdcertError
from certify.regression import regression_problem
from certify.regression.certificate import ExactVec
from certify.regression.psi import certify_psi
from certify.regression.psicheck import PsiCertificate, check_psi, level_box

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def honest():
    problem = regression_problem("gaussian", N=3, D=7, seed=2)
    return problem, certify_psi(problem, "0.2").certificate


def _first_failure(problem, cert) -> str:
    result = check_psi(problem, PsiCertificate.from_json(cert.to_json()))
    assert not result.ok
    return result.failures[0]


def test_an_honest_certificate_round_trips_and_is_accepted(honest) -> None:
    problem, cert = honest
    again = PsiCertificate.from_json(json.loads(json.dumps(cert.to_json())))
    assert again == cert
    result = check_psi(problem, again, alpha=Fraction(1, 5))
    assert result.ok and "feasible" in result.checked and "distance_upper" in result.checked


def test_tampered_bounds_are_rejected(honest) -> None:
    problem, cert = honest
    gap = cert.opt_upper - cert.opt_lower
    for change, claim in [
        (dict(opt_upper=cert.opt_lower), "opt_upper"),
        (dict(opt_upper=cert.opt_upper - 10 * gap), "opt_upper"),
        (dict(opt_lower=cert.opt_upper + gap), "opt_lower"),
        (dict(opt_lower=cert.opt_lower + 10 * gap), "opt_lower"),
        (dict(distance_upper=Fraction(1, 10**100)), "distance_upper"),
    ]:
        assert _first_failure(problem, dataclasses.replace(cert, **change)).startswith(claim)


def test_a_wrong_mu_a_wrong_point_or_a_wrong_alpha_is_rejected(honest) -> None:
    problem, cert = honest
    mu = cert.mu
    wrong_mu = ExactVec(tuple(k * 11 // 10 for k in mu.ints), mu.exp, mu.den)  # 10% off
    assert _first_failure(problem, dataclasses.replace(cert, mu=wrong_mu)).startswith("opt_lower")
    b = cert.beta
    wrong_beta = ExactVec((b.ints[0] + 1, *b.ints[1:]), b.exp, b.den)
    assert _first_failure(problem, dataclasses.replace(cert, beta=wrong_beta)).startswith(
        "feasible"
    )
    assert not check_psi(problem, dataclasses.replace(cert, alpha=Fraction(1, 4))).ok
    assert not check_psi(problem, cert, alpha=Fraction(1, 4)).ok
    other = regression_problem("gaussian", N=3, D=7, seed=3)
    assert check_psi(other, cert).failures[0].startswith("data_hash")


@pytest.mark.parametrize(
    "change, pattern",
    [
        (dict(format="mdcert-interpolation-1"), r"not a psi interpolation certificate"),
        (dict(status="inconsistent"), r"unknown status"),
        (dict(kernel=[]), r"carries no kernel"),
        (dict(alpha="-1/2"), r"alpha must be a positive rational"),
        (dict(shape=[3, 0]), r"shape must be"),
    ],
)
def test_parsing_is_strict(honest, change, pattern) -> None:
    data = {**honest[1].to_json(), **change}
    with pytest.raises(MdcertError, match=pattern):
        PsiCertificate.from_json(data)
    data = honest[1].to_json()
    del data["mu"]
    with pytest.raises(MdcertError, match=r"needs mu"):
        PsiCertificate.from_json(data)


@pytest.mark.parametrize(
    "c, alpha", [(Fraction(3, 7), Fraction(1, 10)), (Fraction(10**6), Fraction(1, 3)), (0, 1)]
)
def test_the_level_box_holds_the_level_set(c, alpha) -> None:
    mpmath = pytest.importorskip("mpmath")
    c = Fraction(c)
    box = level_box(c, alpha)
    with mpmath.workdps(60):
        a2 = mpmath.mpf(alpha.numerator) ** 2 / alpha.denominator**2
        z = mpmath.mpf(box.numerator) / box.denominator / a2
        assert (
            a2 * (2 - mpmath.sqrt(4 + z * z) + z * mpmath.asinh(z / 2))
            >= mpmath.mpf(c.numerator) / c.denominator
        )
    assert box <= max(8 * alpha * alpha, c)


def test_the_checker_loads_no_solver() -> None:
    code = (
        "import sys\nimport certify.regression.check\nbefore = set(sys.modules)\n"
        "import certify.regression.psicheck\n"
        "print(sorted(m for m in set(sys.modules) - before if m.split('.')[0] in "
        "('certify', 'theorems', 'experiments')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "['certify.regression.psicheck']"


def test_theory_states_its_line_count() -> None:
    import re

    text = (ROOT / "docs" / "theory.md").read_text()
    stated = int(re.search(r"`certify\.regression\.psicheck` \((\d+) lines", text).group(1))
    lines = len((ROOT / "certify" / "regression" / "psicheck.py").read_text().splitlines())
    assert abs(lines - stated) <= stated // 10, lines
