"""Tests of theorems.tokens: feasibility, global and local optimality on crafted and random instances."""

from __future__ import annotations

import itertools
import warnings
from fractions import Fraction

import numpy as np
import pytest

from certify.errors import MdcertError
from certify.problem import AttentionProblem
from theorems.context import CheckContext
from theorems.tokens import (
    decoder_svm_feasible,
    exact_vector,
    joint_svms_feasible,
    svm_feasible,
    tokens_globally_optimal,
    tokens_locally_optimal,
    verify_gordan,
    verify_point,
)
from theorems.verdict import Method, Verdict

H, F, U = Verdict.HOLDS, Verdict.FAILS, Verdict.UNDECIDED

# the example: token 1 is alpha's only support token (score -1 < 0); token 2 has the top score 5
# but an inactive constraint -> locally optimal, not globally optimal
LOCAL_NOT_GLOBAL = AttentionProblem([[[0, 0], [-1, -1], [-10, 5]]], [1], [[1, 0]], [0, 1])
# x_alpha - x_3 = (1, 0, 5) is active at W_mm = (1, 1, 0) with multiplier 0 (weakly active); token 3 outscores alpha
WEAKLY_ACTIVE = AttentionProblem(
    [[[0, 0, 0], [-1, 0, 0], [0, -1, 0], [-1, 0, -5]]], [1], [[1, 0, 0]], [1, 1, -1]
)
# tokens 2 and 3 are duplicates: two identical rows, multipliers not unique
DUPLICATE_LOW = AttentionProblem([[[0, 0], [-1, 0], [0, -1], [0, -1]]], [1], [[1, 0]], [1, 1])
DUPLICATE_HIGH = AttentionProblem([[[0, 0], [-1, 0], [0, -1], [0, -1]]], [1], [[1, 0]], [1, -1])
TIE = AttentionProblem([[[0, 1], [1, 1]]], [1], [[1, 0]], [0, 1])
INFEASIBLE = AttentionProblem(
    [[[0, 0], [1, 0], [-1, 0]]], [1], [[1, 0]], [0, 1]
)  # alpha=0 between 1 and 2
DECODER_INFEASIBLE = AttentionProblem(
    [[[1, 0], [0, 1]], [[1, 0], [0, 2]]], [1, -1], [[1, 0], [0, 1]], [1, 0]
)


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        warnings.simplefilter("ignore", UserWarning)
        yield


@pytest.mark.parametrize("p", ["1.5", "2", "3"])
def test_locally_but_not_globally_optimal(p):
    ctx = CheckContext(LOCAL_NOT_GLOBAL)
    rep = tokens_locally_optimal([0], p).check(ctx)
    assert rep.verdict is H, rep.message
    ev = rep.evidence[0]
    assert (
        ev.method is Method.INTERVAL and ev.lo == ev.hi == 1
    )  # gap to the only support token: 0 - (-1)
    assert ev.data["tight"] == [[0, 1]] and ev.data["undecided"] == []
    glob = tokens_globally_optimal([0]).check(ctx)
    assert glob.verdict is F and "token 2 scores higher" in glob.message
    assert tokens_globally_optimal("opt").check(ctx).verdict is H


@pytest.mark.parametrize("p", ["1.5", "3"])
def test_weakly_active_row_is_undecided_not_holds(p):
    rep = tokens_locally_optimal([0], p).check(WEAKLY_ACTIVE)
    assert rep.verdict is U
    assert rep.evidence[0].data["undecided_violating"] == [[0, 3]]
    assert "[0, 3]" in rep.message
    # p = 2: an exact rational certificate may decide the row exactly active (then FAILS); never HOLDS
    assert tokens_locally_optimal([0], "2").check(WEAKLY_ACTIVE).verdict is not H


@pytest.mark.parametrize("p", ["1.5", "2", "3"])
def test_duplicated_token(p):
    # duplicate rows cannot be classified individually, but both score below alpha: harmless
    rep = tokens_locally_optimal([0], p).check(DUPLICATE_LOW)
    assert rep.verdict is H, rep.message
    # the same geometry with the duplicates outscoring alpha: possibly support tokens -> not HOLDS
    rep = tokens_locally_optimal([0], p).check(DUPLICATE_HIGH)
    assert rep.verdict is not H


