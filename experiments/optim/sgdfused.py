"""The fused p = 2 step: SGD's ``W <- W + coef G`` in one pass, all or nothing (issue 25; docs/theory.md 2.3).

At p = 2 the mirror step is SGD's ``add_``. The checked route reads G once more before it writes
(a NaN found after a write could not be taken back), 4 memory streams against SGD's 3. This kernel
writes speculatively and keeps what it needs to undo the step exactly: ``W+ = fma(coef, G, W)``
(the rounding of torch's vectorized ``add_``, tested bit for bit), and for each entry it checks that
``fma(-coef, G, W+)`` gives back ``W`` bit for bit; the few entries where it does not (``|coef G|``
comparable to or above ``|W|``, which absorbs ``W``; ties) have their old value and position
appended to a log, 16 lanes at a time (AVX-512: compressed in a register, then one plain store; a
compress store to memory is microcoded on AMD Zen 4 and made the step 3x slower). A non-finite ``W+`` anywhere, or a
full log, stops the pass; what was written is then undone (the inverse ``fma`` everywhere, then the
log), bit for bit. So a refused step leaves ``W`` exactly as it was, and a step whose log overflows
is taken again by the checked route. The log holds ``n/16`` entries (12 bytes each in float32:
0.19x the parameter's memory); on lr 0.01 steps of N(0, 1) weights and gradients 0.8-1.3% of the
entries are logged (measured).

Only where the compiler targets AVX-512 (`available`): the scalar fallback of the log would cost
more than the check read it saves. The threads take fixed contiguous ranges, each with its own part
of the log; the result does not depend on their number.
"""

from __future__ import annotations

import ctypes
import threading

import numpy as np
import torch

from experiments.optim.native import NativeUnavailable, build_library
from experiments.optim.sgdsource import sgd_source

__all__ = ["LOG_FULL", "NOT_FINITE", "OK", "SgdKernel", "SgdLog", "SpeculativeSgd", "sgd_kernel"]

_LOCK = threading.Lock()
_KERNELS: dict[torch.dtype, "SgdKernel | NativeUnavailable"] = {}
MAX_WAIT = 1024  # after a full log, steps before the next speculative try (doubling up to this)

OK, NOT_FINITE, LOG_FULL = 0, 1, 2


class SgdKernel:
    """The speculative p = 2 pass and its undo for one dtype (see the module docstring); its bits
    do not depend on the thread count (``threads_matter`` is False)."""

    threads_matter = False

    def __init__(self, lib: ctypes.CDLL, dtype: torch.dtype) -> None:
        ptr, i64 = ctypes.c_void_p, ctypes.c_int64
        self._step, self._undo, self.dtype = lib.mdcert_sgd, lib.mdcert_sgd_undo, dtype
        args = [ptr, ptr, ctypes.c_double, i64, ctypes.c_int, ptr, ptr, i64, ptr, ptr]
        self._step.restype, self._step.argtypes = ctypes.c_int, args + [ptr, ptr]
        self._undo.restype, self._undo.argtypes = None, args

    def log(self, n: int) -> "SgdLog":
        """Buffers for one parameter of ``n`` entries (allocated once, reused by every step)."""
        return SgdLog(n, self.dtype)

    def step(
        self, W: torch.Tensor, G: torch.Tensor, coef: float, log: "SgdLog"
    ) -> tuple[int, float]:
        """``W <- fma(coef, G, W)`` in place; returns ``(status, max|W+|)``. A status other than
        `OK` means the pass stopped and was undone: ``W`` is bit for bit what it was."""
        n = W.numel()
        if not (
            W.dtype == G.dtype == self.dtype
            and G.numel() == n == log.n
            and W.is_contiguous()
            and G.is_contiguous()
            and not W.is_cuda
        ):
            raise ValueError("fused p = 2 step: contiguous CPU tensors of one dtype and size")
        threads = max(1, min(torch.get_num_threads(), log.threads))
        cap = log.size // threads
        status = self._step(
            W.data_ptr(), G.data_ptr(), float(coef), n, threads, *log.pointers(cap),
            log.top_ptr, log.team_ptr,
        )  # fmt: skip
        log.last = (float(coef), int(log.team[0]), cap)  # the team OpenMP gave the pass
        torch.autograd.graph.increment_version(W)  # written in place, as add_ would count it
        if status != OK:
            self.undo(W, G, log)
            return status, float("nan")
        return status, float(log.top.view(log.real)[0])

    def undo(self, W: torch.Tensor, G: torch.Tensor, log: "SgdLog") -> None:
        """Take back the last pass on ``W`` (``G`` and the log as it left them), bit for bit."""
        coef, team, cap = log.last
        self._undo(W.data_ptr(), G.data_ptr(), coef, W.numel(), team, *log.pointers(cap))
        torch.autograd.graph.increment_version(W)


