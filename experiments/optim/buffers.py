"""Large optimizer-state buffers on transparent huge pages (docs/theory.md section 2.3; issue 25).

The fused CPU step streams four tensors per step: the parameter and its gradient (the user's) and
the cached dual and its spare (the optimizer's own, allocated here). With 4 KiB pages, each 2 MiB of
a stream costs 512 translation misses, and in a virtual machine each miss walks two page tables. The
optimizer's two buffers are therefore advised onto transparent huge pages (``madvise(MADV_HUGEPAGE)``
on the 2 MiB-aligned part of the buffer, before its first write), as torch's own allocator does for
every tensor under ``THP_MEM_ALLOC_ENABLE=1``. Measured on the 2-core VM (float64, 10^7 entries,
benchmarks/README.md): the fused p = 1.75 kernel took 8.5-9.6 ms with the dual buffers on huge
pages (five processes) against 8.9-11.4 ms without (seven).

It is advice only: where the kernel has transparent huge pages off, or none free, the buffer is
an ordinary one, and no result changes either way. A buffer that the C library hands out from
memory it already used (below its mmap threshold, at most 32 MiB by default) keeps the pages it
has until the kernel's background collapse, if ever. Linux only; elsewhere (or with
``MDCERT_HUGE_PAGES=0``) `state_buffer` is ``torch.empty_like``.

What is observable: `advise_huge_pages` says whether the kernel accepted the advice, and
`mapping_flags` reads the mapping's ``VmFlags`` (``hg`` once advised). Whether the kernel then
*grants* huge pages depends on its defragmentation setting and on free memory, which no program
controls: `huge_bytes` reads how much it granted (``AnonHugePages`` in ``/proc/self/smaps``), for
the benchmarks' reports, never as a test's pass condition.
"""

from __future__ import annotations

import ctypes
import functools
import os
import sys

import torch

__all__ = [
    "HUGE_MIN_BYTES",
    "HUGE_PAGE",
    "advise_huge_pages",
    "huge_bytes",
    "huge_page_span",
    "mapping_flags",
    "state_buffer",
]

HUGE_PAGE = 1 << 21  # x86-64 and arm64 (4 KiB base pages): a transparent huge page is 2 MiB
HUGE_MIN_BYTES = 8 << 20  # smaller buffers keep their pages (at most a few huge pages to gain)
_MADV_HUGEPAGE = 14


def huge_page_span(ptr: int, nbytes: int) -> tuple[int, int] | None:
    """The whole 2 MiB pages inside ``[ptr, ptr + nbytes)``: ``(start, length)``, or None."""
    start = (ptr + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1)
    end = (ptr + nbytes) & ~(HUGE_PAGE - 1)
    return (start, end - start) if end > start else None


@functools.lru_cache(maxsize=1)
def _madvise():
    if not sys.platform.startswith("linux"):
        return None
    try:
        fn = ctypes.CDLL(None, use_errno=True).madvise
    except (OSError, AttributeError):  # pragma: no cover - a libc without madvise
        return None
    fn.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    fn.restype = ctypes.c_int
    return fn


def advise_huge_pages(t: torch.Tensor) -> bool:
    """Advise the whole 2 MiB pages of CPU tensor ``t``'s storage onto transparent huge pages,
    before their first write. True where the kernel accepted the advice (``madvise`` returned 0);
    False off Linux, for a storage holding no whole 2 MiB page, or on a refusal. Advice only: no
    value changes, and the pages stay ordinary where the kernel grants none."""
    if t.device.type != "cpu":
        return False
    storage = t.untyped_storage()
    span, madvise = huge_page_span(storage.data_ptr(), storage.nbytes()), _madvise()
    if span is None or madvise is None:
        return False
    return madvise(span[0], span[1], _MADV_HUGEPAGE) == 0


def state_buffer(like: torch.Tensor) -> torch.Tensor:
    """A new contiguous tensor of ``like``'s shape, dtype and device (uninitialized, as
    ``torch.empty_like``), advised onto huge pages when it is a CPU buffer of at least
    `HUGE_MIN_BYTES` (see the module docstring)."""
    out = torch.empty_like(like, memory_format=torch.contiguous_format)
    if out.device.type != "cpu" or out.nbytes < HUGE_MIN_BYTES:
        return out
    if os.environ.get("MDCERT_HUGE_PAGES", "1") == "0":
        return out
    advise_huge_pages(out)  # a refusal leaves ordinary pages
    return out


def _smaps(t: torch.Tensor) -> tuple[int, set[str]] | None:
    """(AnonHugePages bytes, union of VmFlags) over the mappings overlapping ``t``'s storage."""
    lo = t.untyped_storage().data_ptr()
    hi = lo + t.untyped_storage().nbytes()
    total, flags, inside = 0, set(), False
    try:
        with open("/proc/self/smaps", encoding="ascii", errors="replace") as fh:
            for line in fh:
                head = line.split(maxsplit=1)[0] if line.strip() else ""
                if "-" in head and not head.endswith(":"):
                    a, _, b = head.partition("-")
                    try:
                        inside = int(a, 16) < hi and int(b, 16) > lo
                    except ValueError:
                        inside = False
                elif inside and head == "AnonHugePages:":
                    total += int(line.split()[1]) * 1024
                elif inside and head == "VmFlags:":
                    flags.update(line.split()[1:])
    except OSError:
        return None
    return total, flags


def huge_bytes(t: torch.Tensor) -> int | None:
    """Bytes of the mappings holding ``t``'s storage that are on transparent huge pages
    (``AnonHugePages`` of ``/proc/self/smaps``), or None where that file cannot be read."""
    got = _smaps(t)
    return None if got is None else got[0]


def mapping_flags(t: torch.Tensor) -> set[str] | None:
    """The ``VmFlags`` of the mappings holding ``t``'s storage (``hg``: advised onto huge pages,
    ``nh``: advised off them), or None where ``/proc/self/smaps`` cannot be read."""
    got = _smaps(t)
    return None if got is None else got[1]
