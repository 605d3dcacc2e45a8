"""Run small dense linear algebra with one BLAS thread (solver side only).

The certified solves and the regularization-path solver call BLAS on small matrices (N <= a few
hundred) thousands of times. On a loaded 2-core machine OpenBLAS's second thread spin-waits:
measured 15 ms instead of 0.3 ms per L-BFGS-B iteration at N = 42 (scipy 1.17, OpenBLAS 0.3.31).
`single_thread_blas` limits every loaded BLAS (numpy's and scipy's copies) to one thread with
threadpoolctl and restores the previous counts on exit.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

__all__ = ["single_thread_blas"]


@contextmanager
def single_thread_blas() -> Iterator[None]:
    """Context manager: one BLAS thread inside, previous thread counts restored after."""
    import numpy  # noqa: F401  (load both OpenBLAS copies before threadpoolctl scans them)
    import scipy.linalg  # noqa: F401
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"):
        yield
