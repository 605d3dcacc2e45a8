"""Tests for certify.blas: the BLAS thread count is 1 inside and restored after."""

from __future__ import annotations

import numpy as np
import scipy.linalg  # noqa: F401  (scipy carries its own OpenBLAS; load it before counting)
from threadpoolctl import threadpool_info

import os

from certify.blas import all_cpu_blas, single_thread_blas, usable_cpus


def _blas_threads() -> list[int]:
    return [int(info["num_threads"]) for info in threadpool_info() if info["user_api"] == "blas"]


def test_single_thread_blas_sets_and_restores():
    np.dot(np.ones((3, 3)), np.ones(3))  # make sure numpy's OpenBLAS is loaded
    before = _blas_threads()
    with single_thread_blas():
        assert _blas_threads() and all(n == 1 for n in _blas_threads())
        assert np.allclose(np.linalg.solve(np.eye(3) * 2, np.ones(3)), 0.5)
    assert _blas_threads() == before


def test_restores_after_an_exception():
    before = _blas_threads()
    try:
        with single_thread_blas():
            raise KeyError("x")
    except KeyError:
        pass
    assert _blas_threads() == before


def test_all_cpu_blas_lifts_the_single_thread_limit_and_restores_it():
    with single_thread_blas():
        with all_cpu_blas():
            assert _blas_threads() and all(n == usable_cpus() for n in _blas_threads())
        assert all(n == 1 for n in _blas_threads())


def test_usable_cpus_is_the_affinity_mask():
    assert usable_cpus() == max(1, len(os.sched_getaffinity(0)))
