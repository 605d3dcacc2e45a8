"""Run small dense linear algebra with one BLAS thread (solver side only).

The certified solves and the regularization-path solver call BLAS on small matrices (N <= a few
hundred) thousands of times. On a loaded 2-core machine OpenBLAS's second thread spin-waits:
measured 15 ms instead of 0.3 ms per L-BFGS-B iteration at N = 42 (scipy 1.17, OpenBLAS 0.3.31).
`single_thread_blas` limits every loaded BLAS (numpy's and scipy's copies) to one thread with
threadpoolctl and restores the previous counts on exit; `all_cpu_blas` lifts that limit again for
the large dense products where a second thread pays: `free_cpus` of them, the usable CPUs less the
other work already running, so that on a loaded machine a second thread that would only wait for a
busy core is not started (docs/scaling.md, "Threads under load"). ``MDCERT_BLAS_THREADS=K`` fixes the
count (1 <= K; capped at `usable_cpus`). The scan of the loaded libraries (a few milliseconds, a
tenth of a certified (100, 1000) interpolation) is kept while no module has been imported since.
`row_gram` is the solvers' one symmetric product ``alpha X X^T`` (BLAS dsyrk).
"""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from typing import Iterator

__all__ = ["single_thread_blas", "all_cpu_blas", "free_cpus", "usable_cpus", "row_gram"]

#: environment variable that fixes the thread count of `all_cpu_blas`
THREADS_ENV = "MDCERT_BLAS_THREADS"


def usable_cpus() -> int:
    """CPUs this process may run on (its affinity mask; the CPU count where there is none), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def free_cpus(*, usable: int | None = None, load: float | None = None, own: float = 1.0) -> int:
    """Threads worth starting now: ``usable`` CPUs (default `usable_cpus`) less the runnable work of
    other processes, estimated as the 1-minute load average ``load`` (default `os.getloadavg`) less
    ``own`` (this process's own running thread), rounded; at least 1, at most ``usable``.

    Quiet 2-core machine (load about 1): 2. Two busy processes beside this one (load about 3): 1,
    where a second BLAS thread would wait for a core each time the team synchronises."""
    usable = usable_cpus() if usable is None else usable
    if load is None:
        try:
            load = os.getloadavg()[0]
        except OSError:  # pragma: no cover - no load average
            return usable
    others = max(0.0, load - own)
    return max(1, min(usable, usable - int(others + 0.5)))


def _threads_now() -> int:
    """`free_cpus`, or the count fixed by ``MDCERT_BLAS_THREADS`` (capped at `usable_cpus`)."""
    fixed = os.environ.get(THREADS_ENV, "").strip()
    if fixed.isdigit() and int(fixed) >= 1:
        return min(int(fixed), usable_cpus())
    return free_cpus()


_SCAN: list = [None, -1]  # [the ThreadpoolController, len(sys.modules) when it scanned]


def _controller():
    """threadpoolctl's controller of the loaded BLAS libraries, scanned again after new imports."""
    from threadpoolctl import ThreadpoolController

    if _SCAN[0] is None or _SCAN[1] != len(sys.modules):
        _SCAN[0], _SCAN[1] = ThreadpoolController(), len(sys.modules)
    return _SCAN[0]


@contextmanager
def single_thread_blas() -> Iterator[None]:
    """Context manager: one BLAS thread inside, previous thread counts restored after."""
    import numpy  # noqa: F401  (load both OpenBLAS copies before threadpoolctl scans them)
    import scipy.linalg  # noqa: F401

    with _controller().limit(limits=1, user_api="blas"):
        yield


@contextmanager
def all_cpu_blas() -> Iterator[None]:
    """Context manager: `free_cpus` BLAS threads inside (also inside `single_thread_blas`), or the
    count ``MDCERT_BLAS_THREADS`` fixes."""
    with _controller().limit(limits=_threads_now(), user_api="blas"):
        yield


def row_gram(X, alpha: float = 1.0, *, full: bool = False):
    """``alpha X X^T`` by BLAS dsyrk (half the products of a general product): the upper triangle
    with zeros below, which is what a Cholesky of the upper triangle reads, or with ``full`` the
    symmetric matrix. Pass ``X`` C-ordered: ``X.T`` is then the Fortran-ordered operand BLAS wants
    (no copy)."""
    import numpy as np
    from scipy.linalg.blas import dsyrk

    H = dsyrk(alpha, X.T, trans=1)
    if full:
        H += np.triu(H, 1).T
    return H
