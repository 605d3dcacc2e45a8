"""certify.regression.check: the independent checker refuses every false or stray claim."""

from __future__ import annotations

import dataclasses
import json
from fractions import Fraction

import numpy as np
import pytest

from certify.errors import MdcertError
from certify.regression import (
    ExactVec,
    InterpolationCertificate,
    InterpStatus,
    RegressionProblem,
    certify_interpolation,
    check_interpolation,
)


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
