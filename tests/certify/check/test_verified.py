"""certify.check.verified (trusted): the correction bound is sound, forged near-Gordan certificates fail."""

from __future__ import annotations

from fractions import Fraction

import flint
import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from certify import CertStatus, check_certificate, synthetic_problem
from certify.svm import certify_svm
from certify.synth import planted_problem
from certify.check.verified import _split_residual_row_sums, kron_solution_bound, solution_bound


@settings(max_examples=40, deadline=None)
@given(m=st.integers(1, 10), bits=st.integers(1, 120), seed=st.integers(0, 2**32 - 1))
@example(m=3, bits=2, seed=0)  # small integers: nothing shifted out
@example(m=10, bits=120, seed=7)  # 120-bit entries: the shifted part F enters the bound
def test_solution_bound_is_a_bound(m, bits, seed):
    rng = np.random.default_rng(seed)
    M = np.array(
        [
            [int(x) << max(0, bits - 40) for x in rng.integers(-(2**40), 2**40, size=m)]
            for _ in range(m)
        ],
        dtype=object,
    )
    R = [int(x) for x in rng.integers(-(2**50), 2**50, size=m)]
    beta = solution_bound(M, R)
    Mq = flint.fmpz_mat([[int(v) for v in row] for row in M])
    if Mq.rank() < m:
        assert beta is None
        return
    x = Mq.solve(flint.fmpz_mat(m, 1, R))
    top = max(abs(Fraction(int(v.p), int(v.q))) for v in x.entries())
    inv = flint.fmpq_mat(Mq).inv()
    inv_norm = max(
        sum(abs(Fraction(int(inv[i, j].p), int(inv[i, j].q))) for j in range(m)) for i in range(m)
    )
    if beta is not None:  # None is allowed (ill-conditioned), a wrong bound never
        assert (
            top <= beta <= 2 * inv_norm * max(abs(r) for r in R)
        )  # sound, and as tight as ||M^-1|| ||R||


