"""``LpMirrorDescent``: mirror descent with the l_p potential as a ``torch.optim.Optimizer`` (docs/theory.md section 2).

One step, per parameter ``W`` with gradient ``G`` (``-G`` with ``maximize``):

    grad psi(W+) = grad psi(W) - lr * G,    grad psi(W) = sign(W) |W|^{p-1},

so ``W+ = sign(Q) |Q|^{1/(p-1)}`` with ``Q = sign(W)|W|^{p-1} - lr G``. ``normalize_gradient=True``
uses ``G / ||G||_q`` (per parameter, after a power-of-two scaling; a zero gradient gives no step and
a ``RuntimeWarning``; docs/theory.md section 2.3). ``p = 2`` is ``torch.optim.SGD``'s ``add_``, bit
for bit.

Errors: a non-finite gradient or parameter, or an overflowing result, raises ``FloatingPointError``
naming the parameter *before anything is written*: all parameters are updated or none; no clipping.

Paths (all compute the same update; the float64 agreement is tested): simple (out-of-place reference,
also for ``differentiable=True`` and non-contiguous tensors); foreach (``torch._foreach_*`` per group,
default on CUDA); the CPU fast path (default on CPU for contiguous float32/float64 tensors): in-place
ops on chunk-sized scratch buffers with the power plans of `experiments.optim.kernels`. The gradient
is read once before anything is written: ``G.sum()`` when the bounds below exclude overflow even
for ``max|G| = finfo.max`` (a finite sum means every entry is finite), else ``G.G`` (finite iff every
entry is; its square root bounds ``max|G|``). Overflow is excluded *in advance* from bounds on
``max|G|`` and ``max|Q|`` (or ``max|W|``); when they cannot exclude it, the step is computed into
scratch tensors, checked, and only then copied.

Dual cache (``cache_dual=True``, the default; CPU fast path, p != 2): ``state["dual"]`` holds
``Q = grad psi(W)`` from the last step, so a step takes one power instead of two (one more buffer,
like Adam's); what invalidates it and what is not detected: `experiments.optim.dual`.

Fused (``fused=True``; CPU, float32/float64 tensors of at least 65,536 entries, p != 2, dual cache on):
the dual update and inverse map run as one loop on a double-buffered dual: a small C kernel with
non-temporal stores (`experiments.optim.native`) for integer, cube-root and square-root exponents,
else inductor's loop (`experiments.optim.fused`; the same bits save float64 cube roots). Once the
parameter is known to be bit for bit that loop's inverse map of the dual (after every fused step),
the gradient is not read first: the loop's own maximum refuses the step and the step is undone
exactly, the same all-or-nothing guarantee (`experiments.optim.dual`); otherwise the checks above run
first. The first use builds the kernel (under a second for the C kernel; about 30 s for inductor's,
seconds from its cache); where neither can be built, a warning and the eager kernels. At p = 2
(no ``normalize_gradient``) it writes ``add_``'s bits with an undo log instead of the check read
(`experiments.optim.sgdfused`, AVX-512). On CUDA (p != 2): a Triton kernel per parameter, committed
if all is finite (`experiments.optim.cudastep`). Not small CPU tensors, cache_dual=False at p != 2.

Speed (10M parameters, 2-core machine; benchmarks/README.md): eager p != 2 1.8-3.2x a fused Adam
step; ``fused=True`` 0.61-0.94x (float32), 0.51-0.96x (float64); p = 2 about 1.4x SGD (one more read
of G), 1.01-1.20x with ``fused=True``. The write phase picks its thread count by timing
(``threads=None``, `experiments.optim.threads`; eager chunks synchronise their threads, so under load
one can be faster), with bit-identical results.
"""

from __future__ import annotations

import warnings
from fractions import Fraction
from typing import Any, Callable, Iterable

import torch
from torch.optim import Optimizer

from certify.errors import MdcertError
from certify.exact import format_fraction
from experiments.optim.cpu import CpuFastPathMixin
from experiments.optim.cudastep import CudaFusedMixin
from experiments.optim.foreach import foreach_update
from experiments.optim.dual import FUSED_MIN_NUMEL, DualCacheMixin, all_or_nothing
from experiments.optim.kernels import (
    PowPlan,
    mirror_step,
    p_text,
    simple_update,
    validate_lr,
    validate_p,
)
from experiments.optim.parammap import ParamMap
from experiments.optim.threads import ThreadChoice

__all__ = ["LpMirrorDescent", "mirror_step", "PowPlan", "FUSED_MIN_NUMEL"]


