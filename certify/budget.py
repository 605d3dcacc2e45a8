"""Memory budget of a certified solve (docs/theory.md section 4.5).

`certify_svm` estimates the memory a solve needs from the sizes alone (N rows, d, n examples, m
variables) before it allocates anything large, and answers NO_VERIFIED_RESULT with a message when the
estimate exceeds the budget; a MemoryError that still happens is caught the same way. The estimate
grows with N d (the data and its exact copies) plus the working sets (at most a few m rows), never
with N^2 or N m.
"""

from __future__ import annotations

import os

__all__ = ["default_budget", "solve_bytes", "format_bytes"]


def default_budget() -> int:
    """80% of the memory the machine reports available (``MemAvailable`` of /proc/meminfo), else 80%
    of physical memory, else 4 GiB."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(0.8 * int(line.split()[1]) * 1024)
    except (OSError, ValueError, IndexError):
        pass
    try:
        return int(0.8 * os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return 4 << 30


def solve_bytes(*, N: int, d: int, m: int, n: int, T: int, structured: bool) -> int:
    """Estimated peak bytes of `certify_svm` on a system of N rows (n examples of T tokens).

    Exact data (Python integers, about 48 bytes each, and python-flint copies) and float factors take
    O(N d + n T d); the dense path holds the N x m float rows and N x N Hessians; the structured path
    a working set of about ``min(N, m)`` dense rows (it is capped to the budget as it grows, see
    `certify.workingset`) and the refinement's systems on the active set ``|S| <= min(N, m)``."""
    data = 48 * (n * T * d + 3 * N * d) + 8 * 8 * N * d
    if not structured:
        return data + 8 * (3 * N * m + 4 * N * N)
    from certify.bounds import TIGHT_LIMIT
    from certify.workingset import working_set_bytes

    s = min(N, m)
    return data + working_set_bytes(s, m) + 8 * (s * m + 3 * s * s) + 176 * min(s, TIGHT_LIMIT) ** 2


def format_bytes(b: int) -> str:
    return f"{b / 2**30:.1f} GiB" if b >= 2**30 else f"{b / 2**20:.0f} MiB"
