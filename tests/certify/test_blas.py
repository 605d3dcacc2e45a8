"""Tests for certify.blas: the OpenBLAS thread count is 1 inside and restored after."""

from __future__ import annotations

import numpy as np

from certify.blas import _controls, single_thread_blas


def test_single_thread_blas_sets_and_restores():
    np.dot(np.ones((3, 3)), np.ones(3))  # make sure numpy's OpenBLAS is loaded
    before = [int(g()) for g, _ in _controls()]
    with single_thread_blas():
        assert all(int(g()) == 1 for g, _ in _controls())
        assert np.allclose(np.linalg.solve(np.eye(3) * 2, np.ones(3)), 0.5)
    assert [int(g()) for g, _ in _controls()] == before


def test_restores_after_an_exception():
    before = [int(g()) for g, _ in _controls()]
    try:
        with single_thread_blas():
            raise KeyError("x")
    except KeyError:
        pass
    assert [int(g()) for g, _ in _controls()] == before
