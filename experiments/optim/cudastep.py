"""The compiled CUDA step of ``LpMirrorDescent(fused=True)`` (docs/theory.md section 2.3; issue 25).

On CUDA the default path is `experiments.optim.foreach`: about ten ``torch._foreach_*`` passes over
each parameter (powers, signs, the step, two norms, the copy): 3.0-4.1x a fused Adam step on 10M
float32 parameters of an H200, against 2.4-2.6x for this step (float64: 3.0-4.4x against 2.1-2.2x;
benchmarks/README.md, section "GPU (H200)"). With ``fused=True`` (p != 2, no
``normalize_gradient``, contiguous float32/float64 tensors of matching gradient dtype, a float
``lr``) each parameter's step instead runs as one ``torch.compile`` (Triton) kernel: it reads ``W``
and ``G`` and writes the new parameter into a fresh tensor (an eager reduction then flags any
non-finite entry), ``W+ = sign(Q)|Q|^{1/(p-1)}``, ``Q = sign(W)|W|^{p-1} + coef G`` (``coef = -lr``,
or ``+lr`` with ``maximize``): the update of `experiments.optim.kernels.simple_update`, to rounding.

All or nothing: the flags of a group are read once (one synchronisation); only when every entry of
every new tensor is finite are they copied in (one ``torch._foreach_copy_``). Otherwise nothing was
written and the checked reference path decides, with its own messages (a non-finite gradient or
parameter, or an overflow, raises ``FloatingPointError`` naming the parameter; a step it can take,
it takes). So a compiled kernel can refuse a step but never commit a non-finite one.

The kernel is built on first use per (exponent, dtype) with ``dynamic=True`` (one kernel for every
size) and checked on a probe against the float64 reference; where it cannot be built
(`KernelUnavailable`), the optimizer warns once and keeps the foreach path.
"""

from __future__ import annotations

import functools
from fractions import Fraction
from typing import Callable

import torch

from experiments.optim.kernels import simple_update

__all__ = [
    "CudaFusedMixin",
    "KernelUnavailable",
    "StepKernel",
    "applies",
    "cuda_step_kernel",
    "step_function",
]

_DTYPES = (torch.float32, torch.float64)
#: the probe's tolerance against the float64 reference (dual space, relative to max|Q|), per dtype
_PROBE_RTOL = {torch.float32: 1e-5, torch.float64: 1e-12}


class KernelUnavailable(RuntimeError):
    """The compiled CUDA step could not be built or failed its probe here (the message says why)."""


def applies(group: dict, param: torch.Tensor, exact: Fraction, lr) -> bool:
    """Whether this parameter's step can run the compiled CUDA kernel (see the module docstring)."""
    grad = param.grad
    return (
        bool(group["fused"])
        and exact != 2
        and not group["normalize_gradient"]
        and not group["differentiable"]
        and param.device.type == "cuda"
        and grad is not None
        and grad.layout == torch.strided
        and grad.device == param.device
        and param.dtype in _DTYPES
        and grad.dtype == param.dtype
        and param.is_contiguous()
        and grad.is_contiguous()
        and param.numel() > 0
        and isinstance(lr, float)
    )


def step_function(W, G, coef, pm1, inv) -> torch.Tensor:
    """``W+ = sign(Q)|Q|^inv`` for ``Q = sign(W)|W|^pm1 + coef G``; ``coef``, ``pm1``, ``inv`` are
    0-d tensors (data, not constants: one compiled program serves every exponent and step size).
    Pointwise only: a reduction compiled for a dynamic size ran as one program over all entries
    (13.3 ms for 10M float32 on an H200, 50x fused Adam), so the finiteness flag is taken eagerly."""
    Q = W.abs().pow(pm1) * W.sign() + coef * G
    return Q.abs().pow(inv) * Q.sign()


@functools.lru_cache(maxsize=1)
def _compiled() -> Callable:
    return torch.compile(step_function, fullgraph=True, dynamic=True)


class StepKernel:
    """``kernel(W, G, coef) -> (W+, all finite)`` for one exponent, dtype and device: 1-d contiguous
    tensors ``W``, ``G`` and a float ``coef`` (``-lr``, or ``+lr`` to maximize)."""

    def __init__(self, exact: Fraction, dtype: torch.dtype, device, fn: Callable) -> None:
        self.pm1 = torch.full((), float(exact - 1), dtype=dtype, device=device)
        self.inv = torch.full((), float(1 / (exact - 1)), dtype=dtype, device=device)
        self.fn = fn

    def __call__(self, W: torch.Tensor, G: torch.Tensor, coef: float):
        c = torch.full((), coef, dtype=W.dtype, device=W.device)
        new = self.fn(W, G, c, self.pm1, self.inv)
        return new, torch.isfinite(new).all()


