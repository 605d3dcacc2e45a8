"""certify.regression.intmat: digit-split integer products equal Python's exact integer products."""

from __future__ import annotations

import numpy as np
from hypothesis import example, given, settings, strategies as st

from certify.regression.intmat import IntMatrix

_big = st.integers(min_value=-(1 << 140), max_value=1 << 140)


def _exact(Z, v):
    return [sum(int(a) * int(b) for a, b in zip(row, v)) for row in Z]


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 5), st.integers(1, 7), st.data())
@example(1, 1, None)
def test_products_are_exact(n, m, data) -> None:
    if data is None:  # the extremes: the largest int64-representable data digits and a huge vector
        Z = np.array([[(1 << 53) - 1]], dtype=object)
        v, w = [-(1 << 200) + 1], [(1 << 199) + 12345]
    else:
        Z = np.array(
            data.draw(st.lists(st.lists(_big, min_size=m, max_size=m), min_size=n, max_size=n)),
            dtype=object,
        )
        v = data.draw(st.lists(_big, min_size=m, max_size=m))
        w = data.draw(st.lists(_big, min_size=n, max_size=n))
    M = IntMatrix(Z)
    assert M.matvec(v) == _exact(Z, v)
    assert M.rmatvec(w) == _exact(Z.T, w)
    G = M.gram()
    assert [[int(x) for x in row] for row in G] == [_exact(Z, row) for row in Z]


def test_int64_data_and_the_flint_path_agree(monkeypatch) -> None:
    rng = np.random.default_rng(0)
    Z = rng.integers(-(1 << 52), 1 << 52, size=(6, 40), dtype=np.int64)
    G = IntMatrix(Z).gram()
    monkeypatch.setenv("MDCERT_EXACT_PRODUCTS", "flint")
    assert (IntMatrix(Z).gram() == G).all()
    assert [[int(x) for x in row] for row in G] == [_exact(Z, row) for row in Z]


def test_shape_mismatch_is_refused() -> None:
    import pytest

    M = IntMatrix(np.ones((2, 3), dtype=np.int64))
    with pytest.raises(ValueError, match="shapes do not match"):
        M.matvec([1, 2])
    with pytest.raises(ValueError, match="shapes do not match"):
        M.rmatvec([1, 2, 3])