def _validate_fused(fused, foreach, differentiable) -> None:
    if fused and foreach:
        raise MdcertError(
            "LpMirrorDescent: fused=True and foreach=True cannot be combined; choose one"
        )
    if fused and differentiable:
        raise MdcertError(
            "LpMirrorDescent: fused=True does not support differentiable=True; drop one of them"
        )


class LpMirrorDescent(CpuFastPathMixin, DualCacheMixin, CudaFusedMixin, Optimizer):
    """Mirror descent with the l_p potential ``psi(W) = (1/p)||W||_p^p`` (docs/theory.md section 2).

    Args:
        params: parameters or param groups (each group may set its own ``lr`` and ``p``).
        lr: step size ``eta > 0``.
        p: exponent ``1 < p < inf``, exact (``"1.75"``, ``"7/4"``, ``Fraction(7, 4)`` or ``1.75``).
            Each group also stores ``p_exact`` (``"7/4"``).
        normalize_gradient: divide each parameter's gradient by its dual norm ``||G||_q``.
        maximize: maximize the objective.
        cache_dual: keep the dual variable ``Q = grad psi(W)`` in ``state["dual"]`` (CPU fast path, p != 2)
            so that a step needs only the inverse map; ``Q`` is recomputed from the parameter whenever
            the parameter may have changed outside the optimizer (see the module docstring for what is
            detected). ``False``: recompute ``grad psi(W)`` from the parameter at every step.
        foreach: use ``torch._foreach_*`` kernels (``None``: only on CUDA).
        fused: run the step as one compiled loop (CPU: `experiments.optim.fused`; CUDA:
            `experiments.optim.cudastep`; where it applies: the module docstring). Cannot be
            combined with ``foreach=True`` or ``differentiable=True``.
        differentiable: keep the step differentiable (out-of-place reference path).
        threads: the CPU thread count of the writes (and of the checks where it cannot change
            them): ``None`` (default) chooses 1 or ``torch.get_num_threads()`` by timing the steps
            (`experiments.optim.threads`); an int fixes it. Results are bit-identical whatever the count (only the speed changes). Steps
            that run a ``fused`` kernel keep torch's count (another would recompile it). Not part
            of ``state_dict()`` or a pickle (an unpickled optimizer chooses automatically).

    Raises:
        ValueError (MdcertError): invalid ``lr`` or ``p``, with the bad value in the message;
            ``fused=True`` together with ``foreach=True`` or ``differentiable=True``; ``threads``
            not None or an int >= 1.

    Example:
        >>> opt = LpMirrorDescent(model.parameters(), lr=0.1, p="1.75")
    """

    def __init__(
        self,
        params: Iterable,
        lr: float = 1e-3,
        p: Any = 2,
        *,
        normalize_gradient: bool = False,
        maximize: bool = False,
        foreach: bool | None = None,
        differentiable: bool = False,
        cache_dual: bool = True,
        fused: bool | None = None,
        threads: int | None = None,
    ) -> None:
        lr = validate_lr(lr)
        exact = validate_p(p)
        _validate_fused(fused, foreach, differentiable)
        defaults = dict(
            lr=lr,
            p=p,
            p_exact=format_fraction(exact),
            normalize_gradient=normalize_gradient,
            maximize=maximize,
            foreach=foreach,
            differentiable=differentiable,
            cache_dual=bool(cache_dual),
            fused=fused,
        )
        self._plans: dict[Fraction, tuple[PowPlan, PowPlan]] = {}
        self._scratch: dict[tuple, torch.Tensor] = {}
        self._bounds = ParamMap()
        self._stamps = ParamMap()
        self._spares = ParamMap()  # the second dual buffer of fused steps
        self._sgd_logs = ParamMap()  # undo logs of fused p = 2 steps
        self._sgd_wait = ParamMap()  # fused p = 2: (steps to wait, wait length)
        self._fused_warned: set = set()
        self._threads = ThreadChoice(threads)
        self._compiled_step = False
        super().__init__(params, defaults)

    def add_param_group(self, param_group: dict) -> None:
        lr = param_group.get("lr", self.defaults["lr"])
        p = param_group.get("p", self.defaults["p"])
        param_group["lr"] = validate_lr(lr) if not isinstance(lr, torch.Tensor) else lr
        param_group["p_exact"] = format_fraction(validate_p(p))
        _validate_fused(
            param_group.get("fused", self.defaults["fused"]),
            param_group.get("foreach", self.defaults["foreach"]),
            param_group.get("differentiable", self.defaults["differentiable"]),
        )
        super().add_param_group(param_group)

    def __setstate__(self, state: dict) -> None:
        super().__setstate__(state)
        for name, make in (("_plans", dict), ("_scratch", dict), ("_fused_warned", set)):
            self.__dict__.setdefault(name, make())
        for name in ("_bounds", "_stamps", "_spares", "_sgd_logs", "_sgd_wait"):
            self.__dict__.setdefault(name, ParamMap())
        self.__dict__.setdefault("_threads", ThreadChoice())
        self.__dict__.setdefault("_compiled_step", False)
        group_defaults = dict(cache_dual=True, fused=None, normalize_gradient=False, maximize=False)
        group_defaults.update(foreach=None, differentiable=False, p=2)
        for group in self.param_groups:
            for key, value in group_defaults.items():
                group.setdefault(key, value)
            group.setdefault("p_exact", format_fraction(validate_p(group["p"])))

    def _plan(self, exact: Fraction) -> tuple[PowPlan, PowPlan]:
        plan = self._plans.get(exact)
        if plan is None:
            plan = self._plans[exact] = (PowPlan(exact - 1), PowPlan(1 / (exact - 1)))
        return plan

    # ------------------------------------------------------------------ step
    @torch.no_grad()
    def step(self, closure: Callable[[], float] | None = None):
        """Perform one mirror-descent step on every parameter with a gradient (all or none are updated).

        Args:
            closure: re-evaluates the model and returns the loss (run with grad enabled).

        Returns:
            The closure's loss, or None.
        """
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        jobs = []
        for gi, group in enumerate(self.param_groups):
            lr = validate_lr(group["lr"])
            exact = validate_p(group["p"])
            group["p_exact"] = p_text(exact)
            for pi, param in enumerate(group["params"]):
                if param.grad is None:
                    continue
                if param.grad.is_sparse:
                    raise RuntimeError("LpMirrorDescent does not support sparse gradients")
                jobs.append((gi, pi, group, param, lr, exact))
        if not jobs:
            return loss
        if any(group["differentiable"] for _, _, group, *_ in jobs):
            return self._step_differentiable(jobs, loss)
        self._step_nograd(jobs)
        return loss

    def _step_differentiable(self, jobs, loss):
        with torch.enable_grad():
            news = []
            for gi, pi, group, param, lr, exact in jobs:
                self._check_grad(gi, pi, param.grad, exact, lr)
                if group["normalize_gradient"] and not bool(param.grad.any()):
                    self._zero_gradient(gi, pi, param)
                new = simple_update(
                    param.clone(),
                    param.grad,
                    lr,
                    exact,
                    group["maximize"],
                    group["normalize_gradient"],
                )
                self._check_result(gi, pi, param, new, exact, lr)
                news.append(new)
            for (gi, pi, group, param, lr, exact), new in zip(jobs, news):
                param.copy_(new)
        self._count_steps(jobs)
        return loss

    def _count_steps(self, jobs) -> None:
        for job in jobs:
            state = self.state[job[3]]
            state["step"] = int(state.get("step", 0)) + 1

    def _use_foreach(self, group, params) -> bool:
        flag = group["foreach"]
        if flag is None:
            return all(p.device.type == "cuda" for p in params)
        return bool(flag)

    def _step_nograd(self, jobs) -> None:
        # phase 1 (`_plan_step`: every check, nothing written), then phase 2 (the writes), under the
        # thread counts of `experiments.optim.threads`
        work = sum(job[3].numel() for job in jobs if job[3].device.type == "cpu")
        whole = all(self._thread_free(job) for job in jobs)
        self._threads.step(lambda: self._plan_step(jobs), work, whole=whole)
        self._count_steps(jobs)

    def _thread_free(self, job) -> bool:
        """Whether this job's checks and plan are bit-identical for every thread count: the chunked
        CPU path, no norm, no compiled loop (docs/theory.md section 2.3)."""
        _, _, group, param, _, exact = job
        grad = param.grad
        fused = group["fused"] and exact != 2 and group["cache_dual"]
        return (
            param.device.type == "cpu"
            and not group["normalize_gradient"]
            and not group["foreach"]
            and param.is_contiguous()
            and grad.is_contiguous()
            and grad.dtype == param.dtype
            and param.dtype in (torch.float32, torch.float64)
            and not (fused and param.numel() >= FUSED_MIN_NUMEL)
        )

    def _plan_step(self, jobs) -> tuple[list[Callable[[], None]], bool]:
        """Phase 1: check every gradient and plan each update (nothing is written here); returns the
        commits and whether one runs a compiled loop (which keeps torch's thread count)."""
        self._compiled_step = False
        commits: list[Callable[[], None]] = []
        by_group: dict[int, list] = {}
        for job in jobs:
            by_group.setdefault(job[0], []).append(job)
        for gi, group_jobs in by_group.items():
            group = group_jobs[0][2]
            compiled, group_jobs = self._cuda_fused_split(group, group_jobs)
            if compiled:
                commits.extend(self._cuda_fused_group(compiled))
            if not group_jobs:
                continue
            params = [job[3] for job in group_jobs]
            if self._use_foreach(group, params) and all(p.grad.dtype == p.dtype for p in params):
                commits.append(self._foreach_group(group_jobs))
            else:
                for job in group_jobs:
                    commits.append(self._single(job))
        return all_or_nothing(commits), self._compiled_step

    # ------------------------------------------------------------------ checks
    @staticmethod
    def _where(gi: int, pi: int, param: torch.Tensor) -> str:
        return f"parameter {pi} of param group {gi} (shape {tuple(param.shape)}, {param.dtype})"

    def _check_grad(self, gi, pi, grad, exact, lr) -> None:
        if not bool(torch.isfinite(grad).all()):
            raise FloatingPointError(
                f"LpMirrorDescent: non-finite gradient in {self._where(gi, pi, grad)}; the parameter was left "
                f"unchanged; check the loss for overflow or use a smaller lr (lr={lr}, p={exact})"
            )

    def _zero_gradient(self, gi, pi, param) -> None:
        warnings.warn(
            f"LpMirrorDescent: the gradient of {self._where(gi, pi, param)} is exactly zero, so a normalized "
            f"step has no direction and none was taken; if the loss saturated (softmax weights underflowing), "
            f"the gradient underflowed: experiments.paths.run_paths (mdcert paths --normalize) forms it from "
            f"e^M-scaled weights and keeps its direction (docs/theory.md section 2.3)",
            RuntimeWarning,
            stacklevel=2,
        )

    def _check_result(self, gi, pi, param, new, exact, lr) -> None:
        if not bool(torch.isfinite(new).all()):
            if not bool(torch.isfinite(param).all()):
                raise FloatingPointError(
                    f"LpMirrorDescent: {self._where(gi, pi, param)} contains NaN or Inf; it was left unchanged"
                )
            raise FloatingPointError(
                f"LpMirrorDescent: the mirror step overflowed {param.dtype} in {self._where(gi, pi, param)}; "
                f"the parameter was left unchanged; use a smaller lr (lr={lr}, p={exact})"
            )

    # ------------------------------------------------------------------ simple / fast single tensor
    def _single(self, job) -> Callable[[], None]:
        gi, pi, group, param, lr, exact = job
        grad = param.grad
        fast = (
            param.device.type == "cpu"
            and param.is_contiguous()
            and grad.is_contiguous()
            and grad.dtype == param.dtype
            and param.dtype in (torch.float32, torch.float64)
            and param.numel() > 0
        )
        if not fast:
            self._check_grad(gi, pi, grad, exact, lr)
            if group["normalize_gradient"] and not bool(grad.any()):
                self._zero_gradient(gi, pi, param)
            new = simple_update(
                param, grad, lr, exact, group["maximize"], group["normalize_gradient"]
            )
            self._check_result(gi, pi, param, new, exact, lr)
            return lambda: param.copy_(new)
        return self._fast_cpu(gi, pi, group, param, grad, lr, exact)

    # ------------------------------------------------------------------ foreach
    def _foreach_group(self, group_jobs) -> Callable[[], None]:
        _, _, group, _, lr, exact = group_jobs[0]
        params = [job[3].detach() for job in group_jobs]
        grads = [job[3].grad.detach() for job in group_jobs]
        raw = torch._foreach_norm(grads, float("inf"))
        norms = torch.stack([n.float() for n in raw])
        if not bool(torch.isfinite(norms).all()):
            for gi, pi, _, param, _, _ in group_jobs:
                self._check_grad(gi, pi, param.grad, exact, lr)
        if group["normalize_gradient"] and not bool(
            norms.all()
        ):  # float32 rounds subnormal norms to 0
            for (gi, pi, _, param, _, _), zero in zip(
                group_jobs, torch.stack([n == 0 for n in raw]).tolist()
            ):
                if zero:
                    self._zero_gradient(gi, pi, param)
        news = foreach_update(
            params,
            grads,
            lr,
            exact,
            maximize=group["maximize"],
            normalize=group["normalize_gradient"],
        )
        finite = torch.stack([n.float() for n in torch._foreach_norm(news, float("inf"))])
        if not bool(torch.isfinite(finite).all()):
            for (gi, pi, _, param, lr_, _), new in zip(group_jobs, news):
                self._check_result(gi, pi, param, new, exact, lr_)

        def commit() -> None:
            torch._foreach_copy_(params, news)

        return commit