@functools.lru_cache(maxsize=None)
def _build(exact: Fraction, dtype: torch.dtype, device: str) -> StepKernel | KernelUnavailable:
    """The compiled kernel after its probe, or the reason it is unavailable (cached either way)."""
    try:
        kernel = StepKernel(exact, dtype, device, _compiled())
        gen = torch.Generator().manual_seed(0)
        W = torch.randn(4099, generator=gen, dtype=torch.float64) * 3
        W[:4] = torch.tensor([0.0, -0.0, 1e-30, -7.5])
        G = torch.randn(4099, generator=gen, dtype=torch.float64)
        ref = simple_update(W, G, 0.01, exact, False, False)
        new, ok = kernel(W.to(dtype).to(device), G.to(dtype).to(device), -0.01)
        # compared in the dual space, where the step is linear and rounding errors are absolute
        pm1 = float(exact - 1)
        got, want = (t.abs().pow(pm1) * t.sign() for t in (new.double().cpu(), ref))
        err = float((got - want).abs().max() / want.abs().max())
        if not bool(ok) or not err <= _PROBE_RTOL[dtype]:
            return KernelUnavailable(
                f"the compiled CUDA step failed its probe (dual-space error {err:.2e} of max|Q|)"
            )
    except Exception as exc:  # noqa: BLE001 - any compile failure means: use the foreach path
        reason = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ""
        return KernelUnavailable(
            f"torch.compile could not build the CUDA step ({type(exc).__name__}: {reason})"
        )
    return kernel


def cuda_step_kernel(exact: Fraction, dtype: torch.dtype, device: torch.device) -> StepKernel:
    """The compiled `StepKernel` for 1-d contiguous CUDA tensors of ``dtype`` on ``device``.

    Raises:
        KernelUnavailable: not float32/float64, or the kernel could not be built or failed its
            probe (remembered per exponent, dtype and device).
    """
    if dtype not in _DTYPES:
        raise KernelUnavailable(f"the compiled CUDA step supports float32 and float64, not {dtype}")
    built = _build(exact, dtype, str(device))
    if isinstance(built, KernelUnavailable):
        raise built
    return built


class CudaFusedMixin:
    """The ``fused=True`` CUDA step of a group's eligible parameters (see the module docstring). Uses
    the host optimizer's ``_single`` (the checked reference path) and ``_warn_fused_once``."""

    def _cuda_fused_split(self, group: dict, group_jobs: list) -> tuple[list, list]:
        """``([(job, its compiled kernel)], the other jobs)``; a kernel that cannot be built warns
        once and leaves its jobs to the other paths."""
        if not group["fused"]:
            return [], group_jobs
        chosen, rest = [], []
        for job in group_jobs:
            _, _, _, param, lr, exact = job
            kernel = self._cuda_kernel(exact, param) if applies(group, param, exact, lr) else None
            if kernel is None:
                rest.append(job)
            else:
                chosen.append((job, kernel))
        return chosen, rest

    def _cuda_kernel(self, exact: Fraction, param: torch.Tensor):
        try:
            return cuda_step_kernel(exact, param.dtype, param.device)
        except KernelUnavailable as exc:
            key = ("cuda", exact, param.dtype)
            self._warn_fused_once(key, f"{exc}; using the foreach CUDA path", exact, param, 6)
            return None

    def _cuda_fused_group(self, chosen: list) -> list[Callable[[], None]]:
        """Phase 1 for the compiled jobs (``(job, kernel)`` pairs of `_cuda_fused_split`): run the
        kernels into fresh tensors, read every finiteness flag at once, and return one commit (the
        copies); when a flag is false, the checked reference path's commits instead (it raises for
        what it refuses, nothing written)."""
        news, flags, targets = [], [], []
        for (_, _, group, param, lr, _), kernel in chosen:
            W = param.detach().view(-1)
            new, ok = kernel(W, param.grad.detach().view(-1), lr if group["maximize"] else -lr)
            news.append(new)
            flags.append(ok)
            targets.append(W)
        if not bool(torch.stack(flags).all()):
            return [self._single(job) for job, _ in chosen]

        def commit() -> None:
            torch._foreach_copy_(targets, news)

        return [commit]
