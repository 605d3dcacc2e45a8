"""The thread count of `experiments.optim.optimizer.LpMirrorDescent`'s write phase, and the chunking
that makes its result independent of it (docs/theory.md section 2.3).

A step checks everything first (phase 1: reductions over the gradient, bounds, norms) and then
writes (phase 2: the chunked power kernels or the fused loop). On CPU the write phase runs under
``torch.set_num_threads(k)``, ``k`` chosen here, and so does phase 1 when its result cannot depend on
the count either (every parameter on the chunked CPU path, without ``normalize_gradient``, ``fused``
or ``foreach``); otherwise phase 1 keeps torch's count:

- ``threads=None`` (the default): automatic. The candidates are 1 and ``T = torch.get_num_threads()``.
  From the second step on, each step's phases under the choice are timed (wall clock, per entry);
  the candidate with the lower median of its last three timings is used, and the other one is tried
  again after ``PROBE * ceil(r)`` steps (``r`` >= 1 the ratio of their medians, at most ``MAX_WAIT``
  steps), so the probes cost at most about ``1/PROBE`` of the chosen steps' time while a load that
  comes or goes is still followed. On a quiet machine that settles on ``T``; on a loaded one, where
  the chunked kernels' per-chunk thread barriers wait for descheduled threads, it settles on 1 when 1
  is faster. Steps with fewer than ``T * GRAIN`` entries (torch would not split them anyway) and
  ``T = 1`` never switch.
- ``threads=k`` (an int >= 1): always ``k``.
- Steps that run the streaming C kernel of ``fused=True`` (`experiments.optim.native`) keep
  torch's count under the automatic choice (untimed) and take ``k`` under ``threads=k``: it deals
  its blocks to whichever thread is free, so a descheduled thread holds up one block, and its bits
  do not depend on the count. Under two busy loops on 2 cores, 2 threads took 0.56-0.85x the time
  of 1 (benchmarks/README.md).
- Steps that run inductor's ``fused=True`` loop keep torch's count (and are not timed): dynamo
  guards the compiled loop on the thread count, so another count would recompile it inside the write
  phase, where a failure could no longer be refused with nothing written. That loop has one parallel
  region per call, not a barrier per chunk: under a load of 10-12 on 2 cores, 2 threads took
  0.94-1.46x the time of 1 there, against 10-15x for the eager chunked kernels (benchmarks/README.md).

Only the speed depends on the choice, never the result: the elementwise write kernels give the same
bits for every thread count (`chunk_bounds`; the fused loop's tail is
vectorized, masked); in phase 1 the reductions over G only bound max|G| (they choose between the
in-place and the checked route, which compute the same bits), and the one reduction whose rounding
reaches the result, the q-norm of ``normalize_gradient``, keeps torch's count. Tested bit for bit.
``torch.set_num_threads`` is process-wide: other Python threads running torch ops during a step see
the step's count while it writes.
"""

from __future__ import annotations

import math
import operator
import statistics
import time
from collections import deque
from contextlib import contextmanager
from typing import Callable, Iterable

import torch

from certify.errors import MdcertError

__all__ = ["GRAIN", "MAX_WAIT", "PROBE", "ThreadChoice", "chunk_bounds", "validate_threads"]

PROBE = 16  # the other candidate is tried after PROBE * ceil(its median / the best median) steps
MAX_WAIT = 1024
GRAIN = 32768  # at::internal::GRAIN_SIZE: torch splits an elementwise op over threads from here on


