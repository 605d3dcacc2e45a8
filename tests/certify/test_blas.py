"""Tests for certify.blas: the BLAS thread count is 1 inside and restored after."""

from __future__ import annotations

import numpy as np
import scipy.linalg  # noqa: F401  (scipy carries its own OpenBLAS; load it before counting)
from threadpoolctl import threadpool_info

import os

import pytest

from certify.blas import (
    THREADS_ENV,
    all_cpu_blas,
    free_cpus,
    row_gram,
    single_thread_blas,
    usable_cpus,
)


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


def test_all_cpu_blas_lifts_the_single_thread_limit_and_restores_it(monkeypatch):
    monkeypatch.setenv(THREADS_ENV, str(usable_cpus()))
    with single_thread_blas():
        with all_cpu_blas():
            assert _blas_threads() and all(n == usable_cpus() for n in _blas_threads())
        assert all(n == 1 for n in _blas_threads())


def test_all_cpu_blas_takes_the_free_cpus_without_the_override(monkeypatch):
    monkeypatch.delenv(THREADS_ENV, raising=False)
    with single_thread_blas():
        with all_cpu_blas():
            got = _blas_threads()
            assert got and all(1 <= n <= usable_cpus() for n in got)


@pytest.mark.parametrize(
    "usable, load, expect",
    [
        (2, 1.0, 2),  # quiet: this process alone
        (2, 0.0, 2),
        (2, 1.6, 1),  # most of another core busy
        (2, 3.0, 1),  # two busy loops beside this process: one thread, never a waiting second
        (2, 40.0, 1),
        (16, 1.0, 16),
        (16, 5.2, 12),
        (1, 0.0, 1),
    ],
)
def test_free_cpus_subtracts_the_other_work(usable, load, expect):
    assert free_cpus(usable=usable, load=load) == expect


@pytest.mark.parametrize("value, expect", [("1", 1), ("999", None), ("0", None), ("x", None)])
def test_the_override_is_capped_and_ignores_nonsense(monkeypatch, value, expect):
    monkeypatch.setenv(THREADS_ENV, value)
    with all_cpu_blas():
        got = _blas_threads()
    if expect is not None:
        assert all(n == expect for n in got)
    else:
        assert all(1 <= n <= usable_cpus() for n in got)


def test_usable_cpus_is_the_affinity_mask():
    assert usable_cpus() == max(1, len(os.sched_getaffinity(0)))


@pytest.mark.parametrize("shape", [(1, 3), (5, 2), (40, 17)])
@pytest.mark.parametrize("alpha", [1.0, 2.5])
def test_row_gram_is_alpha_x_xt_upper_or_full(shape, alpha):
    X = np.random.default_rng(0).standard_normal(shape)
    ref = alpha * (X @ X.T)
    upper = row_gram(X, alpha)
    assert np.array_equal(np.tril(upper, -1), np.zeros_like(upper))  # zeros below
    np.testing.assert_allclose(np.triu(upper), np.triu(ref), rtol=1e-12, atol=1e-12)
    full = row_gram(X, alpha, full=True)
    assert np.array_equal(full, full.T)
    np.testing.assert_allclose(full, ref, rtol=1e-12, atol=1e-12)
