"""Run small dense linear algebra with one BLAS thread (solver side only).

The certified solves and the regularization-path solver call BLAS on small matrices (N <= a few
hundred) thousands of times. On a loaded 2-core machine OpenBLAS's second thread spin-waits:
measured 15 ms instead of 0.3 ms per L-BFGS-B iteration at N = 42 (scipy 1.17, OpenBLAS 0.3.31).
`single_thread_blas` limits every loaded BLAS (numpy's and scipy's copies) to one thread with
threadpoolctl and restores the previous counts on exit; `all_cpu_blas` lifts that limit again for
the large dense products where a second thread pays (`usable_cpus` of them).
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from typing import Iterator

__all__ = ["single_thread_blas", "all_cpu_blas", "usable_cpus"]


def usable_cpus() -> int:
    """CPUs this process may run on (its affinity mask; the CPU count where there is none), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


@contextmanager
def single_thread_blas() -> Iterator[None]:
    """Context manager: one BLAS thread inside, previous thread counts restored after."""
    import numpy  # noqa: F401  (load both OpenBLAS copies before threadpoolctl scans them)
    import scipy.linalg  # noqa: F401
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"):
        yield


@contextmanager
def all_cpu_blas() -> Iterator[None]:
    """Context manager: `usable_cpus` BLAS threads inside (also inside `single_thread_blas`)."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=usable_cpus(), user_api="blas"):
        yield