def chunk_bounds(
    n: int, threads: int | None = None, *, chunk: int = 1 << 20
) -> list[tuple[int, int]]:
    """The pieces ``[s, e)`` of a length-``n`` loop, each at most ``chunk`` entries long (the chunked
    kernels pass `experiments.optim.kernels.CHUNK`) and each split evenly by torch's intra-op threads
    (``threads``, default ``torch.get_num_threads()``).

    torch gives each of its ``T'`` threads ``ceil(len / T')`` entries of an elementwise op
    (``T' = min(T, ceil(len / GRAIN))``), and each thread runs the last ``len mod 16`` (32, 64 with
    wider vectors) entries of its range through the scalar code, whose ``log2`` / ``exp2`` need not
    round like the vectorized ones. Every piece here is either ``k GRAIN`` entries with ``k <= T`` or
    ``T | k`` (every thread gets a multiple of ``GRAIN``: all vectorized), or the final ``n mod GRAIN``
    entries (below ``GRAIN``: one thread). So an entry takes the scalar route only if it is among the
    last ``n mod 16``, whatever ``T`` is: the chunked kernels give bit-identical results for every
    thread count (tested; docs/theory.md section 2.3).
    """
    t = max(1, torch.get_num_threads() if threads is None else int(threads))
    k_max = chunk // GRAIN
    if k_max == 0:  # tiny chunks (tests): every piece below GRAIN runs on one thread
        return [(s, min(s + chunk, n)) for s in range(0, n, chunk)]
    full = GRAIN * (t * (k_max // t) if t <= k_max else k_max)
    bounds, s = [], 0
    while n - s >= full:
        bounds.append((s, s + full))
        s += full
    k = (n - s) // GRAIN
    for size in ((k // t) * t if k > t else k, k % t if k > t else 0):
        if size:
            bounds.append((s, s + size * GRAIN))
            s += size * GRAIN
    if s < n:
        bounds.append((s, n))
    return bounds


def validate_threads(threads) -> int | None:
    """``None`` (automatic) or a thread count >= 1; anything else raises `MdcertError`."""
    if threads is None:
        return None
    try:
        value = None if isinstance(threads, bool) else operator.index(threads)
    except TypeError:
        value = None
    if value is None or value < 1:
        raise MdcertError(
            f"Invalid threads: {threads!r}; use None (automatic) or an int >= 1 (docs/theory.md 2.3)"
        )
    return value


class ThreadChoice:
    """Runs a step's write phase under the chosen thread count (see the module docstring).

    ``clock`` (default ``time.perf_counter``) is injectable for tests; ``last`` is the count the last
    write phase ran with (None before the first).
    """

    def __init__(self, threads: int | None = None, *, clock: Callable[[], float] | None = None):
        self.threads = validate_threads(threads)
        self.clock = clock or time.perf_counter
        self.timings: dict[int, deque] = {}
        self.wait: int | None = None  # steps before the next probe (set once both are measured)
        self.warm = False  # the first step (dual cache filled, buffers allocated) is not timed
        self.last: int | None = None

    def choose(self, total: int, work: int) -> int:
        """The thread count for a write phase of ``work`` entries when torch is set to ``total``."""
        if self.threads is not None:
            return self.threads
        if total <= 1 or work < total * GRAIN:
            return total
        seen = {k: self.timings.get(k) for k in (total, 1)}
        for k, recent in seen.items():
            if not recent:
                return k  # measure each candidate once, torch's own count first
        best, other = sorted(seen, key=lambda k: statistics.median(seen[k]))
        if self.wait is not None and self.wait <= 0:
            self.wait = None
            return other  # the probe
        if self.wait is None:
            ratio = statistics.median(seen[other]) / max(statistics.median(seen[best]), 1e-300)
            self.wait = min(PROBE * math.ceil(min(ratio, MAX_WAIT)), MAX_WAIT)
        self.wait -= 1
        return best

    def step(
        self,
        plan: Callable[[], tuple[list[Callable[[], None]], bool]],
        work: int,
        *,
        whole: bool,
    ) -> None:
        """Phase 1 ``plan()`` (returns the commits, and True when they must keep torch's count) and
        phase 2 (the commits), ``work`` CPU entries; torch's count is restored after (also on a raise).

        ``whole``: phase 1's result does not depend on the thread count either (no norm, no unchunked
        power, no compiled loop), so it runs, and is timed, under the chosen count too.
        """
        total = torch.get_num_threads()
        k = self.choose(total, work)
        timed = self.threads is None and total > 1 and work >= total * GRAIN
        if timed and not self.warm:
            k, timed, self.warm = total, False, True
        start = self.clock()
        with _count(k if whole else total, total):
            commits, fixed = plan()
        if fixed:
            k, timed = total, False
        if not whole:
            start = self.clock()
        self.last = k
        with _count(k, total):
            for commit in commits:
                commit()
        if timed:
            self.timings.setdefault(k, deque(maxlen=3)).append((self.clock() - start) / work)

    def run(self, commits: Iterable[Callable[[], None]], work: int, *, fixed: bool = False) -> None:
        """`step` with phase 1 done: only the writes ``commits`` (``fixed``: at torch's count)."""
        self.step(lambda: (list(commits), fixed), work, whole=False)


@contextmanager
def _count(k: int, total: int):
    """Run the body with ``torch.set_num_threads(k)``, then set ``total`` back."""
    if k == total:
        yield
        return
    torch.set_num_threads(k)
    try:
        yield
    finally:
        torch.set_num_threads(total)
