"""Mutation fuzzer of the independent checker (issue 11, "Tests that keep it so"; docs/theory.md 4.6).

Valid certificates of several small problems (attention and decoder SVMs, p in {1.1, 1.5, 1.75, 2, 3},
optimal, exact-KKT and infeasible) are mutated: digits of bounds, signs, exponents, support entries
moved between lists, keys deleted and added, huge and nested values, wrong types, p / alpha / svm /
status changed, and the data changed by one ulp with the certificate re-hashed (so the hash check
does not catch it). The checker must never crash (only a `CheckResult` or a one-line `MdcertError`)
and every ACCEPTED certificate's claims must be implied by a fresh 150-digit certification of its
own data, svm, alpha and p (the oracle, `false_claims`). Default run: a few hundred cases; the
``slow`` run: 10^4 (set MDCERT_FUZZ_STATS=path to get the counts written there).
"""

from __future__ import annotations

import copy
import functools
import json
import os
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings, strategies as st

from certify import (
    AttentionProblem,
    Certificate,
    CertStatus,
    MdcertError,
    check_certificate,
    synthetic_problem,
)
from certify.exact import format_fraction, parse_fraction
from certify.svm import certify_svm

REF_DIGITS = 150
P_VALUES = ("1.1", "1.5", "1.75", "2", "3")


def _problems() -> dict[str, AttentionProblem]:
    rng = np.random.default_rng(5)
    small = AttentionProblem(
        rng.standard_normal((3, 3, 3)),
        np.array([1.0, -1.0, 1.0]),
        rng.standard_normal((3, 3)),
        rng.standard_normal(3),
    )
    X = np.array([[[1.0, 0.5], [0.0, 0.0]], [[-1.0, -0.5], [0.0, 0.0]]])  # decoder SVM infeasible
    infeasible = AttentionProblem(
        X, np.array([1.0, 1.0]), np.ones((2, 2)), np.array([1.0, 0.0]), alpha=[0, 0]
    )
    Xd = rng.standard_normal((2, 3, 2))
    Xd[0, 2] = Xd[
        0, 0
    ]  # duplicated token: the attention SVM for alpha_0 = 0 is infeasible (zero row)
    dup = AttentionProblem(
        Xd, np.array([1.0, -1.0]), rng.standard_normal((2, 2)), rng.standard_normal(2), alpha=[0, 1]
    )
    Xp = rng.standard_normal((3, 4, 2))
    Xp[0, 2:] = 0.0
    Xp[2, 3:] = (
        0.0  # variable-length sequences: padding takes part in no row (docs/theory.md section 1.3)
    )
    padded = AttentionProblem(
        Xp,
        np.array([1.0, 1.0, -1.0]),
        rng.standard_normal((3, 2)),
        rng.standard_normal(2),
        alpha=[0, 1, 2],
        lengths=[2, 4, 3],
    )
    return {
        "synth": synthetic_problem(n=4, T=5, d=4, seed=3),
        "small": small,
        "infeasible": infeasible,
        "dup": dup,
        "padded": padded,
    }


PROBLEMS = _problems()
CASES = [
    (name, svm, p)
    for name in ("synth", "small")
    for svm in ("attention", "decoder")
    for p in P_VALUES
] + [
    ("infeasible", "decoder", "1.5"),
    ("infeasible", "decoder", "2"),
    ("dup", "attention", "1.75"),
    ("padded", "attention", "1.5"),
    ("padded", "attention", "3"),
    ("padded", "decoder", "2"),
]


@functools.lru_cache(maxsize=None)
def base_certificate(case: int) -> str:
    name, svm, p = CASES[case]
    c = certify_svm(PROBLEMS[name], p, svm=svm, digits=25)
    assert c.status is not CertStatus.NO_VERIFIED_RESULT, CASES[case]
    assert check_certificate(PROBLEMS[name], c).ok
    return json.dumps(c.to_json())


@functools.lru_cache(maxsize=None)
def reference(data_key: bytes, svm: str, p: Fraction, alpha: tuple[int, ...]) -> Certificate:
    """A fresh high-digit certification of the data (the oracle's ground truth)."""
    problem = _unkey(data_key)
    return certify_svm(
        problem, f"{p.numerator}/{p.denominator}", svm=svm, alpha=list(alpha), digits=REF_DIGITS
    )


