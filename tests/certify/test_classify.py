"""certify.classify: the integer support tests are sound (checked against exact rationals)."""

from __future__ import annotations

from fractions import Fraction

import flint
import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from certify import synthetic_problem
from certify.classify import inactive_mask, row_norm_bounds
from certify.check.verified import inverse_diagonal_upper
from certify.ops import ExactOps


def _exact_inverse_diagonal(G: list[list[int]]) -> list[Fraction]:
    n = len(G)
    inv = flint.fmpq_mat(flint.fmpz_mat(G)).inv()
    return [Fraction(int(inv[i, i].p), int(inv[i, i].q)) for i in range(n)]


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(1, 12),
    bits=st.integers(1, 200),
    seed=st.integers(0, 2**32 - 1),
    flint_only=st.booleans(),
)
@example(n=2, bits=3, seed=0, flint_only=False)  # small integers: nothing is shifted out (k = 0)
@example(n=12, bits=200, seed=1, flint_only=False)  # 400-bit Gram entries
@example(n=12, bits=200, seed=1, flint_only=True)
def test_inverse_diagonal_bounds_are_valid_and_tight(n, bits, seed, flint_only):
    """Sound always; within 10% on the split dgemm path (theta < 1/64), within 1e-6 on the
    python-flint path (52-bit inverse, ``MDCERT_EXACT_PRODUCTS=flint``)."""
    rng = np.random.default_rng(seed)
    B = [
        [int(x) << max(0, bits - 30) for x in rng.integers(-(2**30), 2**30, size=n + 2)]
        for _ in range(n)
    ]
    G = [[sum(a * b for a, b in zip(B[i], B[j])) for j in range(n)] for i in range(n)]
    with pytest.MonkeyPatch.context() as mp:
        if flint_only:
            mp.setenv("MDCERT_EXACT_PRODUCTS", "flint")
        up = inverse_diagonal_upper(flint.fmpz_mat(G))
    exact = _exact_inverse_diagonal(G)
    assert up is not None
    for u, e in zip(up, exact):
        assert e <= u <= e * (1 + (Fraction(1, 10**6) if flint_only else Fraction(1, 10)))


def test_kron_gram_factors_give_the_bounds_of_the_formed_gram():
    """``inverse_diagonal_upper(G, H)`` for the Gram matrix ``G o H`` of Kronecker rows: sound and as
    tight as for the formed product (the shift may differ by the one bit the factors' sizes add)."""
    rng = np.random.default_rng(2)
    L, Z = (
        np.array(
            [[int(x) << 40 for x in row] for row in rng.integers(-(2**20), 2**20, size=(9, 3))],
            dtype=object,
        )
        for _ in range(2)
    )
    G, H = L @ L.T, Z @ Z.T
    rows = np.array([np.outer(a, b).ravel() for a, b in zip(L, Z)], dtype=object)
    M = rows @ rows.T
    assert (M == G * H).all()
    up, formed = inverse_diagonal_upper(G, H), inverse_diagonal_upper(M)
    assert up is not None and formed is not None
    for u, f, e in zip(up, formed, _exact_inverse_diagonal(M.tolist())):
        assert e <= u <= e * Fraction(11, 10) and e <= f <= e * Fraction(11, 10)


def test_kron_gram_from_factors_gives_the_bounds_of_the_expanded_factors():
    """A `KronGram` (rows of ``(L L^T) o (Z_g Z_g^T)`` formed a block at a time, examples sharing z)
    gives the same bounds as ``inverse_diagonal_upper(G, H)`` with H expanded, across blocks."""
    import certify.check.verified as ver

    rng = np.random.default_rng(5)
    n, d, k = 40, 7, 9
    L = np.array([[int(x) << 50 for x in r] for r in rng.integers(-99, 99, (n, d))], dtype=object)
    Zg = np.array([[int(x) << 30 for x in r] for r in rng.integers(-99, 99, (k, d))], dtype=object)
    g = rng.integers(0, k, n)
    G, H = L @ L.T, (Zg @ Zg.T)[np.ix_(g, g)]
    from certify.check.kron import KronGram

    kg = KronGram(L, Zg, g)
    assert (kg.rows(3, 11) == (G * H)[3:11]).all()
    old = ver._BLOCK
    try:
        ver._BLOCK = 16
        assert inverse_diagonal_upper(kg) == inverse_diagonal_upper(G, H) is not None
    finally:
        ver._BLOCK = old


def test_singular_gram_is_not_verified():
    G = [[1, 2], [2, 4]]
    assert inverse_diagonal_upper(flint.fmpz_mat(G)) is None
    assert inverse_diagonal_upper(flint.fmpz_mat(0, 0, [])) == []


def test_row_norm_bounds_and_inactive_mask_are_sound():
    cs = synthetic_problem(n=3, T=5, d=4, seed=2).attention_constraints("opt")
    ops = ExactOps(cs)
    B, e = row_norm_bounds(ops)
    Z, ez = cs.exact_rows()
    for r in range(cs.N):
        exact2 = sum(int(k) ** 2 for k in Z[r]) * Fraction(2) ** (2 * ez)
        assert exact2 <= (B[r] * Fraction(2) ** e) ** 2 <= 4 * exact2  # within a factor 2
    # a point w with A w = Aw 2**e_aw: rows with slack above ||a||_2 dist are proven, others not
    rng = np.random.default_rng(0)
    w = [int(k) for k in rng.integers(-(2**40), 2**40, size=cs.m)]
    Aw = ops.matvec(w)
    e_aw = -10 - max(abs(k).bit_length() for k in Aw)  # scale so that 1 = 2**-e_aw is representable
    lam = [0] * cs.N
    lam[0] = 1
    dist = Fraction(1, 10**6)
    mask = inactive_mask(ops, Aw, e_aw, lam, dist, Fraction(1))
    assert not mask[0]  # a row with a multiplier is never inactive
    for r in np.flatnonzero(mask):
        slack = Aw[r] * Fraction(2) ** e_aw - 1
        assert slack > B[r] * Fraction(2) ** e * dist
