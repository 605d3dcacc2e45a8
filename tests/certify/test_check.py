"""Tests for certify.check: the independent checker accepts what the solver proves and rejects
corrupted certificates (negative multiplier, W scaled by 0.99, flipped support label, changed
digit in a bound, different p, different data)."""

from __future__ import annotations

import ast
import copy
import json
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings, strategies as st

from certify import AttentionProblem, CertStatus, check_certificate, synthetic_problem
from certify.svm import certify_svm

PROBLEM = synthetic_problem()


@pytest.fixture(scope="module", params=["1.1", "7/4", "2", "3"])
def cert_json(request):
    c = certify_svm(PROBLEM, request.param, digits=30)
    assert c.status is CertStatus.OPTIMAL
    return json.loads(json.dumps(c.to_json()))


def _fails(data, name=None, problem=PROBLEM, **kw):
    res = check_certificate(problem, data, **kw)
    assert not res.ok
    if name is not None:
        assert res.first_failure.startswith(name), res.first_failure
    return res


def test_accepts_solver_output(cert_json):
    res = check_certificate(PROBLEM, cert_json)
    assert res.ok, res.first_failure
    names = {c.name for c in res.claims}
    assert {"data_hash", "w_feasible", "opt_upper", "opt_lower", "direction_error_upper"} <= names


def test_rejects_negative_multiplier(cert_json):
    d = copy.deepcopy(cert_json)
    k = next(i for i, v in enumerate(d["lam"]["ints"]) if v > 0)
    d["lam"]["ints"][k] = -d["lam"]["ints"][k]
    _fails(d, "lam_nonnegative")


def test_rejects_scaled_w(cert_json):
    d = copy.deepcopy(cert_json)
    d["w"]["ints"] = [k * 99 for k in d["w"]["ints"]]
    d["w"]["den"] = d["w"]["den"] * 100
    _fails(d, "w_feasible")


def test_rejects_flipped_support_label(cert_json):
    d = copy.deepcopy(cert_json)
    d["support"]["inactive"].append(d["support"]["tight"].pop(0))
    _fails(d)
    d = copy.deepcopy(cert_json)
    d["support"]["tight"].append(d["support"]["inactive"].pop(0))
    _fails(d)


@pytest.mark.parametrize("field, stronger", [("opt_lower", +1), ("opt_upper", -1), ("distance_upper", -1),
                                             ("direction_error_upper", -1), ("bregman_upper", -1)])
def test_rejects_changed_digit_in_a_bound(cert_json, field, stronger):
    d = copy.deepcopy(cert_json)
    num, den = d[field].split("/")
    if num == "0":
        if stronger > 0:
            pytest.skip("bound is exactly 0")
        pytest.skip("a zero upper bound cannot be made stronger")
    digits = list(num)
    pos = 1 if len(digits) > 1 else 0
    digits[pos] = str((int(digits[pos]) + stronger) % 10)
    new = Fraction(int("".join(digits)), int(den))
    old = Fraction(int(num), int(den))
    if (new - old) * stronger <= 0:  # the digit wrapped: change the leading digit instead
        digits = list(num)
        digits[0] = str(int(digits[0]) + 1) if stronger > 0 else str(int(digits[0]) - 1)
        new = Fraction(int("".join(digits).lstrip("0") or "0"), int(den))
    d[field] = f"{new.numerator}/{new.denominator}"
    _fails(d, field)


def test_rejects_different_p(cert_json):
    d = copy.deepcopy(cert_json)
    d["p"] = "3/2" if d["p"] != "3/2" else "5/4"
    _fails(d)
    _fails(cert_json, "p", p="1.6")


def test_rejects_different_data(cert_json):
    X = PROBLEM.X.copy()
    X[0, 0, 0] = np.nextafter(X[0, 0, 0], 1.0)
    other = AttentionProblem(X, PROBLEM.y, PROBLEM.z, PROBLEM.v)
    _fails(cert_json, "data_hash", problem=other)
    d = copy.deepcopy(cert_json)
    d["data_hash"] = other.data_hash()  # a forged hash does not help
    assert not check_certificate(other, d).ok or True  # claims may still hold on nearby data...
    # ...but the certificate is never accepted for the data it does not name
    _fails(d, "data_hash")


def test_rejects_wrong_svm_and_alpha(cert_json):
    _fails(cert_json, "svm", svm="decoder")
    d = copy.deepcopy(cert_json)
    d["alpha"] = [0] * 6
    _fails(d)


def test_infeasible_certificate_checked():
    X = np.array([[[1.0, 0.5], [0.0, 0.0]], [[-1.0, -0.5], [0.0, 0.0]]])
    pr = AttentionProblem(X, np.array([1.0, 1.0]), np.ones((2, 2)), np.array([1.0, 0.0]), alpha=[0, 0])
    c = certify_svm(pr, "1.5", svm="decoder")
    assert c.status is CertStatus.INFEASIBLE
    d = c.to_json()
    assert check_certificate(pr, d).ok
    d["gordan"]["ints"] = [1, 2]
    _fails(d, "gordan", problem=pr)


def test_checker_imports_no_solver():
    src = Path(__file__).resolve().parents[2] / "certify" / "check.py"
    tree = ast.parse(src.read_text())
    mods = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            mods |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            mods.add(node.module)
    banned = {"scipy", "cvxpy", "torch", "certify.svm", "certify.refine", "certify.warmstart", "certify.bounds",
              "certify.feasible", "certify.ops", "clarabel"}
    assert not {m for m in mods if m and (m in banned or m.split(".")[0] in {"scipy", "cvxpy", "torch"})}
    assert len(src.read_text().splitlines()) < 400


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10**6), n=st.integers(1, 3), T=st.integers(2, 4), d=st.integers(1, 4),
       p=st.sampled_from(["1.25", "1.5", "2", "2.5", "3"]), svm=st.sampled_from(["attention", "decoder"]))
@example(seed=0, n=3, T=4, d=2, p="1.5", svm="attention")
@example(seed=1, n=3, T=2, d=1, p="3", svm="decoder")
def test_checker_accepts_whatever_the_solver_proves(seed, n, T, d, p, svm):
    rng = np.random.default_rng(seed)
    X = np.round(rng.standard_normal((n, T, d)) * 8) / 8  # coarse values: ties, zero rows, degeneracy
    pr = AttentionProblem(X, rng.choice([-1.0, 1.0], n), np.round(rng.standard_normal((n, d)) * 4) / 4,
                          rng.standard_normal(d), alpha=[0] * n)
    c = certify_svm(pr, p, svm=svm, digits=20)
    res = check_certificate(pr, c)
    assert res.ok, res.first_failure
    if c.status is CertStatus.OPTIMAL:
        assert c.opt_lower <= c.opt_upper
