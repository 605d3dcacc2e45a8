"""Tests for certify.check: the independent checker accepts what the solver proves and rejects
corrupted certificates (negative multiplier, W scaled by 0.99, flipped support label, changed
digit in a bound, different p, different data)."""

from __future__ import annotations

import ast
import copy
import json
import re
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


@pytest.mark.parametrize(
    "field, stronger",
    [
        ("opt_lower", +1),
        ("opt_upper", -1),
        ("distance_upper", -1),
        ("direction_error_upper", -1),
        ("bregman_upper", -1),
    ],
)
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
    d["data_hash"] = (
        other.data_hash()
    )  # a forged hash does not help: claims may hold on nearby data,
    # but the certificate is never accepted for the data it does not name
    _fails(d, "data_hash")


def test_rejects_wrong_svm_and_alpha(cert_json):
    _fails(cert_json, "svm", svm="decoder")
    d = copy.deepcopy(cert_json)
    d["alpha"] = [0] * 6
    _fails(d)


def test_infeasible_certificate_checked():
    X = np.array([[[1.0, 0.5], [0.0, 0.0]], [[-1.0, -0.5], [0.0, 0.0]]])
    pr = AttentionProblem(
        X, np.array([1.0, 1.0]), np.ones((2, 2)), np.array([1.0, 0.0]), alpha=[0, 0]
    )
    c = certify_svm(pr, "1.5", svm="decoder")
    assert c.status is CertStatus.INFEASIBLE
    d = c.to_json()
    assert check_certificate(pr, d).ok
    d["gordan"]["ints"] = [1, 2]
    _fails(d, "gordan", problem=pr)


def test_checker_imports_no_solver():
    src = Path(__file__).resolve().parents[3] / "certify" / "check" / "checker.py"
    tree = ast.parse(src.read_text())
    mods = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            mods |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            mods.add(node.module)
    banned = {
        "scipy",
        "cvxpy",
        "torch",
        "certify.svm",
        "certify.refine",
        "certify.warmstart",
        "certify.bounds",
        "certify.feasible",
        "certify.ops",
        "clarabel",
    }
    assert not {
        m for m in mods if m and (m in banned or m.split(".")[0] in {"scipy", "cvxpy", "torch"})
    }
    assert len(src.read_text().splitlines()) < 400


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 10**6),
    n=st.integers(1, 3),
    T=st.integers(2, 4),
    d=st.integers(1, 4),
    p=st.sampled_from(["1.25", "1.5", "2", "2.5", "3"]),
    svm=st.sampled_from(["attention", "decoder"]),
)
@example(seed=0, n=3, T=4, d=2, p="1.5", svm="attention")
@example(seed=1, n=3, T=2, d=1, p="3", svm="decoder")
def test_checker_accepts_whatever_the_solver_proves(seed, n, T, d, p, svm):
    rng = np.random.default_rng(seed)
    X = (
        np.round(rng.standard_normal((n, T, d)) * 8) / 8
    )  # coarse values: ties, zero rows, degeneracy
    pr = AttentionProblem(
        X,
        rng.choice([-1.0, 1.0], n),
        np.round(rng.standard_normal((n, d)) * 4) / 4,
        rng.standard_normal(d),
        alpha=[0] * n,
    )
    c = certify_svm(pr, p, svm=svm, digits=20)
    res = check_certificate(pr, c)
    assert res.ok, res.first_failure
    if c.status is CertStatus.OPTIMAL:
        assert c.opt_lower <= c.opt_upper


# ---------------------------------------------------------------- adversarial review (round 2)
def test_nan_ball_is_never_a_zero_upper_bound():
    """Finding: ``_top(nan)`` returned 0, so a nan distance (e.g. ``pa - 1`` straddling 0 for p
    near 1) would have accepted distance/direction/Bregman claims of 0 and every inactive claim."""
    from flint import arb

    from certify.check.claims import _top

    assert not _top(arb("nan")) <= 1000
    assert not _top(arb("nan")).is_finite()
    assert _top(arb(-3)) == 0 and _top(arb(5)) == 5


