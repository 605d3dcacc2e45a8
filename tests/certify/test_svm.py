"""Tests for certify.svm (`certify_svm`): targets of issue 3 at m = 100, the fast path, infeasible
and near-degenerate inputs, bad input; m = 10^4 targets in slow tests."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from certify import AttentionProblem, CertStatus, MdcertError, check_certificate, synthetic_problem
from certify.svm import certify_svm, target_bits
from certify.synth import planted_problem

PROBLEM = synthetic_problem()


@pytest.mark.parametrize("p", ["1.1", "1.5", "1.75", "2", "3"])
def test_paper_size_targets(p):
    c = certify_svm(PROBLEM, p, digits=60)
    res = check_certificate(PROBLEM, c)
    assert c.status is CertStatus.OPTIMAL and res.ok, res.first_failure
    assert c.p == Fraction(p)
    assert c.relative_width() <= Fraction(1, 10**60)
    assert c.direction_error_upper <= Fraction(1, 10**25)
    assert not c.support.undecided
    assert len(c.support.tight) + len(c.support.inactive) == 42  # (time: certify_bench.py)


def test_fast_path_digits_30():
    for p in ("1.25", "1.5", "2.5"):
        c = certify_svm(PROBLEM, p, digits=30)
        assert c.status is CertStatus.OPTIMAL and check_certificate(PROBLEM, c).ok
        assert c.relative_width() <= Fraction(1, 10**30)
        assert c.direction_error_upper < Fraction(1, 10**12)


def test_decoder_svm_and_explicit_alpha():
    c = certify_svm(PROBLEM, "1.5", svm="decoder", alpha="0,1,2,3,4,5", digits=30)
    assert c.status is CertStatus.OPTIMAL and c.alpha == (0, 1, 2, 3, 4, 5)
    assert c.solution_float().shape == (10,)
    assert check_certificate(PROBLEM, c).ok


def test_p_is_exact_and_solution_is_feasible():
    c = certify_svm(PROBLEM, 1.1, digits=20)  # a float p is read through its repr: 11/10
    assert c.p == Fraction(11, 10)
    Z, e = PROBLEM.attention_constraints("opt").exact_rows()
    w = np.array(c.solution_exact(), dtype=object)
    assert min(Z.dot(w)) * Fraction(2) ** e >= 1


def test_precision_scales_with_digits():
    assert (
        target_bits(Fraction(3), 60)
        > target_bits(Fraction(3, 2), 60)
        > target_bits(Fraction(3, 2), 30)
    )
    lo = certify_svm(PROBLEM, "1.75", digits=20)
    hi = certify_svm(PROBLEM, "1.75", digits=100)
    assert hi.relative_width() <= Fraction(1, 10**100) < lo.relative_width()
    assert hi.opt_lower >= lo.opt_lower and hi.opt_upper <= lo.opt_upper


def test_infeasible_duplicated_alpha_token():
    X = PROBLEM.X.copy()
    a = PROBLEM.optimal_indices().indices
    X[2, (a[2] + 1) % 8] = X[2, a[2]]  # the selected token duplicated: a zero constraint row
    pr = AttentionProblem(X, PROBLEM.y, PROBLEM.z, PROBLEM.v)
    c = certify_svm(pr, "1.5", alpha=a)
    assert c.status is CertStatus.INFEASIBLE
    assert c.gordan is not None and check_certificate(pr, c).ok


def test_infeasible_decoder_gives_gordan_certificate():
    X = np.zeros((3, 2, 2))
    X[0, 0], X[1, 0], X[2, 0] = [1.0, 0.0], [0.0, 1.0], [-0.5, -0.25]
    pr = AttentionProblem(X, np.ones(3), np.ones((3, 2)), np.ones(2), alpha=[0, 0, 0])
    c = certify_svm(pr, "2", svm="decoder")
    assert c.status is CertStatus.INFEASIBLE
    g = c.gordan.fractions()
    assert sum(g) == 1 and min(g) >= 0
    assert check_certificate(pr, c).ok


@pytest.mark.parametrize("p", ["1.5", "3"])
def test_coinciding_constraints_never_wrong(p):
    X = PROBLEM.X.copy()
    a = PROBLEM.optimal_indices().indices
    ts = [t for t in range(8) if t != a[0]]
    X[0, ts[1]] = X[0, ts[0]]  # two tokens equal: two identical constraint rows
    pr = AttentionProblem(X, PROBLEM.y, PROBLEM.z, PROBLEM.v)
    c = certify_svm(pr, p, alpha=a, digits=40)
    assert c.status is CertStatus.OPTIMAL and check_certificate(pr, c).ok
    sup = c.support
    for part in (
        sup.tight,
        sup.inactive,
    ):  # identical rows are classified alike (or left undecided)
        assert (
            ((0, ts[0]) in part) == ((0, ts[1]) in part)
            or (0, ts[0]) in sup.undecided
            or (0, ts[1]) in sup.undecided
        )


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"p": "1"}, "p > 1"),
        ({"p": "inf"}, "finite"),
        ({"p": "abc"}, "invalid p"),
        ({"p": "2", "svm": "mlp"}, "unknown svm"),
        ({"p": "2", "digits": 0}, "invalid digits"),
        ({"p": "2", "digits": 2.5}, "invalid digits"),
        ({"p": "2", "alpha": "0,1"}, "one token index per example"),
        ({"p": "2", "alpha": [9] * 6}, "not a token index"),
    ],
)
def test_bad_input(kwargs, match):
    with pytest.raises(MdcertError, match=match):
        certify_svm(PROBLEM, **kwargs)


def test_not_a_problem():
    with pytest.raises(MdcertError, match="AttentionProblem"):
        certify_svm({"X": 1}, "2")


@pytest.mark.slow
@pytest.mark.parametrize("p", ["1.1", "1.5", "1.75", "2", "3"])
def test_large_targets(p):
    pr = synthetic_problem(n=20, T=16, d=100, seed=1)
    c = certify_svm(pr, p, digits=60)
    res = check_certificate(pr, c)
    assert c.status is CertStatus.OPTIMAL and res.ok, res.first_failure
    assert c.relative_width() <= Fraction(1, 10**50) and not c.support.undecided


@pytest.mark.parametrize("scale", [1e-9, 1e-15, 1.0])
def test_float_rounded_combination_never_wrong(scale):
    # a3 = fl(-(a1 + a2)): infeasible in floats, but exactly the rows may be independent
    rng = np.random.default_rng(11)
    a1, a2 = rng.standard_normal(3), rng.standard_normal(3) * scale
    X = np.zeros((3, 2, 3))
    X[0, 0], X[1, 0], X[2, 0] = a1, a2, -(a1 + a2)
    pr = AttentionProblem(X, np.ones(3), np.ones((3, 3)), np.ones(3), alpha=[0, 0, 0])
    c = certify_svm(pr, "1.5", svm="decoder", digits=20)
    exact_dependent = all(
        Fraction(float(x)) + Fraction(float(y)) + Fraction(float(z)) == 0
        for x, y, z in zip(a1, a2, -(a1 + a2))
    )
    if exact_dependent:
        assert c.status is not CertStatus.OPTIMAL
    else:
        assert c.status is not CertStatus.INFEASIBLE
    assert check_certificate(pr, c).ok


@pytest.mark.parametrize("p", ["1.5", "2", "3"])
def test_weakly_active_and_dependent_rows(p):
    # rows (1, 0), (0, 1), (1/2, 1/2): w* = (1, 1) for every p and the third row is active too,
    # with non-unique multipliers. Nothing may be called inactive; the ball path may leave rows
    # undecided, the p = 2 exact path decides all of them.
    X = np.zeros((3, 2, 2))
    X[0, 0], X[1, 0], X[2, 0] = [1.0, 0.0], [0.0, 1.0], [0.5, 0.5]
    pr = AttentionProblem(X, np.ones(3), np.ones((3, 2)), np.ones(2), alpha=[0, 0, 0])
    c = certify_svm(pr, p, svm="decoder", digits=30)
    assert c.status is CertStatus.OPTIMAL and check_certificate(pr, c).ok
    assert not c.support.inactive
    if p == "2":
        assert c.exact_kkt and len(c.support.tight) == 3
        assert c.solution_exact() == [1, 1]
    w = c.solution_exact()
    assert abs(w[0] - 1) <= c.distance_upper and abs(w[1] - 1) <= c.distance_upper


# ---------------------------------------------------------------- adversarial review (round 2)
@pytest.mark.parametrize(
    "sx, sz, p",
    [
        (1e-150, 1e-150, "1.01"),
        (1e150, 1e150, "20"),
        (1e150, 1e-150, "2"),
        (1e-300, 1.0, "1.5"),
        (1e20, 1e20, "3"),
        (1e-40, 1e-40, "20"),
    ],
)
@pytest.mark.parametrize("svm", ["attention", "decoder"])
def test_extreme_scales_certified_or_honest_never_a_crash(sx, sz, svm, p):
    """Findings: 1e-150 / 1e150 data crashed (linprog ValueError on inf rows, OverflowError in the
    float rows, 'negative shift count' in refine); 1e20 / 1e-40 data gave no_verified_result at some
    p. Now an exact power-of-two rescaling is solved and mapped back; the certificate names the
    original data and the checker accepts it."""
    rng = np.random.default_rng(1)
    pr = AttentionProblem(
        rng.standard_normal((2, 3, 2)) * sx,
        np.ones(2),
        rng.standard_normal((2, 2)) * sz,
        np.ones(2),
        alpha=[0, 0],
    )
    c = certify_svm(pr, p, svm=svm, digits=20)
    res = check_certificate(pr, c)
    assert res.ok, res.first_failure
    assert c.status is CertStatus.OPTIMAL and c.data_hash == pr.data_hash()
    assert c.opt_lower <= c.opt_upper


def test_subnormal_and_max_float_tokens_never_crash():
    cases = [
        AttentionProblem(
            np.array([[[5e-324, 0.0], [0.0, 0.0], [0.0, 5e-324]]]),
            np.ones(1),
            np.array([[1.0, 1.0]]),
            np.ones(2),
            alpha=[0],
        ),
        AttentionProblem(
            np.array([[[1.7e308, 0.0], [-1.7e308, 0.0]]]),
            np.ones(1),
            np.array([[1.7e308, 1.0]]),
            np.ones(2),
            alpha=[0],
        ),
    ]
    for pr in cases:
        for svm in ("attention", "decoder"):
            c = certify_svm(pr, "1.5", svm=svm, digits=20)
            assert check_certificate(pr, c).ok
            assert c.status is not CertStatus.INFEASIBLE


def test_token_one_ulp_from_alpha_is_never_wrong():
    """A token 1 ulp from x_alpha makes a row of size 2**-52: OPT ~ 1e16. Proven or honest."""
    rng = np.random.default_rng(1)
    X = rng.standard_normal((2, 3, 2))
    X[0, 1] = np.nextafter(X[0, 0], np.inf)
    pr = AttentionProblem(X, np.ones(2), rng.standard_normal((2, 2)), np.ones(2), alpha=[0, 0])
    for p in ("1.5", "3"):
        c = certify_svm(pr, p, digits=20)
        assert check_certificate(pr, c).ok
        assert c.status is not CertStatus.INFEASIBLE


# ---------------------------------------------------------------------- variable lengths (padding)
def _without_run_facts(cert) -> dict:
    out = cert.to_json()
    out.pop("data_hash")
    out["info"] = {k: v for k, v in out["info"].items() if k != "seconds"}
    return out


def _variable_problem(seed: int) -> AttentionProblem:
    base = synthetic_problem(n=5, T=7, d=6, seed=seed)
    L = np.random.default_rng(seed).integers(2, 8, size=5)
    X = np.where(np.arange(7)[None, :, None] < L[:, None, None], base.X, 0.0)
    assert L.min() < 7
    return AttentionProblem(X, base.y, base.z, base.v, lengths=L)


@pytest.mark.parametrize("p", ["1.5", "2", "3"])
@pytest.mark.parametrize("svm", ["attention", "decoder"])
def test_padded_twin_certifies_bit_for_bit_the_same(p, svm):
    for prob in (PROBLEM, _variable_problem(3)):
        twin = prob.padded(prob.T + 3)  # more zero padding appended: the same problem
        a, b = certify_svm(prob, p, svm=svm, digits=30), certify_svm(twin, p, svm=svm, digits=30)
        assert a.status is CertStatus.OPTIMAL and b.data_hash == twin.data_hash() != a.data_hash
        assert _without_run_facts(a) == _without_run_facts(
            b
        )  # same OPT enclosure, support, w and lam bits
        assert check_certificate(twin, b).ok and check_certificate(prob, a).ok
        assert not check_certificate(twin, a).ok  # the data hash names the padded file


def test_full_length_lengths_change_no_certificate_bit():
    same = AttentionProblem(
        PROBLEM.X,
        PROBLEM.y,
        PROBLEM.z,
        PROBLEM.v,
        lengths=[PROBLEM.T] * PROBLEM.n,
        provenance={"source": "synthetic_problem()"},
    )
    a, b = certify_svm(PROBLEM, "1.75", digits=30), certify_svm(same, "1.75", digits=30)
    assert a.data_hash == b.data_hash and _without_run_facts(a) == _without_run_facts(b)


def test_variable_lengths_certify_only_valid_rows():
    prob = _variable_problem(3)
    c = certify_svm(prob, "2", digits=30)
    rows = [
        tuple(r)
        for part in (c.support.tight, c.support.inactive, c.support.undecided)
        for r in part
    ]
    L = prob.valid_lengths
    assert sorted(rows) == [
        (i, t) for i in range(prob.n) for t in range(int(L[i])) if t != c.alpha[i]
    ]
    with pytest.raises(MdcertError, match="is a padding token"):
        certify_svm(prob, "2", alpha=[int(L[0])] + [0] * (prob.n - 1))


# ---------------------------------------------------------------------- constraint-heavy systems (structured path)
def _claims(c) -> tuple:
    return c.status, c.support.tight, c.support.inactive, c.support.undecided


@pytest.mark.parametrize("p", ["1.1", "2", "3"])
@pytest.mark.parametrize(
    "make",
    [
        lambda: PROBLEM,
        lambda: planted_problem(n=40, T=8, d=6, seed=5),
        lambda: _variable_problem(4),
    ],
)
def test_working_set_path_makes_the_dense_paths_claims(make, p):
    prob = make()
    dense = certify_svm(prob, p, digits=30, path="dense")
    ws = certify_svm(prob, p, digits=30, path="working-set")
    assert dense.status is CertStatus.OPTIMAL and _claims(ws) == _claims(dense)
    assert max(ws.opt_lower, dense.opt_lower) <= min(
        ws.opt_upper, dense.opt_upper
    )  # both enclose OPT
    assert ws.relative_width() <= Fraction(1, 10**30)
    assert "working-set" in ws.info["warm_start"] and check_certificate(prob, ws).ok


def test_constraint_heavy_planted_feasible_takes_the_structured_path():
    prob = planted_problem(n=70, T=16, d=32, seed=1)  # N = 1050 rows x 1024 variables
    c = certify_svm(prob, "1.75", digits=30)
    assert c.status is CertStatus.OPTIMAL and "working-set" in c.info["warm_start"]
    assert c.relative_width() <= Fraction(1, 10**30) and not c.support.undecided
    assert check_certificate(prob, c).ok


def test_constraint_heavy_infeasible_is_proven_on_the_structured_path():
    prob = synthetic_problem(n=40, T=8, d=4, seed=0)  # N = 280 rows x 16 variables: infeasible
    c = certify_svm(prob, "2", digits=30, path="working-set")
    assert c.status is CertStatus.INFEASIBLE and check_certificate(prob, c).ok


def test_memory_budget_gives_no_verified_result_not_memory_error(monkeypatch):
    c = certify_svm(PROBLEM, "2", memory_budget=4096)
    assert c.status is CertStatus.NO_VERIFIED_RESULT and "memory budget" in c.info["reason"]
    assert c.info["memory_estimate_bytes"] > c.info["memory_budget_bytes"] == 4096
    assert check_certificate(PROBLEM, c).ok  # claims nothing

    import certify.svm as svm_mod

    def oom(*args, **kwargs):
        raise MemoryError("Unable to allocate 28.6 GiB")

    monkeypatch.setattr(svm_mod, "solve", oom)
    c = certify_svm(PROBLEM, "2")
    assert c.status is CertStatus.NO_VERIFIED_RESULT and c.info["reason"].startswith(
        "ran out of memory"
    )
    for bad in (0, -5, 1.5, True, "4G"):
        with pytest.raises(MdcertError, match="memory_budget"):
            certify_svm(PROBLEM, "2", memory_budget=bad)
    with pytest.raises(MdcertError, match="invalid path"):
        certify_svm(PROBLEM, "2", path="sparse")


@pytest.mark.parametrize("p", ["1.1", "1.75", "3"])
def test_structured_infeasibility_does_not_depend_on_p(p):
    # at p = 1.1 the p-dual stalls instead of diverging on this instance; feasibility does not depend
    # on p, so the p = 2 dual's Gordan direction is used, and re-proved exactly as always
    prob = synthetic_problem(n=100, T=16, d=8, seed=0)  # N = 1500 rows x 64 variables: infeasible
    c = certify_svm(prob, p, digits=30, path="working-set")
    assert c.status is CertStatus.INFEASIBLE and c.gordan_basis is not None
    assert check_certificate(prob, c).ok
