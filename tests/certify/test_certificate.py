"""Tests for certify.certificate: exact JSON round trip, no floats in certified fields."""

from __future__ import annotations

import json
from fractions import Fraction

import numpy as np
import pytest

from certify import synthetic_problem
from certify.certificate import Certificate, CertStatus, ExactVector, SupportClass
from certify.errors import MdcertError
from certify.svm import certify_svm

CERTIFIED = (
    "p",
    "opt_lower",
    "opt_upper",
    "distance_upper",
    "direction_error_upper",
    "bregman_upper",
)


@pytest.fixture(scope="module")
def cert():
    return certify_svm(synthetic_problem(), "1.75", digits=30)


def _no_floats(obj) -> bool:
    if isinstance(obj, float):
        return False
    if isinstance(obj, dict):
        return all(_no_floats(v) for v in obj.values())
    if isinstance(obj, list):
        return all(_no_floats(v) for v in obj)
    return True


def test_json_round_trip_is_exact(cert):
    data = json.loads(json.dumps(cert.to_json()))
    back = Certificate.from_json(data)
    assert back == cert
    assert back.p == Fraction(7, 4)
    assert data["p"] == "7/4"
    for key in CERTIFIED:
        assert isinstance(data[key], str) and "/" in data[key]
    assert set(data["support"]) == {"tight", "inactive", "undecided"}
    assert all(len(r) == 2 for r in data["support"]["tight"])


def test_no_float_in_certified_fields(cert):
    data = cert.to_json()
    data.pop("info")
    assert _no_floats(data)


def test_solution_views(cert):
    w = cert.solution_float()
    assert w.shape == (10, 10)
    exact = cert.solution_exact()
    assert len(exact) == 100 and all(isinstance(x, Fraction) for x in exact)
    assert np.allclose(w.ravel(), [float(x) for x in exact], rtol=1e-15, atol=0)
    u = cert.direction_float()
    assert abs(np.sum(np.abs(u) ** 1.75) - 1.0) < 1e-12


def test_exact_vector_values():
    v = ExactVector((3, -1, 0), -2, 3)
    assert v.fractions() == [Fraction(1, 4), Fraction(-1, 12), 0]
    assert np.allclose(v.to_float(), [0.25, -1 / 12, 0.0])
    big = ExactVector((1 << 2000,), -2000, 1)
    assert big.to_float()[0] == 1.0
    assert ExactVector.from_json(v.to_json()) == v


@pytest.mark.parametrize(
    "data, match",
    [
        ({"status": "maybe"}, "unknown certificate status"),
        ({"status": "optimal", "svm": "mlp"}, "'svm' must be"),
        ({"status": "optimal", "svm": "attention", "p": 1.75}, "'p' must be"),
        ({"status": "optimal", "svm": "attention", "p": "1/2"}, "'p' must be"),
        ({"status": "optimal", "svm": "attention", "p": "7/4", "alpha": "0,1"}, "'alpha' must be"),
        (
            {"status": "optimal", "svm": "attention", "p": "7/4", "alpha": [0], "opt_lower": 1.5},
            "exact 'num/den'",
        ),
        (
            {
                "status": "optimal",
                "svm": "attention",
                "p": "7/4",
                "alpha": [0],
                "w": {"ints": [1.5]},
            },
            "no floats",
        ),
        (
            {
                "status": "optimal",
                "svm": "attention",
                "p": "7/4",
                "alpha": [0],
                "lam": {"ints": [1], "den": 0},
            },
            "positive",
        ),
        ([1, 2], "JSON object"),
    ],
)
def test_from_json_rejects_bad_input(data, match):
    with pytest.raises(MdcertError, match=match):
        Certificate.from_json(data)


def test_status_enum_and_support_counts():
    assert CertStatus("infeasible") is CertStatus.INFEASIBLE
    assert CertStatus.OPTIMAL == "optimal"
    assert SupportClass(((0, 1),), (), ((0, 2), (1, 0))).counts() == (1, 0, 2)
    c = Certificate(CertStatus.NO_VERIFIED_RESULT, "decoder", Fraction(3), (0,), "h")
    with pytest.raises(MdcertError, match="no solution"):
        c.solution_float()
    assert Certificate.from_json(c.to_json()) == c


# ---------------------------------------------------------------- adversarial review (round 2)
@pytest.mark.parametrize(
    "patch, match",
    [
        ({"w": {"ints": [1], "exp": 10**9, "den": 1}}, "out of range"),
        ({"support": {"tight": [[0.5, 1]], "inactive": [], "undecided": []}}, "integer index"),
        ({"support": {"tight": [[True, 1]], "inactive": [], "undecided": []}}, "integer index"),
    ],
)
def test_hostile_fields_rejected(patch, match):
    """Findings: a float index was truncated to a different row; a huge exponent hung the checker."""
    data = {
        "status": "optimal",
        "svm": "attention",
        "p": "3/2",
        "alpha": [0],
        "data_hash": "h",
        **patch,
    }
    with pytest.raises(MdcertError, match=match):
        Certificate.from_json(data)


@pytest.mark.parametrize("p, digits", [("3", 1500), ("1.5", 1400)])
def test_high_precision_certificate_round_trips_through_json(p, digits):
    """Finding: Python refuses int <-> str conversions beyond 4300 digits, so a certificate whose
    bounds or vectors have more digits (p = 3 at 1500 digits uses ~60000 bits) could not be
    written (ValueError in json.dumps / format_fraction) nor read back."""
    from certify import check_certificate

    pr = synthetic_problem(n=2, T=3, d=2)
    c = certify_svm(pr, p, digits=digits)
    assert c.status is CertStatus.OPTIMAL
    text = json.dumps(c.to_json())
    back = Certificate.from_json(json.loads(text))
    assert back == c
    assert check_certificate(pr, json.loads(text)).ok


def test_huge_decimal_exponent_is_refused_quickly():
    from certify.exact import parse_fraction, parse_p

    with pytest.raises(MdcertError):
        parse_p("1e100000000")
    with pytest.raises(MdcertError):
        parse_fraction("1e-100000000")


def _deep(levels: int = 100_000) -> list:
    top = x = []
    for _ in range(levels):
        x.append([])
        x = x[0]
    return top


@pytest.mark.parametrize(
    "field", ["status", "svm", "p", "alpha", "data_hash", "d", "digits", "support", "w"]
)
def test_from_json_refuses_deep_or_huge_python_values(field):
    """Values built in Python (not from JSON text, whose depth is bounded): deeply nested or huge
    values are one-line MdcertErrors, never a RecursionError from a repr or a 4300-digit str error."""
    from certify import MdcertError

    base = {
        "status": "optimal",
        "svm": "attention",
        "p": "2",
        "alpha": [0],
        "data_hash": "sha256:x",
        "d": 1,
    }
    for value in (
        (_deep(), 10**6000) if field != "w" else (_deep(),)
    ):  # a huge w is the checker's size_limits
        data = dict(base)
        data[field] = (
            {"tight": [value]}
            if field == "support"
            else {"ints": [value]}
            if field == "w"
            else value
        )
        with pytest.raises(MdcertError) as info:
            Certificate.from_json(data)
        assert "\n" not in str(info.value) and len(str(info.value)) < 300
