"""certify.splitdot: exact int64-matrix products through float64 limbs."""

from __future__ import annotations

import random

import numpy as np
import pytest

from certify.splitdot import limb_product, matrix_limbs


@pytest.mark.parametrize("bits", [1, 15, 16, 17, 31, 53, 62])
def test_products_equal_python_integer_products(bits):
    rng = np.random.default_rng(bits)
    rnd = random.Random(bits)
    M = rng.integers(-(2**bits) + 1, 2**bits, size=(37, 23), dtype=np.int64)
    M[0, 0], M[-1, -1] = 2**bits - 1, -(2**bits) + 1
    limbs = matrix_limbs(M)
    Mo = M.astype(object)
    for vb in (0, 20, 300):
        v = [rnd.randint(-(2**vb), 2**vb) for _ in range(23)]
        lam = [rnd.randint(-(2**vb), 2**vb) if rnd.random() < 0.5 else 0 for _ in range(37)]
        assert limb_product(limbs, v) == [int(x) for x in Mo.dot(np.array(v, dtype=object))]
        assert limb_product(limbs, lam, transpose=True) == [
            int(x) for x in Mo.T.dot(np.array(lam, dtype=object))
        ]


def test_zero_matrix_and_zero_vector():
    limbs = matrix_limbs(np.zeros((3, 2), dtype=np.int64))
    assert limb_product(limbs, [5, -7]) == [0, 0, 0]
    M = np.array([[1, -2], [3, 4]], dtype=np.int64)
    assert limb_product(matrix_limbs(M), [0, 0]) == [0, 0]
    with pytest.raises(ValueError):
        limb_product(matrix_limbs(M), [1, 2, 3])
