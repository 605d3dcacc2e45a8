"""certify.exactdot: exact float64 products in int64 limbs equal the Python-integer products."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from certify.exact import dyadic
from certify.exactdot import exact_dot

FLOATS = st.floats(allow_nan=False, allow_infinity=False, width=64)


def _reference(A: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, int]:
    dA, db = dyadic(A), dyadic(b)
    return np.einsum("...d,d->...", dA.as_object(), db.as_object()), dA.exp + db.exp


@st.composite
def _pairs(draw):
    d = draw(st.integers(1, 7))
    lead = draw(st.tuples(st.integers(1, 4), st.integers(1, 3)))
    A = draw(hnp.arrays(np.float64, lead + (d,), elements=FLOATS))
    b = draw(hnp.arrays(np.float64, (d,), elements=FLOATS))
    return A, b, draw(st.integers(1, 5000))


@given(_pairs())
@example(
    (
        np.array([[[5e-324, -1.7976931348623157e308]]]),
        np.array([1.7976931348623157e308, -5e-324]),
        1,
    )
)
@example((np.zeros((2, 2, 3)), np.array([1.0, -2.0, 3.5]), 7))
@example((np.array([[[1.0, 2.0**-1074]]]), np.zeros(2), 100))
@example((np.array([[[-(2.0**53 - 1), 2.0**52 + 1]]]), np.array([2.0**53 - 1, -3.0]), 1))
def test_exact_dot_equals_the_python_integer_product(case) -> None:
    A, b, block = case
    S, E = exact_dot(A, b, block_bytes=block)
    ref, exp = _reference(A, b)
    assert (
        E == exp
        and S.shape == ref.shape
        and all(int(s) == int(r) for s, r in zip(S.ravel(), ref.ravel()))
    )


def test_one_entry_against_fractions_and_wide_exponents() -> None:
    rng = np.random.default_rng(3)
    A = rng.standard_normal((3, 4, 40)) * np.exp2(rng.integers(-1070, 1000, (3, 4, 40)))
    b = rng.standard_normal(40) * np.exp2(rng.integers(-500, 500, 40))
    S, E = exact_dot(A, b)
    for idx in [(0, 0), (2, 3), (1, 2)]:
        exact = sum(Fraction(float(a)) * Fraction(float(c)) for a, c in zip(A[idx], b))
        assert Fraction(int(S[idx])) * Fraction(2) ** E == exact


@pytest.mark.parametrize("d", [255, 256, 257, 700])
def test_pieces_of_the_inner_axis_join_exactly(d) -> None:
    """d above the 256-term piece: the pieces' sums meet in int64 exactly."""
    rng = np.random.default_rng(d)
    A = rng.standard_normal((5, 2, d)) * 2.0**60
    b = rng.standard_normal(d)
    S, E = exact_dot(A, b, block_bytes=4096)
    ref, exp = _reference(A, b)
    assert E == exp and (S == ref).all()


def test_mismatched_shapes_are_refused() -> None:
    with pytest.raises(ValueError, match="b must have shape"):
        exact_dot(np.ones((2, 3)), np.ones(2))