def test_p_near_one_distance_zero_is_rejected():
    """A non-optimal feasible point with a claimed distance 0 at p = 1 + 2**-190 (where the ball
    ``pa - 1`` is not far from 0) is rejected."""
    pr = AttentionProblem(
        np.array([[[1.0], [0.0]]]), np.array([1.0]), np.array([[1.0]]), np.array([1.0])
    )
    p = 1 + Fraction(1, 2**189)
    cert = {
        "status": "optimal",
        "svm": "attention",
        "p": f"{p.numerator}/{p.denominator}",
        "alpha": [0],
        "data_hash": pr.data_hash(),
        "d": 1,
        "opt_lower": "1/2",
        "opt_upper": "3/1",
        "distance_upper": "0/1",
        "direction_error_upper": "0/1",
        "bregman_upper": "0/1",
        "support": None,
        "w": {"ints": [2], "exp": 0, "den": 1},
        "lam": {"ints": [1], "exp": 0, "den": 1},
    }
    assert not check_certificate(pr, cert).ok


def test_non_optimal_status_cannot_carry_claims(cert_json):
    """Finding: a no_verified_result / infeasible certificate was accepted with unchecked bounds,
    support lists and vectors, which scripts reading ``opt_lower`` or ``support`` would trust."""
    d = copy.deepcopy(cert_json)
    d["status"] = "no_verified_result"
    _fails(d, "unverified_fields")
    bare = {k: d[k] for k in ("status", "svm", "p", "alpha", "data_hash", "d")}
    assert check_certificate(PROBLEM, bare).ok


def test_rejects_wrong_d(cert_json):
    d = copy.deepcopy(cert_json)
    d["d"] = 5
    _fails(d, "d")


@pytest.mark.parametrize(
    "field, value", [("d", [10]), ("digits", "many"), ("info", [1]), ("exact_kkt", "no")]
)
def test_malformed_fields_are_one_line_errors(cert_json, field, value):
    from certify import MdcertError

    d = copy.deepcopy(cert_json)
    d[field] = value
    with pytest.raises(MdcertError, match=field):
        check_certificate(PROBLEM, d)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10**6), eps=st.sampled_from([Fraction(1, 10**6), Fraction(1, 10**30)]))
