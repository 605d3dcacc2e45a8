"""Run small dense linear algebra with one OpenBLAS thread (solver side only).

The certified solves call BLAS on small matrices (N <= a few hundred) thousands of times. On a
loaded 2-core machine OpenBLAS's second thread spin-waits: measured 15 ms instead of 0.3 ms per
L-BFGS-B iteration at N = 42 (scipy 1.17, OpenBLAS 0.3.31). `single_thread_blas` sets every
loaded OpenBLAS (numpy's and scipy's copies) to one thread and restores the previous counts.
Without OpenBLAS (or off Linux) it does nothing.
"""

from __future__ import annotations

import ctypes
from contextlib import contextmanager
from typing import Iterator

__all__ = ["single_thread_blas"]

_NAMES = (("scipy_openblas_get_num_threads64_", "scipy_openblas_set_num_threads64_"),
          ("scipy_openblas_get_num_threads", "scipy_openblas_set_num_threads"),
          ("openblas_get_num_threads64_", "openblas_set_num_threads64_"),
          ("openblas_get_num_threads", "openblas_set_num_threads"))
_HANDLES: dict[str, tuple] = {}
_CACHE: list = []


def _controls() -> list[tuple]:
    """(get, set) pairs of every loaded OpenBLAS; scanned once, after numpy and scipy.linalg load."""
    if not _CACHE:
        import numpy  # noqa: F401  (load both OpenBLAS copies before scanning)
        import scipy.linalg  # noqa: F401

        _CACHE.append(_scan())
    return _CACHE[0]


def _scan() -> list[tuple]:
    try:
        with open("/proc/self/maps") as fh:
            libs = {line.split()[-1] for line in fh if "openblas" in line.lower() and "/" in line}
    except OSError:
        return []
    out = []
    for lib in sorted(libs):
        if lib not in _HANDLES:
            found: tuple = ()
            try:
                h = ctypes.CDLL(lib)
                for get, set_ in _NAMES:
                    if hasattr(h, get) and hasattr(h, set_):
                        g, s = getattr(h, get), getattr(h, set_)
                        g.restype = ctypes.c_int
                        found = (g, s)
                        break
            except OSError:
                pass
            _HANDLES[lib] = found
        if _HANDLES[lib]:
            out.append(_HANDLES[lib])
    return out


@contextmanager
def single_thread_blas() -> Iterator[None]:
    """Context manager: one OpenBLAS thread inside, previous thread counts restored after."""
    controls = _controls()
    saved = []
    for get, set_ in controls:
        try:
            saved.append((set_, int(get())))
            set_(ctypes.c_int(1))
        except (OSError, ValueError):
            continue
    try:
        yield
    finally:
        for set_, n in saved:
            set_(ctypes.c_int(n))