def test_exact_tie():
    glob = tokens_globally_optimal([0]).check(TIE)
    assert glob.verdict is F and "tie" in glob.message
    assert glob.evidence[0].data["ties"] == [[0, 1]]
    loc = tokens_locally_optimal([0], "2").check(TIE)
    assert loc.verdict is F  # the only other token is tight and ties with alpha


def test_infeasible_alpha_fails_with_gordan_certificate():
    ctx = CheckContext(INFEASIBLE)
    rep = svm_feasible([0]).check(ctx)
    assert rep.verdict is F and "Gordan" in rep.message
    ev = rep.evidence[0]
    assert ev.method is Method.EXACT and ev.lo == ev.hi == 0
    weights = {k: Fraction(v) for k, v in ev.data["gordan"].items()}
    assert sum(weights.values()) == 1 and all(w > 0 for w in weights.values())
    # recheck the certificate independently: sum_r g_r a_r = 0
    system = INFEASIBLE.attention_constraints([0])
    rows, exp = system.exact_rows()
    combo = [
        sum(
            weights.get(",".join(map(str, system.index[r])), 0) * int(rows[r, j])
            for r in range(system.N)
        )
        for j in range(system.m)
    ]
    assert all(c == 0 for c in combo)
    loc = tokens_locally_optimal([0], "2").check(ctx)
    assert loc.verdict is F and "infeasible" in loc.message
    assert svm_feasible([1]).check(ctx).verdict is H


def test_decoder_and_joint_feasibility():
    assert decoder_svm_feasible([0, 0]).check(DECODER_INFEASIBLE).verdict is F
    assert svm_feasible([0, 0]).check(DECODER_INFEASIBLE).verdict is H
    joint = joint_svms_feasible([0, 0]).check(DECODER_INFEASIBLE)
    assert joint.verdict is F and len(joint.evidence) == 2
    assert joint_svms_feasible([0, 1]).check(DECODER_INFEASIBLE).verdict is H
    assert decoder_svm_feasible([0]).name == "decoder_svm_feasible"


class _Fake:
    def __init__(self, point=None, gordan=None):
        self.point_exact, self.gordan_exact = point, gordan


def test_solver_claims_are_rechecked_exactly(monkeypatch):
    """A bogus point or Gordan vector from the solver never yields HOLDS / FAILS."""
    ctx = CheckContext(LOCAL_NOT_GLOBAL)
    m = 4
    monkeypatch.setattr(ctx, "feasibility", lambda **kw: _Fake(point=[Fraction(0)] * m))
    rep = svm_feasible([0]).check(ctx)
    assert rep.verdict is U and rep.evidence[0].method is Method.SOLVER
    monkeypatch.setattr(ctx, "feasibility", lambda **kw: _Fake(gordan=[Fraction(1), Fraction(1)]))
    assert svm_feasible([0]).check(ctx).verdict is U
    monkeypatch.setattr(
        ctx,
        "feasibility",
        lambda **kw: _Fake(point=[Fraction(1), Fraction(0), Fraction(0), Fraction(0)]),
    )
    assert svm_feasible([0]).check(ctx).verdict is H  # (1,1).w1 = 1 > 0 and (10,-5).w1 = 10 > 0
    # joint: attention proved, decoder not proved -> the pair is not HOLDS
    calls = iter([_Fake(point=[Fraction(1), Fraction(0), Fraction(0), Fraction(0)]), _Fake()])
    monkeypatch.setattr(ctx, "feasibility", lambda **kw: next(calls))
    assert joint_svms_feasible([0]).check(ctx).verdict is U
    with pytest.raises(TypeError):
        exact_vector([0.5, 1.0])


def test_verify_helpers():
    system = LOCAL_NOT_GLOBAL.attention_constraints([0])
    assert verify_point(system, None) is None
    assert verify_point(system, [Fraction(1, 2), 0, Fraction(1, 2), 0]) == 1
    ok, resid, _ = verify_gordan(system, [1, 0])
    assert not ok and resid > 0
    assert verify_gordan(system, [-1, 1])[0] is False


