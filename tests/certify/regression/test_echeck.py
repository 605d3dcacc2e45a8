"""`certify.regression.echeck`: the trusted checker of ``min E(beta) s.t. X beta = y`` certificates (the
smoothed-sign limit with a realized v) accepts honest ones, rejects tampered ones claim by claim, parses
strictly, and loads no solver beyond the psi checker (docs/theory.md section 8.10)."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from certify.errors import MdcertError
from certify.regression import regression_problem
from certify.regression.certificate import ExactVec
from certify.regression.echeck import ECertificate, check_e
from certify.regression.eprog import certify_e

ROOT = Path(__file__).resolve().parents[3]
V = np.array([0.3, 0.0, 1e-3, 0.05, 2.0, 0.0, 0.125])


@pytest.fixture(scope="module")
def honest():
    problem = regression_problem("gaussian", N=3, D=7, seed=2)
    return problem, certify_e(problem, V).certificate


def _first_failure(problem, cert) -> str:
    result = check_e(problem, ECertificate.from_json(cert.to_json()))
    assert not result.ok
    return result.failures[0]


def test_an_honest_certificate_round_trips_and_is_accepted(honest) -> None:
    problem, cert = honest
    again = ECertificate.from_json(json.loads(json.dumps(cert.to_json())))
    assert again == cert
    result = check_e(problem, again, v=V)
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


def test_a_wrong_mu_point_or_v_is_rejected(honest) -> None:
    problem, cert = honest
    mu = cert.mu
    wrong_mu = ExactVec(tuple(k * 11 // 10 for k in mu.ints), mu.exp, mu.den)  # 10% off
    assert _first_failure(problem, dataclasses.replace(cert, mu=wrong_mu)).startswith("opt_lower")
    b = cert.beta
    wrong_beta = ExactVec((b.ints[0] + 1, *b.ints[1:]), b.exp, b.den)
    assert _first_failure(problem, dataclasses.replace(cert, beta=wrong_beta)).startswith(
        "feasible"
    )
    v = cert.v
    smaller = ExactVec(
        tuple(k // 2 for k in v.ints), v.exp, v.den
    )  # E(beta^) drops below opt_lower
    assert not check_e(problem, dataclasses.replace(cert, v=smaller)).ok
    assert check_e(problem, cert, v=V * 2).failures[0].startswith("v")
    other = regression_problem("gaussian", N=3, D=7, seed=3)
    assert check_e(other, cert).failures[0].startswith("data_hash")


@pytest.mark.parametrize(
    "change, pattern",
    [
        (dict(format="mdcert-psi-interpolation-1"), r"not an E interpolation certificate"),
        (dict(status="inconsistent"), r"unknown status"),
        (dict(alpha="1/2"), r"carries no alpha"),
        (dict(shape=[3, 0]), r"shape must be"),
        (dict(v={"ints": ["1"], "exp": 0, "den": "1"}), r"v.ints must be a list of 7"),
    ],
)
def test_parsing_is_strict(honest, change, pattern) -> None:
    data = {**honest[1].to_json(), **change}
    with pytest.raises(MdcertError, match=pattern):
        ECertificate.from_json(data)
    for key in ("mu", "v"):
        data = honest[1].to_json()
        del data[key]
        with pytest.raises(MdcertError, match=f"needs {key}"):
            ECertificate.from_json(data)


def test_the_checker_loads_no_solver() -> None:
    code = (
        "import sys\nimport certify.regression.psicheck\nbefore = set(sys.modules)\n"
        "import certify.regression.echeck\n"
        "print(sorted(m for m in set(sys.modules) - before if m.split('.')[0] in "
        "('certify', 'theorems', 'experiments')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "['certify.regression.echeck']"


def test_theory_states_its_line_count() -> None:
    import re

    text = (ROOT / "docs" / "theory.md").read_text()
    stated = int(re.search(r"`certify\.regression\.echeck` \((\d+) lines", text).group(1))
    lines = len((ROOT / "certify" / "regression" / "echeck.py").read_text().splitlines())
    assert abs(lines - stated) <= stated // 10, lines
