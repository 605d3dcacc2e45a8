"""`certify.check.kron` (trusted): every limb and digit routine against Python integers.

The checker's tight-row Gram matrix and its row products are formed in int64 limbs from float64
digit products; each routine here must give exactly what Python integers give, on random data with
signs, on the extremes its preconditions allow, and must refuse (ValueError) outside them."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from certify.check.kron import (
    KronGram,
    column_max_abs,
    digit_bits,
    float_digits,
    int_digits,
    limb_gram,
    row_dots,
    row_sums_abs,
    shifted_product,
    split_digits,
    to_ints,
)


def _value(limbs, B: int):
    """Python integers of carried limbs (a list of arrays, lowest first)."""
    total = limbs[-1].astype(object)
    for t in range(len(limbs) - 2, -1, -1):
        total = (total << B) + limbs[t].astype(object)
    return total


def _ints(rng, shape, bits: int) -> np.ndarray:
    """Random signed Python integers below 2^bits, with the extremes mixed in."""
    flat = [int(rng.integers(0, 1 << 62)) for _ in range(int(np.prod(shape)))]
    flat = [
        (v << max(0, bits - 62)) % (1 << bits) * (-1 if rng.random() < 0.5 else 1) for v in flat
    ]
    if flat:
        flat[0] = (1 << bits) - 1
        flat[-1] = -((1 << bits) - 1)
    return np.array(flat, dtype=object).reshape(shape)


@pytest.mark.parametrize("d", [1, 2, 3, 64, 65, 1000])
def test_digit_bits_keep_four_digit_pair_dot_products_exact(d) -> None:
    B = digit_bits(d)
    assert 4 * d * (1 << (2 * B)) <= 1 << 53 and B >= 1


@given(st.integers(0, 2**32 - 1), st.sampled_from([1, 5, 60, 150, 300]))
@example(0, 300)
def test_int_digits_rebuild_the_integers(seed, bits) -> None:
    rng = np.random.default_rng(seed)
    F = _ints(rng, (3, 4), bits)
    B = digit_bits(4)
    D = int_digits(F, B)
    assert all(np.all((x >= 0) & (x < 2**B)) for x in D[:-1]) and np.abs(D[-1]).max() <= 2**B
    assert np.array_equal(_value([x.astype(np.int64) for x in D], B), F)


@given(
    st.integers(0, 2**32 - 1), st.sampled_from([1, 20, 62]), st.integers(1, 25), st.integers(1, 4)
)
@example(0, 62, 25, 1)
@example(1, 62, 1, 4)
def test_split_digits_rebuild_int64_and_python_integers_exactly(seed, bits, B, n) -> None:
    """The shared digit split of both checkers (`int_digits` here, the inverse check of
    `certify.check.verified`): low digits in ``[0, 2^B)``, a signed top digit, the sum exact."""
    rng = np.random.default_rng(seed)
    F = _ints(rng, (3, 5), bits)
    for A in (F, F.astype(np.int64)) if bits <= 62 else (F,):
        D = split_digits(A, B, n)
        assert len(D) == n and all(np.all((x >= 0) & (x < 2**B)) for x in D[:-1])
        assert np.array_equal(_value([np.asarray(x, dtype=object) for x in D], B), F)


@settings(max_examples=40)
@given(st.integers(0, 2**32 - 1), st.sampled_from([3, 40, 120, 300]), st.integers(1, 70))
@example(0, 300, 64)
def test_limb_gram_is_the_exact_product(seed, bits, d) -> None:
    rng = np.random.default_rng(seed)
    A, Bm = _ints(rng, (5, d), bits), _ints(rng, (4, d), bits)
    B = digit_bits(d)
    limbs = limb_gram(int_digits(A, B), int_digits(Bm, B), B)
    assert np.array_equal(_value(limbs, B), A.dot(Bm.T))


@settings(max_examples=40)
@given(st.integers(0, 2**32 - 1), st.sampled_from([3, 40, 120, 250]), st.integers(0, 1100))
@example(0, 250, 0)
@example(1, 3, 600)
@example(2, 250, 1000)  # entries of ~1,000 bits, a small floor: the Python-integer route
def test_shifted_rows_are_the_floor_of_the_exact_gram(seed, bits, k) -> None:
    rng = np.random.default_rng(seed)
    n, d = 7, 5
    L, Z = _ints(rng, (n, d), bits), _ints(rng, (3, d), bits)
    g = rng.integers(0, 3, size=n)
    G = KronGram(L, Z, g)
    M = G.rows(0, n)
    for i0, i1, j0 in ((0, n, 0), (2, 5, 2), (6, 7, 3)):
        try:
            got = G.shifted_rows(i0, i1, k, j0=j0)
        except ValueError:  # only when an entry of floor(M / 2^k) does not fit in int64
            assert max(abs(int(v)) >> k for v in M[i0:i1, j0:].ravel()) >= 1 << 60
            continue
        want = np.array([[int(v) >> k for v in row] for row in M[i0:i1, j0:]], dtype=object)
        assert np.array_equal(got.astype(object), want)


def test_shifted_product_refuses_a_result_beyond_int64() -> None:
    B = 28
    g = [np.array([0], dtype=np.int64), np.array([1 << B], dtype=np.int64)]  # 2^56
    with pytest.raises(ValueError, match="int64"):
        shifted_product(g, g, B, 0)  # 2^112 does not fit
    assert shifted_product(g, g, B, 60).tolist() == [1 << 52]


@settings(max_examples=60)
@given(st.integers(0, 2**32 - 1), st.sampled_from([0, 1, 30, 52, 200, 900]))
@example(0, 900)
@example(1, 0)
def test_float_digits_are_the_exact_difference(seed, top) -> None:
    rng = np.random.default_rng(seed)
    # float64 integers of up to 53 significant bits placed up to 2^top, and differences of them
    a = np.ldexp(np.floor(rng.uniform(-(2.0**52), 2.0**52, size=(4, 6))), top)
    b = np.ldexp(np.floor(rng.uniform(-(2.0**52), 2.0**52, size=(4, 6))), max(0, top - 7))
    a[0, 0], b[0, 0] = 2.0 ** (top + 52) - 2.0**top, -(2.0 ** (top + 45))  # extremes, signs
    B = digit_bits(6)
    D = float_digits(a, b, B)
    assert np.all(D == np.floor(D)) and np.all(D[..., :-1] >= 0) and np.all(D[..., :-1] < 2**B)
    rebuilt = _value([D[..., t].astype(np.int64) for t in range(D.shape[-1])], B)
    want = np.vectorize(lambda x, y: int(x) - int(y), otypes=[object])(a, b)
    assert np.array_equal(rebuilt, want)


def test_float_digits_refuse_entries_of_huge_range() -> None:
    with pytest.raises(ValueError, match="too large"):
        float_digits(np.array([2.0**1000]), np.array([0.0]), 20)
    with pytest.raises(ValueError, match="too large"):
        float_digits(np.array([np.inf]), np.array([0.0]), 20)


@settings(max_examples=40)
@given(st.integers(0, 2**32 - 1), st.sampled_from([2, 50, 300]), st.integers(1, 64))
@example(0, 300, 64)
def test_row_dots_and_to_ints_are_the_exact_row_products(seed, bits, d) -> None:
    rng = np.random.default_rng(seed)
    L, V = _ints(rng, (9, d), bits), _ints(rng, (9, d), bits)
    B = digit_bits(d)
    Ld, Vd = (np.stack(int_digits(F, B), axis=-1) for F in (L, V))
    got = to_ints(row_dots(Ld, Vd, B), B)
    assert got == [sum(int(x) * int(y) for x, y in zip(L[r], V[r])) for r in range(9)]


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), rows=st.integers(0, 1100), cols=st.integers(1, 5))
@example(seed=0, rows=1025, cols=3)  # more than two blocks of rows, the last one short
def test_row_sums_and_column_maxima_are_exact(seed, rows, cols) -> None:
    """Row sums of |Y| and column maxima of |Y|, a block of rows at a time, equal the Python
    integer results, the extremes +-2^62 included (sums beyond int64)."""
    rng = np.random.default_rng(seed)
    Y = rng.integers(-(1 << 62), (1 << 62) + 1, size=(rows, cols), dtype=np.int64)
    if rows:
        Y[0, :] = 1 << 62
        Y[-1, 0] = -(1 << 62)
    obj = Y.astype(object)
    assert row_sums_abs(Y) == ([int(v) for v in np.abs(obj).sum(axis=1)] if rows else [])
    want = np.abs(obj).max(axis=0) if rows else np.zeros(cols, dtype=object)
    assert column_max_abs(Y).tolist() == [int(v) for v in want]


@pytest.mark.parametrize("bad", [(1 << 62) + 1, -(1 << 63)])
def test_row_sums_refuse_entries_beyond_2_62(bad) -> None:
    Y = np.zeros((3, 2), dtype=np.int64)
    Y[1, 1] = bad
    with pytest.raises(ValueError, match="2\\^62"):
        row_sums_abs(Y)