@settings(max_examples=40, deadline=None)
@given(
    c=st.integers(0, 8),
    s=st.integers(0, 110),
    seed=st.integers(0, 2**32 - 1),
    extreme=st.booleans(),
    y_digits=st.sampled_from([1, 2]),
)
@example(c=2, s=3, seed=0, extreme=False, y_digits=1)  # s < ell: 2^s I goes into the low digit
@example(
    c=6, s=40, seed=0, extreme=True, y_digits=1
)  # m = 64, every entry at its largest: sums reach 2^53
@example(
    c=6, s=70, seed=0, extreme=True, y_digits=2
)  # two digits of Y at their largest, 2^s in the top digit
@example(c=7, s=30, seed=5, extreme=False, y_digits=2)  # 2^s in the middle digit
@example(
    c=2, s=110, seed=0, extreme=True, y_digits=1
)  # s beyond the top digit by more than 60 bits: refused
def test_split_dgemm_residual_is_exact(c, s, seed, extreme, y_digits):
    """The float64 dgemm calls on digits give the exact ``max_i sum_j |(Y P - 2^s I)_ij|`` (module
    docstring, "Speed"), at the largest entries the bounds allow."""
    rng = np.random.default_rng(seed)
    m = (1 << c) - (seed % 3 if c > 2 else 0)  # powers of two (no slack) and sizes just below
    room = 53 - (m - 1).bit_length()
    ell = room // 2
    r = room - ell if y_digits == 1 else room
    if extreme:  # one sign per matrix: nothing cancels
        Y = np.full((m, m), rng.choice([-1, 1]) << r, dtype=np.int64)
        P = np.full((m, m), rng.choice([-1, 1]) << (2 * ell), dtype=np.int64)
    else:
        Y = rng.integers(-(1 << r), (1 << r) + 1, size=(m, m), dtype=np.int64)
        P = rng.integers(-(1 << 2 * ell), (1 << 2 * ell) + 1, size=(m, m), dtype=np.int64)
    got = _split_residual_row_sums(Y, P, s, ell, y_digits)
    if s - min(s // ell, y_digits) * ell > 60:
        assert got is None
        return
    E = flint.fmpz_mat(Y.tolist()) * flint.fmpz_mat(P.tolist()) - (1 << s) * flint.fmpz_mat(
        m, m, [1 if i == j else 0 for i in range(m) for j in range(m)]
    )
    assert got == max(sum(abs(int(E[i, j])) for j in range(m)) for i in range(m))


def test_split_dgemm_refuses_entries_beyond_its_bounds():
    m, ell = 64, 23  # room = 47 bits: one digit of Y up to 2^24, P up to 2^46 (top digit 2^23)
    Y = np.full((m, m), 1 << 24, dtype=np.int64)
    P = np.full((m, m), 1 << 46, dtype=np.int64)
    assert _split_residual_row_sums(Y, P, 10, ell) == m * m * (1 << 70) - (
        1 << 10
    )  # partial sums reach 2^53
    for Yb, Pb in (
        (Y + 1, P),
        (Y, P + (1 << 23)),
    ):  # one unit too large in a digit: a sum could round
        assert _split_residual_row_sums(Yb, Pb, 10, ell) is None


def test_both_product_paths_give_sound_bounds(monkeypatch):
    """BLAS (default) and ``MDCERT_EXACT_PRODUCTS=flint`` both bound the true solution; the default
    does not touch the python-flint product on a well-conditioned system, ``flint`` always does."""
    import certify.check.verified as V

    rng = np.random.default_rng(3)
    M = np.array(
        [[int(x) << 70 for x in row] for row in rng.integers(-(2**40), 2**40, size=(24, 24))],
        dtype=object,
    )
    R = [int(x) for x in rng.integers(-(2**50), 2**50, size=24)]
    x = flint.fmpq_mat(flint.fmpz_mat([[int(v) for v in row] for row in M])).solve(
        flint.fmpq_mat(24, 1, R)
    )
    top = max(abs(Fraction(int(v.p), int(v.q))) for v in x.entries())
    calls = []
    real = V._residual_row_sums
    monkeypatch.setattr(V, "_residual_row_sums", lambda *a: calls.append(1) or real(*a))
    fast = solution_bound(M, R)
    assert fast is not None and top <= fast and not calls
    monkeypatch.setenv("MDCERT_EXACT_PRODUCTS", "flint")
    slow = solution_bound(M, R)
    assert slow is not None and top <= slow and calls


def test_singular_and_malformed_systems_are_not_verified():
    assert solution_bound(np.array([[1, 2], [2, 4]], dtype=object), [1, 1]) is None
    assert solution_bound(np.zeros((0, 0), dtype=object), []) is None
    assert solution_bound(np.array([[1, 0]], dtype=object), [1]) is None


def _kron_matrix(L, Rf):
    """M = Z^T with column k the row-major vec(l_k r_k^T) (or l_k), as an object array."""
    cols = L if Rf is None else (L[:, :, None] * Rf[:, None, :]).reshape(L.shape[0], -1)
    return np.ascontiguousarray(cols.T)


@settings(max_examples=30, deadline=None)
@given(
    d=st.integers(1, 4), bits=st.integers(1, 90), seed=st.integers(0, 2**32 - 1), kron=st.booleans()
)
@example(d=3, bits=3, seed=0, kron=True)  # small integers: nothing shifted out
@example(d=4, bits=90, seed=5, kron=True)  # 180-bit products: the shifted part F enters the bound
@example(d=4, bits=80, seed=1, kron=False)  # decoder rows
def test_kron_solution_bound_equals_the_dense_bound_and_is_sound(d, bits, seed, kron):
    rng = np.random.default_rng(seed)
    m = d * d if kron else d

    def ints(shape):
        return np.array(
            [
                int(x) << max(0, bits - 30)
                for x in rng.integers(-(2**30), 2**30, size=shape).ravel()
            ],
            dtype=object,
        ).reshape(shape)

    L, Rf = ints((m, d)), (ints((m, d)) if kron else None)
    R = [int(x) for x in rng.integers(-(2**50), 2**50, size=m)]
    M = _kron_matrix(L, Rf)
    beta = kron_solution_bound(L, Rf, R)
    Mq = flint.fmpz_mat([[int(v) for v in row] for row in M])
    if Mq.rank() < m:
        assert beta is None
        return
    if beta is not None:  # None is allowed (ill-conditioned), a wrong bound never
        x = Mq.solve(flint.fmpz_mat(m, 1, R))
        assert max(abs(Fraction(int(v.p), int(v.q))) for v in x.entries()) <= beta
    if (
        not kron
    ):  # decoder rows: the same matrix and the same shift as the dense path, the same bound
        assert beta == solution_bound(M, R)


def test_kron_solution_bound_refuses_malformed_factors():
    L = np.array([[1, 2], [3, 4], [5, 6], [7, 9]], dtype=object)
    assert kron_solution_bound(L[:3], L[:3], [1, 1, 1]) is None  # 3 rows of a 2 x 2 system
    assert kron_solution_bound(L, L[:, :1], [1, 1, 1, 1]) is None  # factor shapes differ
    assert kron_solution_bound(L, L, [1, 1, 1]) is None  # right-hand side of the wrong length
    assert kron_solution_bound(np.zeros((0, 0), dtype=object), None, []) is None
    assert (
        kron_solution_bound(np.array([[1, 1], [2, 2]], dtype=object), None, [1, 1]) is None
    )  # singular


def test_kron_solution_bound_never_overflows_int64():
    # entries far beyond int64 and far apart in size: shifted exactly, bound still sound
    L = np.array([[1 << 300, 1], [1, (1 << 300) + 1]], dtype=object)
    R = [1 << 200, 1]
    beta = kron_solution_bound(L, None, R)
    x = flint.fmpq_mat(flint.fmpz_mat([[int(v) for v in row] for row in L.T])).solve(
        flint.fmpq_mat(2, 1, R)
    )
    assert beta is not None and max(abs(Fraction(int(v.p), int(v.q))) for v in x.entries()) <= beta


@pytest.fixture(scope="module")
def infeasible():
    prob = synthetic_problem(n=60, T=12, d=5, seed=1)  # N = 660 rows x 25 variables
    c = certify_svm(prob, "2", digits=20, path="working-set")
    return prob, c


def test_structured_infeasible_certificate_uses_a_verified_basis(infeasible, monkeypatch):
    prob, c = infeasible
    assert (
        c.status is CertStatus.INFEASIBLE
        and c.gordan_basis is not None
        and len(c.gordan_basis) == 25
    )
    assert check_certificate(prob, c).ok
    monkeypatch.setenv(
        "MDCERT_EXACT_PRODUCTS", "flint"
    )  # python-flint products only: the same verdict
    assert check_certificate(prob, c).ok
    monkeypatch.delenv("MDCERT_EXACT_PRODUCTS")
    d = c.to_json()
    assert check_certificate(prob, d).ok and d["gordan_basis"] == list(c.gordan_basis)


def _forged(c, **changes):
    d = c.to_json()
    d.update(changes)
    return d


def test_forged_near_gordan_certificates_fail(infeasible):
    prob, c = infeasible
    g = c.gordan.to_json()
    B = list(c.gordan_basis)
    small = dict(
        g, ints=[k if i != B[0] else 0 for i, k in enumerate(c.gordan.ints)]
    )  # no room for a correction
    for d in (
        _forged(c, gordan_basis=B[:-1]),
        _forged(c, gordan_basis=B[:-1] + [B[0]]),
        _forged(c, gordan_basis=B[:-1] + [len(c.gordan) + 5]),
        _forged(c, gordan=small),
        _forged(c, gordan=dict(g, ints=[1] * len(c.gordan))),
    ):
        res = check_certificate(prob, d)
        assert not res.ok and res.first_failure.startswith("gordan"), res.first_failure
    without = c.to_json()
    del without["gordan_basis"]  # as an exact Gordan vector it is not one
    assert not check_certificate(prob, without).ok


def test_feasible_problem_never_gets_a_near_gordan_certificate():
    prob = planted_problem(n=40, T=8, d=4, seed=2)  # feasible by construction, N = 280 > m = 16
    ok = certify_svm(prob, "2", digits=20)
    assert ok.status is CertStatus.OPTIMAL
    rng = np.random.default_rng(0)
    for trial in range(3):  # random nonnegative vectors with random bases: never accepted
        ints = [int(k) for k in rng.integers(1, 2**40, size=280)]
        d = _forged(
            ok,
            status="infeasible",
            gordan={"ints": ints, "exp": -40, "den": 1},
            gordan_basis=sorted(rng.choice(280, size=16, replace=False).tolist()),
        )
        for k in (
            "opt_lower",
            "opt_upper",
            "distance_upper",
            "direction_error_upper",
            "bregman_upper",
            "support",
            "w",
            "lam",
        ):
            d[k] = None
        assert not check_certificate(prob, d).ok