def test_bad_alpha():
    with pytest.raises(MdcertError, match="not a token index"):
        tokens_locally_optimal([7], "2").check(LOCAL_NOT_GLOBAL)
    with pytest.raises(MdcertError, match="invalid p"):
        tokens_locally_optimal([0], "1").check(LOCAL_NOT_GLOBAL)


# ---------------------------------------------------------------------- p = 2 against exact rationals
def _solve(G, b):
    n = len(G)
    M = [row[:] + [b[i]] for i, row in enumerate(G)]
    for c in range(n):
        piv = next((r for r in range(c, n) if M[r][c] != 0), None)
        if piv is None:
            return None
        M[c], M[piv] = M[piv], M[c]
        for r in range(n):
            if r != c and M[r][c] != 0:
                f = M[r][c] / M[c][c]
                M[r] = [a - f * b_ for a, b_ in zip(M[r], M[c])]
    return [M[i][n] / M[i][i] for i in range(n)]


def exact_p2(problem, alpha):
    """Exact l_2 attention SVM by active-set enumeration: (feasible, support rows)."""
    system = problem.attention_constraints(alpha)
    rows, exp = system.exact_rows()
    A = [[Fraction(int(c)) * Fraction(2) ** exp for c in r] for r in rows]
    N, m = len(A), len(A[0])
    for size in range(1, min(N, m) + 1):
        for S in itertools.combinations(range(N), size):
            G = [[sum(a * b for a, b in zip(A[i], A[j])) for j in S] for i in S]
            lam = _solve(G, [Fraction(1)] * size)
            if lam is None or any(x < 0 for x in lam):
                continue
            w = [sum(lam[k] * A[S[k]][j] for k in range(size)) for j in range(m)]
            Aw = [sum(a * b for a, b in zip(r, w)) for r in A]
            if all(v >= 1 for v in Aw):
                return True, [system.index[r] for r in range(N) if Aw[r] == 1]
    return False, []


@pytest.mark.parametrize("seed", range(12))
def test_p2_verdicts_agree_with_exact_rational_computation(seed):
    # n T = 8 rows in m = 4 unknowns: the seeds cover infeasible, locally optimal and not locally optimal alpha
    rng = np.random.default_rng(seed)
    n, T, d = 4, 3, 2
    prob = AttentionProblem(
        rng.uniform(-1, 1, (n, T, d)),
        rng.choice([-1.0, 1.0], n),
        rng.uniform(-1, 1, (n, d)),
        rng.uniform(-1, 1, d),
    )
    alpha = (
        [int(a) for a in rng.integers(0, T, n)]
        if seed % 3
        else list(prob.optimal_indices().indices)
    )
    feasible, support = exact_p2(prob, alpha)
    gamma = prob.token_scores()
    ctx = CheckContext(prob)
    rep_f = svm_feasible(alpha).check(ctx)
    assert rep_f.verdict is (H if feasible else F)
    want_local = feasible and all(gamma[i, alpha[i]] > gamma[i, t] for i, t in support)
    rep_l = tokens_locally_optimal(alpha, 2).check(ctx)
    assert rep_l.verdict is (H if want_local else F), (alpha, support, rep_l.message)
    want_global = all(
        gamma[i, alpha[i]] > gamma[i, t] for i in range(n) for t in range(T) if t != alpha[i]
    )
    assert tokens_globally_optimal(alpha).check(ctx).verdict is (H if want_global else F)


# ---------------------------------------------------------------- adversarial review (round 2)
def test_certificate_for_another_p_or_alpha_is_never_used(monkeypatch):
    """Finding: the independent check ran without the expected p / svm / alpha, so a valid
    certificate about another p (a substituted or mis-keyed solve) decided local optimality."""
    import certify.svm
    from certify.synth import synthetic_problem

    real = certify.svm.certify_svm
    monkeypatch.setattr(certify.svm, "certify_svm", lambda pr, p, **kw: real(pr, "3", **kw))
    prob = synthetic_problem(n=3, T=4, d=3, seed=2)
    rep = tokens_locally_optimal("opt", p="1.5").check(CheckContext(prob))
    assert rep.verdict is U and "independent checker" in rep.message
    assert tokens_locally_optimal("opt", p="3").check(CheckContext(prob)).verdict is H