@example(seed=3, eps=Fraction(1, 10**30))
def test_accepted_ball_claims_are_true_at_p2(seed, eps):
    """Ground truth: at p = 2 the exact optimum w* is known (rational KKT). A ball-path certificate
    for a feasible non-optimal point (1 + eps) w* that the checker accepts must be true: OPT in
    [opt_lower, opt_upper], ||w - w*|| <= distance_upper, tight rows have a_i^T w* = 1 and
    inactive rows a_i^T w* > 1 (all compared in exact rationals)."""
    from dataclasses import replace

    from certify.bounds import ball_bounds
    from certify.certificate import ExactVector
    from certify.feasible import constraint_system
    from certify.ops import ExactOps

    rng = np.random.default_rng(seed)
    n, T, d = 2, 3, 2
    pr = AttentionProblem(
        np.round(rng.standard_normal((n, T, d)) * 4) / 4,
        np.ones(n),
        np.round(rng.standard_normal((n, d)) * 4) / 4,
        np.ones(d),
        alpha=[0] * n,
    )
    exact = certify_svm(pr, "2", digits=20)
    if exact.status is not CertStatus.OPTIMAL or not exact.exact_kkt:
        return
    wstar = exact.w.fractions()
    ops = ExactOps(constraint_system(pr, "attention", [0] * n))
    w = replace(
        exact.w,
        ints=tuple(k * (eps.denominator + eps.numerator) for k in exact.w.ints),
        den=exact.w.den * eps.denominator,
    )
    # ball_bounds wants dyadic vectors: round w up to a dyadic feasible point and lam to a dyadic
    scale = 2**400
    wd = ExactVector(
        tuple(-(-k * scale // w.den) if k > 0 else k * scale // w.den for k in w.ints),
        w.exp - 400,
        1,
    )
    lamd = ExactVector(
        tuple(k * scale // exact.lam.den for k in exact.lam.ints), exact.lam.exp - 400, 1
    )
    b = ball_bounds(ops, Fraction(2), wd, lamd, bits=300)
    if b is None:
        return
    cert = replace(
        exact,
        exact_kkt=False,
        w=wd,
        lam=lamd,
        opt_lower=b.opt_lower,
        opt_upper=b.opt_upper,
        distance_upper=b.distance_upper,
        direction_error_upper=b.direction_error_upper,
        bregman_upper=b.bregman_upper,
        support=b.support,
    )
    res = check_certificate(pr, cert)
    assert res.ok, res.first_failure
    opt2 = sum(x * x for x in wstar)
    assert cert.opt_lower**2 <= opt2 <= cert.opt_upper**2
    assert sum((a - b_) ** 2 for a, b_ in zip(wd.fractions(), wstar)) <= cert.distance_upper**2
    Z, e = constraint_system(pr, "attention", [0] * n).exact_rows()
    Aw = [sum(Fraction(int(z)) * x for z, x in zip(row, wstar)) * Fraction(2) ** e for row in Z]
    index = list(constraint_system(pr, "attention", [0] * n).index)
    for r in cert.support.tight:
        assert Aw[index.index(tuple(r))] == 1
    for r in cert.support.inactive:
        assert Aw[index.index(tuple(r))] > 1


def test_rejects_point_violating_a_constraint_by_a_hair(cert_json):
    """w rescaled so that min A w = 1 - 2**-300 exactly: infeasible by a hair (exact check)."""
    d = copy.deepcopy(cert_json)
    Z, e = PROBLEM.attention_constraints(d["alpha"]).exact_rows()
    w = d["w"]
    amin = (
        Fraction(int(min(Z.dot(np.array(w["ints"], dtype=object)))))
        * Fraction(2) ** (e + w["exp"])
        / w["den"]
    )
    w["ints"] = [k * (2**300 - 1) * amin.denominator for k in w["ints"]]
    w["den"] = w["den"] * amin.numerator
    w["exp"] -= 300
    res = _fails(d, "w_feasible")
    assert "min A w" in res.first_failure


def test_checker_builds_rows_of_valid_tokens_only():
    """A certificate of the padded data read with padding as real tokens (its hash forged to the padded
    problem's) is rejected; the honest certificate is accepted."""
    base = synthetic_problem(n=4, T=5, d=4, seed=8)
    L = np.array([5, 3, 4, 2])
    X = np.where(np.arange(5)[None, :, None] < L[:, None, None], base.X, 0.0)
    padded = AttentionProblem(X, base.y, base.z, base.v, lengths=L)
    as_tokens = AttentionProblem(X, base.y, base.z, base.v)  # zeros read as tokens
    alpha = list(padded.optimal_indices().indices)
    honest = certify_svm(padded, "2", alpha=alpha, digits=30)
    assert honest.status is CertStatus.OPTIMAL and check_certificate(padded, honest).ok
    other = certify_svm(as_tokens, "2", alpha=alpha, digits=30)
    assert other.status is CertStatus.OPTIMAL
    forged = dict(other.to_json(), data_hash=padded.data_hash())
    res = check_certificate(padded, forged)
    assert not res.ok and res.first_failure.startswith("vectors"), res.first_failure
    forged = dict(honest.to_json(), data_hash=as_tokens.data_hash())
    assert not check_certificate(as_tokens, forged).ok


@pytest.mark.parametrize("svm", ["attention", "decoder"])
def test_checker_rows_and_products_equal_the_plain_definitions(svm):
    """The vectorized rows, ``A w`` and the per-example ``A^T lam`` equal the row-by-row definitions
    (docs/theory.md section 4.6), padding included."""
    from certify.check.claims import Rows

    rng = np.random.default_rng(4)
    n, T, d = 5, 6, 3
    lengths = np.array([6, 2, 4, 3, 6])
    X = np.round(rng.standard_normal((n, T, d)) * 8) / 8
    X[np.arange(T)[None, :] >= lengths[:, None]] = 0.0
    alpha = [2, 1, 0, 2, 5]
    pr = AttentionProblem(
        X,
        rng.choice([-1.0, 1.0], n),
        np.round(rng.standard_normal((n, d)) * 4) / 4,
        rng.standard_normal(d),
        alpha=alpha,
        lengths=lengths,
    )
    rows = Rows(pr, svm, tuple(alpha))
    Xi, Zi = pr.exact("X").ints.astype(object), pr.exact("z").ints.astype(object)
    plain = []
    for i in range(n):
        if svm == "decoder":
            plain.append((i, [int(v) * (1 if pr.y[i] > 0 else -1) for v in Xi[i, alpha[i]]], None))
            continue
        plain += [
            (i, [int(v) for v in Xi[i, alpha[i]] - Xi[i, t]], [int(v) for v in Zi[i]])
            for t in range(lengths[i])
            if t != alpha[i]
        ]
    assert rows.N == len(plain) and [r[0] for r in rows.index] == [p[0] for p in plain]
    assert rows.L.tolist() == [p[1] for p in plain]
    lam = [int(k) for k in rng.integers(0, 1000, size=rows.N)]
    w = [int(k) for k in rng.integers(-50, 50, size=rows.m)]
    vec = [
        (
            np.array(l_, dtype=object)
            if r_ is None
            else np.outer(np.array(l_, dtype=object), np.array(r_, dtype=object)).ravel()
        )
        for _, l_, r_ in plain
    ]
    assert rows.ATlam(lam) == [int(v) for v in sum(k * a for k, a in zip(lam, vec))]
    assert rows.Aw(w) == [int(np.dot(a, np.array(w, dtype=object))) for a in vec]


# --- cost bounded by the honest certificate's (issue 21 item 2) and stray fields (item 6) ---


def _undecided_but(data: dict, tight: int) -> dict:
    """The adversarial shape: ``tight`` rows claimed tight, every other row undecided (a partition)."""
    d = copy.deepcopy(data)
    rows = sorted(r for part in ("tight", "inactive", "undecided") for r in d["support"][part])
    d["support"] = {"tight": rows[:tight], "inactive": [], "undecided": rows[tight:]}
    return d


@pytest.fixture(scope="module")
def wide_cert():
    """N = 120 rows, m = 16 variables, a ball (non exact-KKT) certificate."""
    from certify.synth import planted_problem

    pr = planted_problem(n=40, T=4, d=4, seed=1)
    c = certify_svm(pr, "7/4", digits=20)
    assert c.status is CertStatus.OPTIMAL and not c.exact_kkt and c.support.tight
    return pr, json.loads(json.dumps(c.to_json()))


def test_tight_claim_over_more_rows_than_variables_is_refused_at_once(wide_cert):
    """Finding (issue 21): 1 tight row and every other row undecided made the checker build and invert
    the N x N Gram matrix (N = 5,000: 531 s, 9.5 GB). More than m distinct rows: singular, refused."""
    pr, data = wide_cert
    assert check_certificate(pr, data).ok
    res = _fails(_undecided_but(data, 1), "support_tight", problem=pr)
    assert "more than 16 distinct rows are not claimed inactive" in res.first_failure
    assert "m = 16 variables" in res.first_failure
    weak = _undecided_but(
        data, 0
    )  # every row undecided claims nothing: accepted, and costs nothing
    res = check_certificate(pr, weak)
    assert res.ok, res.first_failure


def test_tight_claims_beyond_the_checkers_limit_are_refused(cert_json, monkeypatch):
    """The documented cap (`certify.limits.TIGHT_GROUPS`) applies below m too; the solver's limit is the
    same constant, so an honest certificate never crosses it."""
    import certify.check.claims
    from certify.bounds import TIGHT_LIMIT
    from certify.limits import TIGHT_GROUPS

    assert TIGHT_LIMIT == TIGHT_GROUPS == 4096
    sup = cert_json["support"]
    if not sup["tight"] or cert_json.get("exact_kkt"):
        pytest.skip(
            "no tight rows to prove through the Gram matrix (exact KKT: each row by its slack)"
        )
    open_rows = len(sup["tight"]) + len(
        sup["undecided"]
    )  # PROBLEM's rows are distinct: one group each
    monkeypatch.setattr(certify.check.claims, "TIGHT_GROUPS", open_rows)
    assert check_certificate(PROBLEM, cert_json).ok
    monkeypatch.setattr(certify.check.claims, "TIGHT_GROUPS", open_rows - 1)
    res = _fails(cert_json, "support_tight")
    assert f"at most min(m, {open_rows - 1}) = {open_rows - 1}" in res.first_failure


def test_false_inactive_claims_are_refused(wide_cert):
    """Every row claimed inactive: the true tight rows are refuted (the test stops at the third)."""
    pr, data = wide_cert
    d = copy.deepcopy(data)
    sup = d["support"]
    d["support"] = {
        "tight": [],
        "inactive": sorted(sup["tight"] + sup["inactive"] + sup["undecided"]),
        "undecided": [],
    }
    res = _fails(d, "support_inactive", problem=pr)
    assert res.first_failure.count("(") == 3


def _infeasible():
    X = np.array([[[1.0, 0.5], [0.0, 0.0]], [[-1.0, -0.5], [0.0, 0.0]]])
    pr = AttentionProblem(
        X, np.array([1.0, 1.0]), np.ones((2, 2)), np.array([1.0, 0.0]), alpha=[0, 0]
    )
    return pr, certify_svm(pr, "1.5", svm="decoder").to_json()


@pytest.mark.parametrize(
    "status, field, value",
    [
        ("optimal", "gordan", {"ints": [1, 1], "exp": 0, "den": 1}),
        ("optimal", "gordan_basis", [0]),
        ("no_verified_result", "gordan", {"ints": [1, 1], "exp": 0, "den": 1}),
        ("no_verified_result", "gordan_basis", [0, 1]),
        ("infeasible", "opt_upper", "3/1"),
        ("infeasible", "w", {"ints": [1, 1], "exp": 0, "den": 1}),
    ],
)
def test_stray_fields_of_another_status_are_refused(cert_json, status, field, value):
    """Finding (issue 21 item 6): `gordan` on an optimal or no_verified_result certificate was accepted;
    docs/formats.md says only `infeasible` carries it (and only `optimal` the bounds and vectors)."""
    if status == "infeasible":
        pr, d = _infeasible()
        assert check_certificate(pr, d).ok
    else:
        pr, d = PROBLEM, copy.deepcopy(cert_json)
        if status == "no_verified_result":
            d = {k: d[k] for k in ("svm", "p", "alpha", "data_hash", "d")}
        d["status"] = status
        assert check_certificate(pr, d).ok
    d[field] = value
    res = _fails(d, "unverified_fields", problem=pr)
    assert re.search(rf"status {status} cannot carry \['{field}'\]", res.first_failure), (
        res.first_failure
    )


_MEASURE = r"""
import json, re, sys, time
from certify import AttentionProblem, check_certificate
problem, data = AttentionProblem.load(sys.argv[1]), json.load(open(sys.argv[2]))
t0 = time.perf_counter()
res = check_certificate(problem, data)
peak = re.search(r"VmHWM:\s*(\d+) kB", open("/proc/self/status").read())  # ru_maxrss keeps the forking parent's
print(json.dumps({"ok": res.ok, "first_failure": res.first_failure, "seconds": time.perf_counter() - t0,
                  "rss_mb": int(peak.group(1)) / 1024}))
"""


def _measure(problem_path, data: dict, tmp_path, name: str) -> dict:
    import subprocess
    import sys

    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(data))
    out = subprocess.run(
        [sys.executable, "-c", _MEASURE, str(problem_path), str(path)],
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    return json.loads(out.stdout)


@pytest.mark.slow
@pytest.mark.skipif(
    not Path("/proc/self/status").exists(), reason="peak RSS read from /proc (Linux)"
)
def test_tampered_5000_row_certificate_is_refused_within_10_s_and_1_gb(tmp_path):
    """Must reach (issue 21): N = 5,000 rows (m = 4,225 variables, so the checker's 4,096-row limit and not
    the rank decides), 1 tight row claimed and every other row undecided: refused in <= 10 s and <= 1 GB
    peak RSS of the checking process (before: 531 s, 9.5 GB). The honest certificate is measured alike."""
    from certify.synth import planted_problem

    pr = planted_problem(n=500, T=11, d=65, seed=0)
    c = certify_svm(pr, "7/4", digits=20)
    assert c.status is CertStatus.OPTIMAL and not c.exact_kkt
    problem_path = tmp_path / "problem.npz"
    pr.save(problem_path)
    data = json.loads(json.dumps(c.to_json()))
    honest = _measure(problem_path, data, tmp_path, "honest")
    tampered = _measure(problem_path, _undecided_but(data, 1), tmp_path, "tampered")
    print(f"honest {honest}\ntampered {tampered}")
    assert honest["ok"], honest
    assert not tampered["ok"] and tampered["first_failure"].startswith(
        "support_tight: more than 4096"
    ), tampered
    assert tampered["seconds"] <= 10 and tampered["rss_mb"] <= 1024, tampered
    assert (
        tampered["seconds"] <= max(honest["seconds"], 1.0)
        and tampered["rss_mb"] <= 2 * honest["rss_mb"]
    )
