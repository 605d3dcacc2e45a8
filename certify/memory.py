"""How much memory this process may use: the one reading of it for the whole project (docs/theory.md
section 4.5). Imports nothing of the project, so the trusted checker's loaders may use it.

- `memory_limit`: physical memory, or a smaller cgroup limit (cgroup v2 ``memory.max``, v1
  ``memory.limit_in_bytes``); None when neither is known.
- `available_bytes`: what can still be allocated: ``MemAvailable`` of /proc/meminfo, and, under a
  cgroup limit, that limit minus the cgroup's current usage; the smaller of the known values.
- `default_budget`: 80% of `available_bytes` (4 GiB when nothing is known): the default of
  ``--memory-budget`` and of the loaders' size checks.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["memory_limit", "available_bytes", "default_budget", "format_bytes"]

_CGROUP_LIMITS = ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes")
_CGROUP_USAGE = ("/sys/fs/cgroup/memory.current", "/sys/fs/cgroup/memory/memory.usage_in_bytes")


def _read_int(path: str) -> int | None:
    try:
        text = Path(path).read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None  # "max" (no limit) reads as None


def _cgroup_limit() -> int | None:
    return next((v for v in map(_read_int, _CGROUP_LIMITS) if v is not None), None)


def memory_limit() -> int | None:
    """Bytes of memory this process may use: physical memory, or a smaller cgroup limit (None if unknown)."""
    limits = []
    try:
        limits.append(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        pass
    cg = _cgroup_limit()
    if cg is not None:
        limits.append(cg)
    return min(limits) if limits else None


def available_bytes() -> int | None:
    """Bytes that can still be allocated (module docstring); None when nothing is known."""
    known = []
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    known.append(int(line.split()[1]) * 1024)
                    break
    except (OSError, ValueError, IndexError):
        pass
    cg = _cgroup_limit()
    if cg is not None:
        used = next((v for v in map(_read_int, _CGROUP_USAGE) if v is not None), 0)
        known.append(max(0, cg - used))
    if not known:
        limit = memory_limit()
        return None if limit is None else limit
    return min(known)


def default_budget() -> int:
    """80% of `available_bytes`, else 4 GiB."""
    avail = available_bytes()
    return int(0.8 * avail) if avail is not None else 4 << 30


def format_bytes(b: int) -> str:
    """``1.5 GiB`` / ``300 MiB``."""
    return f"{b / 2**30:.1f} GiB" if b >= 2**30 else f"{b / 2**20:.0f} MiB"
