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


_floats = st.floats(allow_nan=False, allow_infinity=False, width=64)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 4), st.integers(1, 6), st.data())
@example(1, 1, None)
def test_digits_split_from_floats_equal_the_dyadic_integers(n, m, data) -> None:
    """`IntMatrix.of_float` has dyadic's exponent and the same digits, without forming Z; its exact
    products equal Python's on the dyadic integers (data spanning subnormals to 1e308 included)."""
    from certify.exact import dyadic

    if data is None:
        X = np.array([[5e-324, -1.7976931348623157e308, 0.0, -(2.0**-1074) * 3]])
        n, m = X.shape
    else:
        X = np.array(data.draw(st.lists(_floats, min_size=n * m, max_size=n * m))).reshape(n, m)
    M, e = IntMatrix.of_float(X)
    d = dyadic(X)
    assert e == d.exp and (M.Z == d.ints).all()
    assert all((a == b).all() for a, b in zip(M.digits, IntMatrix(d.ints).digits))
    Z = d.ints.astype(object)
    v = data.draw(st.lists(_big, min_size=m, max_size=m)) if data else [(1 << 150) - 3] * m
    assert M.matvec(v) == _exact(Z, v)
    assert M.rmatvec([-(1 << 90)] * n) == _exact(Z.T, [-(1 << 90)] * n)
    assert [[int(x) for x in row] for row in M.gram()] == [_exact(Z, row) for row in Z]


def test_the_int64_products_without_blas_agree(monkeypatch) -> None:
    rng = np.random.default_rng(1)
    X = rng.standard_normal((5, 30)) * 2.0 ** rng.integers(-40, 40, size=(5, 30))
    v = [int(k) << 200 for k in rng.integers(-(1 << 60), 1 << 60, size=30)]
    M, _ = IntMatrix.of_float(X)
    want = M.matvec(v)
    monkeypatch.setenv("MDCERT_EXACT_PRODUCTS", "flint")
    M2, _ = IntMatrix.of_float(X)
    assert M2.digits[0].dtype == np.int64 and M2.matvec(v) == want
    assert want == _exact(M.Z.astype(object), v)


def test_block_sums_and_the_python_int_fallback_are_exact(monkeypatch) -> None:
    """Tiny blocks and summand limits exercise the code paths of inner sizes beyond 2^21 terms."""
    import certify.regression.intmat as intmat

    rng = np.random.default_rng(2)
    Z = np.array([[int(k) << 70 for k in row] for row in rng.integers(-999, 999, (3, 11))], object)
    v = [int(k) << 100 for k in rng.integers(-(1 << 40), 1 << 40, size=11)]
    for block, summands in ((4, 1 << 9), (8, 3), (2, 11)):
        monkeypatch.setattr(intmat, "_BLOCK", block)
        monkeypatch.setattr(intmat, "_MAX_SUMMANDS", summands)
        M = IntMatrix(Z)
        assert M.matvec(v) == _exact(Z, v)
        assert [[int(x) for x in row] for row in M.gram()] == [_exact(Z, row) for row in Z]