def _key(problem: AttentionProblem) -> bytes:
    return json.dumps(problem.to_dict() | {"alpha": None}).encode()


def _unkey(key: bytes) -> AttentionProblem:
    d = json.loads(key)
    d.pop("alpha")
    return AttentionProblem.from_dict(d)


# ---------------------------------------------------------------- the oracle
def _mp(x: Fraction):
    return mpmath.mpf(x.numerator) / x.denominator


def _norm(v, p):
    return mpmath.fsum(abs(x) ** p for x in v) ** (1 / p)


def _bregman(x, y, p):
    """D_psi(x, y) for psi = (1/p)||.||_p^p."""
    phi = [mpmath.sign(t) * abs(t) ** (p - 1) for t in y]
    return mpmath.fsum(
        abs(a) ** p / p - abs(b) ** p / p - g * (a - b) for a, b, g in zip(x, y, phi)
    )


def false_claims(problem: AttentionProblem, cert: Certificate) -> list[str]:
    """Claims of an accepted certificate that a fresh certification of its data refutes ([] if none)."""
    own = {
        CertStatus.OPTIMAL: (
            "opt_lower",
            "opt_upper",
            "distance_upper",
            "direction_error_upper",
            "bregman_upper",
            "support",
            "w",
            "lam",
            "exact_kkt",
        ),
        CertStatus.INFEASIBLE: ("gordan", "gordan_basis"),
    }  # docs/formats.md: fields of one status only
    stray = [
        k
        for s, keys in own.items()
        if s is not cert.status
        for k in keys
        if getattr(cert, k) not in (None, False)
    ]
    if stray:
        return [f"status {cert.status.value} carries {stray}"]
    ref = reference(_key(problem), cert.svm, cert.p, tuple(cert.alpha))
    if cert.status is CertStatus.NO_VERIFIED_RESULT:
        return []
    if cert.status is CertStatus.INFEASIBLE:
        return (
            []
            if ref.status is CertStatus.INFEASIBLE
            else [f"infeasible, but the fresh solve is {ref.status.value}"]
        )
    if ref.status is CertStatus.INFEASIBLE:
        return ["optimal on infeasible data"]
    assert ref.status is CertStatus.OPTIMAL, "the reference solve must decide"
    bad = []
    if cert.opt_upper < ref.opt_lower or cert.opt_lower > ref.opt_upper:
        bad.append(
            f"OPT enclosure [{float(cert.opt_lower)}, {float(cert.opt_upper)}] excludes the true OPT"
        )
    elif cert.opt_lower > ref.opt_lower or cert.opt_upper < ref.opt_upper:
        bad.append("OPT enclosure narrower than a 150-digit solve can confirm")
    with mpmath.workdps(REF_DIGITS + 30):
        p = _mp(cert.p)
        w, ws = [_mp(x) for x in cert.solution_exact()], [_mp(x) for x in ref.solution_exact()]
        if _norm([a - b for a, b in zip(w, ws)], p) - _mp(ref.distance_upper) > _mp(
            cert.distance_upper
        ) * (1 + 1e-40):
            bad.append("distance_upper below ||w - w*||_p")
        x, y = [a / _norm(w, p) for a in w], [b / _norm(ws, p) for b in ws]
        if _norm([a - b for a, b in zip(x, y)], p) - _mp(ref.direction_error_upper) > _mp(
            cert.direction_error_upper
        ) * (1 + 1e-40):
            bad.append("direction_error_upper below the direction error")
        # y is within delta of y* = w*/||w*||_p: D moves by at most about delta in its first argument and
        # by D(y, y*) + ||phi(y) - phi(y*)||_q ||x - y||_p in its second ((p-1)-Hoelder phi for p <= 2)
        delta = _mp(ref.direction_error_upper)
        h = delta ** (p - 1) if p <= 2 else 2 * (p - 1) * delta
        slack = 10 * (
            2 * delta
            + p * delta ** min(p, 2)
            + h * (_norm([a - b for a, b in zip(x, y)], p) + delta)
        )
        if (
            max(_bregman(x, y, p), _bregman(y, x, p))
            > _mp(cert.bregman_upper) * (1 + 1e-40) + slack
        ):
            bad.append("bregman_upper below the Bregman divergence of the directions")
    if cert.support is not None:
        tight, inactive = set(ref.support.tight), set(ref.support.inactive)
        if set(cert.support.tight) & inactive or set(cert.support.inactive) & tight:
            bad.append("support classification contradicts the fresh solve")
    return bad