class SgdLog:
    """Per-parameter buffers of the fused p = 2 step: the undo log (``n/16`` entries and a margin
    per thread) and each thread's written range and log count. The small ones are numpy arrays and
    every C pointer is taken once: a step reads them back without a torch call (each costs the
    step more once its stream has evicted the caches)."""

    def __init__(self, n: int, dtype: torch.dtype, *, threads: int = 64) -> None:
        self.n, self.threads = n, threads
        self.size = n // 16 + 64 * threads
        self.idx = torch.empty(self.size, dtype=torch.int64)
        self.val = torch.empty(self.size, dtype=dtype)
        self.used = np.zeros(threads, dtype=np.int64)
        self.done = np.zeros(threads, dtype=np.int64)
        self.top = np.zeros(1, dtype=np.uint64)  # max|W+| as bits (the low 4 bytes in float32)
        self.team = np.zeros(1, dtype=np.int32)
        self.real = np.float32 if dtype == torch.float32 else np.float64
        self._ptrs = (self.idx.data_ptr(), self.val.data_ptr())
        self._counts = (self.used.ctypes.data, self.done.ctypes.data)
        self.top_ptr, self.team_ptr = self.top.ctypes.data, self.team.ctypes.data
        self.last: tuple[float, int, int] = (0.0, 1, self.size)

    def pointers(self, cap: int) -> tuple[int, int, int, int, int]:
        """The C arguments ``lidx, lval, cap, used, done`` (each thread's log holds ``cap``)."""
        return (*self._ptrs, cap, *self._counts)


def sgd_kernel(dtype: torch.dtype) -> SgdKernel:
    """Build (or load) the fused p = 2 kernel for ``dtype``.

    Raises:
        NativeUnavailable: another dtype, no C compiler, or no AVX-512 target.
    """
    if dtype not in (torch.float32, torch.float64):
        raise NativeUnavailable(f"the fused p = 2 step supports float32 and float64, not {dtype}")
    with _LOCK:
        found = _KERNELS.get(dtype)
        if found is None:
            try:
                lib = build_library(sgd_source(dtype))
                if not lib.mdcert_sgd_available():
                    raise NativeUnavailable(
                        "the fused p = 2 step needs an AVX-512 target (compress into a register)"
                    )
                found = SgdKernel(lib, dtype)
            except NativeUnavailable as exc:
                found = exc  # remembered: asked again, the same answer without a new attempt
            _KERNELS[dtype] = found
    if isinstance(found, NativeUnavailable):
        raise NativeUnavailable(str(found))
    return found


class SpeculativeSgd:
    """The commit of a fused p = 2 step (`experiments.optim.dual.all_or_nothing` runs it before the
    checked commits and calls `undo` when a later parameter refuses).

    ``opt`` supplies ``_check_grad``, ``_check_result``, ``_refuse``, ``_bounds`` and ``_sgd_wait`` (steps
    before the next speculative try, after a full log). A full log takes the checked route inside the
    commit: G is checked, the old W kept, then SGD's ``add_``.
    """

    def __init__(self, opt, job, W, G, coef: float, kernel: SgdKernel, log: SgdLog) -> None:
        self.opt, self.job, self.W, self.G, self.coef = opt, job, W, G, coef
        self.kernel, self.log = kernel, log
        self.saved: torch.Tensor | None = None  # the old W when the checked route ran

    def __call__(self) -> None:
        opt, (gi, pi, param, lr, exact) = self.opt, self.job
        status, top = self.kernel.step(self.W, self.G, self.coef, self.log)
        if status == OK:
            opt._bounds[param] = (param._version, param.data_ptr(), top)
            length = opt._sgd_wait.get(param, (0, 0))[1]
            opt._sgd_wait[param] = (0, length // 2)
            return
        if status == NOT_FINITE:  # W is as it was: say why, as the checked route would
            opt._check_grad(gi, pi, param.grad, exact, lr)
            opt._check_result(gi, pi, param, self.W, exact, lr)  # a parameter already NaN or Inf
            opt._refuse(gi, pi, param, exact, lr)  # else the step overflowed
        last = opt._sgd_wait.get(param, (0, 0))[1]
        opt._sgd_wait[param] = (min(2 * last, MAX_WAIT) or 1,) * 2
        opt._check_grad(gi, pi, param.grad, exact, lr)
        new = torch.add(self.W, self.G, alpha=self.coef)
        opt._check_result(gi, pi, param, new, exact, lr)
        self.saved = self.W.clone()
        self.W.copy_(new)
        opt._bounds.pop(param, None)

    def undo(self) -> None:
        """Take back a step that succeeded (a later parameter's step was refused), bit for bit."""
        if self.saved is not None:
            self.W.copy_(self.saved)
        else:
            self.kernel.undo(self.W, self.G, self.log)
        self.opt._bounds.pop(self.job[2], None)
