"""certify.fmpzblocks: split integer blocks give the exact products of the unsplit rows."""

from __future__ import annotations

import flint
import numpy as np
import pytest
from hypothesis import example, given, settings, strategies as st

from certify.fmpzblocks import block_times, split_block, times_block

WIDE = st.integers(min_value=-(1 << 200), max_value=1 << 200)


def _exact(rows: list[list[int]], x: list[int]) -> list[int]:
    return [sum(a * b for a, b in zip(r, x)) for r in rows]


def _exact_t(rows: list[list[int]], v: list[int]) -> list[int]:
    return [sum(v[i] * rows[i][j] for i in range(len(rows))) for j in range(len(rows[0]))]


@settings(deadline=None, max_examples=80)
@given(
    shape=st.tuples(st.integers(1, 5), st.integers(1, 4)),
    bits=st.sampled_from([8, 62, 63, 73, 130, 200]),
    data=st.data(),
)
@example(shape=(1, 1), bits=73, data=None)
def test_products_equal_the_exact_ones(shape, bits, data):
    T, d = shape
    bound = st.integers(min_value=-(1 << bits), max_value=1 << bits)
    if data is None:  # pinned: the edges of the inline range and of the split
        rows = [[-(1 << 72) - 1]]
        x, v = [(1 << 90) + 7], [-3]
    else:
        rows = [[data.draw(bound) for _ in range(d)] for _ in range(T)]
        x = [data.draw(WIDE) for _ in range(d)]
        v = [data.draw(WIDE) for _ in range(T)]
    blk = split_block(np.array(rows, dtype=object))
    assert block_times(blk, flint.fmpz_mat(len(x), 1, x)) == _exact(rows, x)
    assert [int(e) for e in times_block(v, blk)] == _exact_t(rows, v)


@pytest.mark.parametrize(
    ("value", "split"),
    [
        (0, False),
        ((1 << 62) - 1, False),
        (1 - (1 << 62), False),
        (-(1 << 62), True),
        (1 << 62, True),
        (-(1 << 72), True),
    ],
)
def test_split_only_beyond_62_bits_and_halves_stay_inline(value, split):
    S, k = split_block(np.array([[value, 1], [-1, 0]], dtype=object))
    assert (k > 0) is split
    entries = [int(e) for e in S.entries()]
    assert len(entries) == (8 if split else 4)
    if split:
        assert max(abs(e) for e in entries) < 1 << 62  # both halves fit FLINT's inline fmpz


def test_int64_rows_go_through_unsplit():
    rows = np.array([[2**62, -(2**63)], [5, -7]], dtype=np.int64)
    S, k = split_block(rows)
    assert k == 0 and S.nrows() == 2
    assert block_times((S, k), flint.fmpz_mat(2, 1, [3, 1])) == _exact(rows.tolist(), [3, 1])