# ---------------------------------------------------------------- mutations
def _paths(obj, prefix=()):
    """Every (path, value) of a JSON tree."""
    yield prefix, obj
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _paths(v, prefix + (i,))


def _set(obj, path, value):
    for k in path[:-1]:
        obj = obj[k]
    obj[path[-1]] = value


def _digit(draw, s: str) -> str:
    num, _, den = s.partition("/")
    part = draw(st.sampled_from(["num", "den"])) if den else "num"
    t = list(num if part == "num" else den)
    i = draw(st.integers(0, len(t) - 1))
    t[i] = draw(st.sampled_from([c for c in "0123456789-" if c != t[i]]))
    t = "".join(t)
    return f"{t}/{den}" if part == "num" else f"{num}/{t}"


HUGE = [
    10**4000,
    -(10**4000),
    "9" * 20000,
    [[[[1]]]],
    {"a": {"b": [1]}},
    1.5,
    True,
    None,
    "",
    "nan",
    "1e99999",
    [1] * 1000,
    2**64,
    -1,
]


def _is_int(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


@st.composite
def mutate(draw, data: dict):
    d = copy.deepcopy(data)
    kind = draw(
        st.sampled_from(
            [
                "digit",
                "sign",
                "exp",
                "support",
                "delete",
                "add",
                "huge",
                "retype",
                "scale",
                "identity",
                "length",
                "int",
                "tighten",
                "tighten",
                "undecide",
            ]
        )
    )
    paths = [(k, v) for k, v in _paths(d) if k]
    if kind == "digit":
        cands = [(k, v) for k, v in paths if isinstance(v, str) and "/" in v]
        if cands:
            k, v = draw(st.sampled_from(cands))
            _set(d, k, _digit(draw, v))
    elif kind in ("sign", "int"):
        cands = [(k, v) for k, v in paths if isinstance(v, int) and not isinstance(v, bool)]
        if cands:
            k, v = draw(st.sampled_from(cands))
            _set(
                d,
                k,
                -v
                if kind == "sign"
                else v + draw(st.sampled_from([1, -1, 2 ** draw(st.integers(0, 200))])),
            )
    elif kind == "exp":
        vec = draw(st.sampled_from(["w", "lam", "gordan"]))
        if isinstance(d.get(vec), dict) and _is_int(d[vec].get("exp", 0)):
            d[vec]["exp"] = d[vec].get("exp", 0) + draw(
                st.sampled_from([1, -1, 64, -64, 10**5, 10**7, -(10**7)])
            )
    elif kind == "support" and isinstance(d.get("support"), dict):
        src, dst = draw(st.permutations(["tight", "inactive", "undecided"]))[:2]
        if (
            isinstance(d["support"].get(src), list)
            and isinstance(d["support"].get(dst), list)
            and d["support"][src]
        ):
            i = draw(st.integers(0, len(d["support"][src]) - 1))
            row = d["support"][src].pop(i)
            if draw(st.booleans()):
                d["support"][dst].append(row)
            elif d["support"][dst]:  # swap two entries of different lists
                j = draw(st.integers(0, len(d["support"][dst]) - 1))
                d["support"][src].append(d["support"][dst][j])
                d["support"][dst][j] = row
    elif kind == "undecide" and isinstance(
        d.get("support"), dict
    ):  # issue 21: k tight rows, the rest undecided
        parts = [d["support"].get(x) for x in ("tight", "inactive", "undecided")]
        if all(isinstance(x, list) for x in parts):
            rows, k = [r for x in parts for r in x], draw(st.integers(0, 2))
            d["support"] = {"tight": rows[:k], "inactive": [], "undecided": rows[k:]}
    elif kind == "delete" and paths:
        k, _ = draw(st.sampled_from(paths))
        parent = d
        for x in k[:-1]:
            parent = parent[x]
        del parent[k[-1]]
    elif kind == "add":
        key = draw(
            st.sampled_from(
                ["w", "lam", "gordan", "support", "opt_lower", "opt_upper", "exact_kkt", "extra"]
            )
        )
        src = json.loads(base_certificate(draw(st.integers(0, len(CASES) - 1))))
        d[key] = src.get(key) if src.get(key) is not None else draw(st.sampled_from(HUGE))
    elif kind in ("huge", "retype") and paths:
        k, _ = draw(st.sampled_from(paths))
        _set(d, k, draw(st.sampled_from(HUGE)))
    elif kind == "scale":
        vec = draw(st.sampled_from(["w", "lam", "gordan"]))
        if (
            isinstance(d.get(vec), dict)
            and isinstance(d[vec].get("ints"), list)
            and _is_int(d[vec].get("den", 1))
        ):
            num, den = draw(
                st.sampled_from([(99, 100), (101, 100), (1, 2), (3, 1), (10**30 + 1, 10**30)])
            )
            d[vec]["ints"] = [k * num if _is_int(k) else k for k in d[vec]["ints"]]
            d[vec]["den"] = d[vec].get("den", 1) * den
    elif kind == "identity":
        key = draw(st.sampled_from(["p", "alpha", "svm", "status", "d", "exact_kkt"]))
        d[key] = {
            "p": draw(st.sampled_from(["3/2", "7/4", "2/1", "3/1", "11/10", "1/1", "2"])),
            "alpha": [0]
            * (len(d["alpha"]) if isinstance(d.get("alpha"), list) and d["alpha"] else 1),
            "svm": draw(st.sampled_from(["attention", "decoder"])),
            "status": draw(st.sampled_from(["optimal", "infeasible", "no_verified_result"])),
            "d": draw(st.integers(0, 12)),
            "exact_kkt": draw(st.booleans()),
        }[key]
    elif (
        kind == "tighten"
    ):  # a bound moved by 10^-k (relative) in the stronger or the weaker direction
        names = [
            k
            for k in (
                "opt_lower",
                "opt_upper",
                "distance_upper",
                "direction_error_upper",
                "bregman_upper",
            )
            if isinstance(d.get(k), str)
        ]
        if names:
            name = draw(st.sampled_from(names))
            try:
                x = parse_fraction(d[name])
            except MdcertError:
                x = None
            if x is not None:
                k = draw(st.sampled_from([3, 10, 20, 25, 30, 35, 40, 60, 100, 200]))
                down = draw(st.booleans())  # stronger for an upper bound, weaker for opt_lower
                x = x * (1 - Fraction(1, 10**k)) if down else x * (1 + Fraction(1, 10**k))
                d[name] = format_fraction(x)
    elif kind == "length":
        vec = draw(st.sampled_from(["w", "lam", "gordan"]))
        if isinstance(d.get(vec), dict) and isinstance(d[vec].get("ints"), list) and d[vec]["ints"]:
            d[vec]["ints"] = d[vec]["ints"][:-1] if draw(st.booleans()) else d[vec]["ints"] + [0]
    return d, kind if d != data else "no-op"


def _one_ulp(problem: AttentionProblem, where: int, up: bool) -> AttentionProblem:
    """``problem`` with one entry of z or of a valid token of X moved by one ulp (padding stays zero)."""
    X, z = problem.X.copy(), problem.z.copy()
    valid = np.flatnonzero(np.repeat(problem.token_mask[:, :, None], problem.d, axis=2))
    k = where % (valid.size + z.size)
    arr, k = (X.reshape(-1), valid[k]) if k < valid.size else (z.reshape(-1), k - valid.size)
    arr[k] = np.nextafter(arr[k], np.inf if up else -np.inf)
    return AttentionProblem(
        X, problem.y, z, problem.v, alpha=problem.alpha, lengths=problem.lengths
    )


STATS: dict = {
    "cases": 0,
    "accepted": 0,
    "rejected": 0,
    "refused": 0,
    "false": 0,
    "accepted_by_kind": {},
}
_KINDS: list[str] = []  # the mutations of the case being run (for the accepted_by_kind count)


def _record() -> None:
    path = os.environ.get("MDCERT_FUZZ_STATS")
    if path:
        with open(path, "w") as fh:
            json.dump(STATS, fh)


@st.composite
def fuzz_case(draw):
    case = draw(st.integers(0, len(CASES) - 1))
    problem = PROBLEMS[CASES[case][0]]
    data = json.loads(base_certificate(case))
    _KINDS.clear()
    for _ in range(draw(st.integers(1, 3))):
        data, kind = draw(mutate(data))
        _KINDS.append(kind)
    if draw(st.integers(0, 4)) == 0:  # the data changed by one ulp, the certificate re-hashed
        problem = _one_ulp(problem, draw(st.integers(0, 10**6)), draw(st.booleans()))
        data["data_hash"] = problem.data_hash()
        _KINDS.append("ulp")
    return problem, data


def run_case(problem: AttentionProblem, data) -> None:
    STATS["cases"] += 1
    try:
        res = check_certificate(problem, data)
    except MdcertError as exc:  # a one-line refusal
        assert "\n" not in str(exc) and str(exc).strip()
        STATS["refused"] += 1
        return
    if not res.ok:
        assert "\n" not in res.first_failure
        STATS["rejected"] += 1
        return
    STATS["accepted"] += 1
    for kind in set(_KINDS):
        STATS["accepted_by_kind"][kind] = STATS["accepted_by_kind"].get(kind, 0) + 1
    bad = false_claims(problem, Certificate.from_json(data))
    STATS["false"] += bool(bad)
    assert not bad, bad


def _resolve(case):
    """A drawn ``(problem, data)`` or a pinned ``("pin", case index, fields to replace)``."""
    if case[0] != "pin":
        return case
    _KINDS[:] = ["pinned"]
    data = json.loads(base_certificate(case[1]))
    data.update(case[2])
    return PROBLEMS[CASES[case[1]][0]], data


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(fuzz_case())
@example(("pin", 0, {}))  # the unmutated certificate is accepted (and true)
@example(("pin", 0, {"w": {"ints": [1], "exp": 10**7, "den": 1}}))
@example(("pin", 1, {"lam": {"ints": ["9" * 20000], "exp": 0, "den": 1}}))
@example(("pin", 3, {"lam": {"ints": ["9" * 10**6], "exp": 0, "den": 1}}))
@example(("pin", 20, {"status": "optimal"}))
@example(("pin", 20, {"status": "no_verified_result"}))  # issue 21: gordan on another status
@example(("pin", 0, {"gordan": {"ints": [1] * 16, "exp": 0, "den": 1}}))
def test_checker_never_accepts_a_false_claim(case):
    run_case(*_resolve(case))
    _record()


@pytest.mark.slow
@settings(max_examples=10_000, deadline=None, suppress_health_check=list(HealthCheck))
@given(fuzz_case())
def test_checker_never_accepts_a_false_claim_slow(case):
    run_case(*case)
    _record()


def test_one_ulp_rehashed_certificate_is_rejected():
    """The data moved by one ulp and the certificate re-hashed: its 25-digit bounds are about other data."""
    for case in (0, 5, 12):
        problem = _one_ulp(PROBLEMS[CASES[case][0]], 0, True)
        data = json.loads(base_certificate(case))
        data["data_hash"] = problem.data_hash()
        res = check_certificate(problem, data)
        assert not res.ok or not false_claims(problem, Certificate.from_json(data))


def test_oracle_refutes_false_claims():
    """The oracle itself can fail: forged bounds and support labels are reported as false."""
    from dataclasses import replace

    problem = PROBLEMS["synth"]
    cert = Certificate.from_json(json.loads(base_certificate(2)))
    assert false_claims(problem, cert) == []
    assert false_claims(problem, replace(cert, opt_upper=cert.opt_lower * Fraction(99, 100)))
    assert false_claims(problem, replace(cert, distance_upper=Fraction(0)))
    assert false_claims(problem, replace(cert, direction_error_upper=Fraction(0)))
    assert false_claims(problem, replace(cert, bregman_upper=Fraction(0)))
    sup = cert.support
    flipped = sup._replace(tight=sup.inactive[:1], inactive=sup.tight[:1] + sup.inactive[1:])
    assert false_claims(problem, replace(cert, support=flipped))
    assert false_claims(
        PROBLEMS["infeasible"],
        replace(Certificate.from_json(json.loads(base_certificate(20))), status=CertStatus.OPTIMAL),
    )
