"""certify.limits: untrusted certificate JSON and sizes are refused in one line, before any arithmetic."""

from __future__ import annotations

import copy
import json
import time
from fractions import Fraction

import pytest
from hypothesis import example, given, settings, strategies as st

from certify import Certificate, MdcertError, check_certificate, synthetic_problem
from certify.exact import decimal_str
from certify.limits import (
    MAX_DIGITS,
    MAX_JSON_DEPTH,
    json_depth,
    max_certificate_bytes,
    parse_json,
    size_budget,
    size_violation,
)
from certify.svm import certify_svm

PROBLEM = synthetic_problem()


@pytest.fixture(scope="module")
def cert():
    return certify_svm(PROBLEM, "1.75", digits=30).to_json()


@pytest.mark.parametrize(
    "text, pattern",
    [
        ("[" * 200_000 + "]" * 200_000, "nests arrays/objects 200000 deep"),
        ('{"a": ' * 100_000, "deep"),
        ('{"a": 1, "a": 2}', "duplicate key 'a'"),
        ('{"a": NaN}', "literal NaN"),
        ('{"a": Infinity}', "literal Infinity"),
        ('{"a": -Infinity}', "literal -Infinity"),
        ('{"a": 1e400}', "out of the float64 range"),
        ('{"a": ' + "7" * 5000 + "}", "integer literal of 5000 digits"),
        (b'{"a": "\xff"}', "not UTF-8"),
        ("", "not valid JSON"),
        ('{"a": [1, 2}', "not valid JSON"),
        ("\ufeff{}", "not valid JSON"),
    ],
)
def test_bad_json_is_one_line(text, pattern):
    with pytest.raises(MdcertError, match=pattern) as info:
        parse_json(text)
    assert "\n" not in str(info.value)
    with pytest.raises(MdcertError, match=pattern):  # the Python API refuses the same way
        Certificate.from_text(text)


def test_depth_counts_brackets_outside_strings():
    assert json_depth(b'{"a": "[[[[[[", "b": [[1]], "c": "\\"[{"}') == 3
    assert json_depth(b"[]") == 1 and json_depth(b"1") == 0
    deep = "[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH
    assert parse_json(deep) is not None
    with pytest.raises(MdcertError, match="deep"):
        parse_json("[" + deep + "]")


def test_size_cap_is_checked_before_parsing():
    t = time.perf_counter()
    with pytest.raises(MdcertError, match="bytes"):
        parse_json(b"[" * 10_000_000, max_bytes=1000)
    assert time.perf_counter() - t < 1.0


def test_certificate_load_and_from_text_round_trip(cert, tmp_path):
    path = tmp_path / "c.json"
    path.write_text(json.dumps(cert))
    assert (
        Certificate.load(path)
        == Certificate.from_json(cert)
        == Certificate.from_text(json.dumps(cert))
    )
    with pytest.raises(MdcertError, match="larger than"):
        Certificate.load(path, max_bytes=100)


def _budget(p="7/4"):
    from certify.check.claims import Rows

    rows = Rows(PROBLEM, "attention", PROBLEM.optimal_indices().indices)
    return size_budget(p=Fraction(p), rows_L=rows.L, rows_R=rows.R, rows_exp=rows.exp, m=rows.m)


@pytest.mark.parametrize(
    "edit, pattern",
    [
        (
            lambda d: d["lam"]["ints"].__setitem__(0, decimal_str(10**10**6)),
            "lam has an integer of 3321929 bits",
        ),
        (
            lambda d: d["w"].__setitem__("exp", 10**7),
            "w.exp = 10000000 is beyond the exponent limit",
        ),
        (lambda d: d["w"].__setitem__("den", decimal_str(3**400_000)), "w.den has an integer"),
        (
            lambda d: d.__setitem__("opt_upper", "1" + "0" * 200_000 + "/1"),
            "opt_upper has a numerator",
        ),
        (lambda d: d.__setitem__("p", "7" + "1" * 100 + "/4"), "p has a numerator"),
    ],
)
def test_oversized_certificates_are_refused_fast(cert, edit, pattern):
    d = copy.deepcopy(cert)
    edit(d)
    t = time.perf_counter()
    res = check_certificate(PROBLEM, d)
    assert time.perf_counter() - t < 5.0  # was > 60 s for a 10^6-digit multiplier
    assert (
        not res.ok and res.first_failure.startswith("size_limits") and pattern in res.first_failure
    )


@pytest.mark.parametrize(
    "p",
    [
        "1.1",
        pytest.param("1.75", marks=pytest.mark.slow),
        pytest.param("3", marks=pytest.mark.slow),
    ],
)
def test_most_digits_certify_accepts_are_within_the_limits(p):
    """The limits never refuse what `certify_svm` produces at its largest --digits (issue 11 item 11)."""
    c = certify_svm(PROBLEM, p, digits=MAX_DIGITS)
    assert size_violation(c, _budget(p)) is None
    top = max(abs(k).bit_length() for v in (c.w, c.lam) for k in v.ints)
    assert 4 * top < _budget(p).ball_bits  # and with room to spare
    assert check_certificate(PROBLEM, c).ok
    with pytest.raises(MdcertError, match="digits"):
        certify_svm(PROBLEM, p, digits=MAX_DIGITS + 1)


def test_exact_and_gordan_budgets_cover_the_solver():
    assert _budget().exact_bits > _budget().ball_bits
    c = certify_svm(PROBLEM, "2", svm="decoder", digits=60)
    assert c.exact_kkt and check_certificate(PROBLEM, c).ok


def test_byte_cap_grows_with_the_problem():
    small = max_certificate_bytes(synthetic_problem(n=1, T=2, d=1))
    big = max_certificate_bytes(PROBLEM)
    assert (1 << 20) < small < big <= 1 << 30


@settings(max_examples=50, deadline=None)
@given(st.text(alphabet='[]{}",:0123456789-e.aNIn\\ ', max_size=60))
@example('"\\\\"[')
def test_parse_json_never_crashes(text):
    try:
        parse_json(text)
    except MdcertError as exc:
        assert "\n" not in str(exc)


def test_limits_import_no_solver():
    """certify.limits is part of the trusted checker: standard library, numpy and certify.errors only."""
    import ast
    from pathlib import Path

    tree = ast.parse((Path(__file__).resolve().parents[2] / "certify" / "limits.py").read_text())
    mods = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    mods |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert mods <= {
        "__future__",
        "json",
        "math",
        "re",
        "fractions",
        "typing",
        "numpy",
        "certify.errors",
    }, mods
