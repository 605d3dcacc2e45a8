"""The CPU fast path of `experiments.optim.optimizer.LpMirrorDescent` (one contiguous float32/float64
tensor): overflow excluded in advance from cheap bounds on ``max|G|`` and ``max|Q|`` (``G.sum()`` or
``G.G``, see the optimizer's docstring and docs/theory.md section 2.3), else the step computed into
scratch and checked before it is copied; chunked in-place power kernels of `experiments.optim.kernels`.

A mixin: `LpMirrorDescent` supplies ``_where``, ``_check_grad``, ``_check_result``,
``_zero_gradient``, ``_plan``, ``_scratch``, ``_bounds``, ``_sgd_logs``, ``_sgd_wait`` and (from
`experiments.optim.dual`) ``_fused_kernel`` / ``_fast_cached`` / ``_hold_count``. With
``fused=True`` a p = 2 step of a large tensor is the speculative pass of
`experiments.optim.sgdfused`.
"""

from __future__ import annotations

import math
from typing import Callable

import torch

from experiments.optim import kernels, sgdfused
from experiments.optim.dual import FUSED_MIN_NUMEL
from experiments.optim.native import NativeUnavailable
from experiments.optim.kernels import absmax, chunked_step_direct, dual_unit, pow2_scaled, unit_norm

__all__ = ["CpuFastPathMixin"]


class CpuFastPathMixin:
    """Bounds and the single-tensor CPU step of `LpMirrorDescent` (see the module docstring)."""

    def _buffer(self, key, n: int, like: torch.Tensor) -> torch.Tensor:
        full = (key, like.dtype, like.device)
        buf = self._scratch.get(full)
        if buf is None or buf.numel() < n:
            buf = self._scratch[full] = torch.empty(n, dtype=like.dtype, device=like.device)
        return buf[:n]

    def _abs_bound(self, param: torch.Tensor) -> float:
        """Upper bound on ``max|param|`` (exact max when the tensor changed since our last write)."""
        cached = self._bounds.get(param)
        stamp = (param._version, param.data_ptr())
        finfo_max = torch.finfo(param.dtype).max
        if cached is not None and cached[:2] == stamp and cached[2] <= finfo_max / 16:
            return cached[2]
        return absmax(param.detach())

    def _grad_bound(self, gi, pi, grad, G, exact, lr) -> float:
        """Upper bound on ``max|G|`` from one fast reduction; raises on a non-finite gradient.

        ``sqrt(G.G)`` bounds ``max|G|`` (a rounded sum of non-negative terms is at least each
        rounded term; entries whose square underflows are below ``sqrt(tiny)``). When ``G.G``
        overflows, the exact maximum is computed instead.
        """
        sq = float(torch.dot(G, G))
        if math.isfinite(sq):
            return max(math.sqrt(sq), math.sqrt(torch.finfo(G.dtype).tiny)) * (1 + 1e-3)
        gmax = absmax(G)  # NaN/Inf propagate
        if not math.isfinite(gmax):
            self._check_grad(gi, pi, grad, exact, lr)
        return gmax

    def _gmax(self, gi, pi, grad, G, exact, lr, cheap: bool) -> float:
        """Upper bound on ``max|G|``; raises on a non-finite gradient (nothing written yet).

        With ``cheap`` (the caller's bounds exclude overflow even for ``max|G| = finfo.max``, with a
        factor 16 to spare so that the running bounds stay usable for several steps) only finiteness
        is needed: ``G.sum()`` is finite only if every entry is (NaN and Inf propagate), so
        ``finfo.max`` is then a bound; a sum that overflows falls back to `_grad_bound`.
        """
        if cheap and math.isfinite(float(G.sum())):
            return torch.finfo(G.dtype).max
        return self._grad_bound(gi, pi, grad, G, exact, lr)

    def _fused_sgd(self, gi, pi, param, W, G, lr, exact, coef) -> Callable[[], None] | None:
        """The speculative p = 2 commit of `experiments.optim.sgdfused` (no check read of G), or
        None: a small tensor, no kernel here (no AVX-512 target or no C compiler; the checked route
        gives the same bits), or a wait after a full undo log."""
        if W.numel() < FUSED_MIN_NUMEL:
            return None
        wait = self._sgd_wait.get(param)
        if wait is not None and wait[0] > 0:
            self._sgd_wait[param] = (wait[0] - 1, wait[1])
            return None
        try:
            kernel = sgdfused.sgd_kernel(W.dtype)
        except NativeUnavailable:
            return None
        log = self._sgd_logs.get(param)
        if log is None or log.n != W.numel() or log.val.dtype != W.dtype:
            log = self._sgd_logs[param] = kernel.log(W.numel())
        self._hold_count(kernel)
        return sgdfused.SpeculativeSgd(self, (gi, pi, param, lr, exact), W, G, coef, kernel, log)

    @staticmethod
    def _bounds_of(wmax: float, alpha: float, gmax: float, pm1: float) -> tuple[float, float]:
        """Bounds on ``|Q| <= wmax^{p-1} + alpha gmax`` and ``|W+| <= |Q|^{1/(p-1)}``."""
        try:
            qb = wmax**pm1 + alpha * gmax
            return qb, qb ** (1.0 / pm1)
        except OverflowError:
            return math.inf, math.inf

    def _fast_cpu(self, gi, pi, group, param, grad, lr, exact) -> Callable[[], None]:
        W, G = param.detach().view(-1), grad.detach().view(-1)
        n = W.numel()
        alpha, gmax = lr, None
        if group["normalize_gradient"]:
            gmax = self._grad_bound(gi, pi, grad, G, exact, lr)  # raises on a non-finite gradient
            unit = dual_unit(G, float(exact / (exact - 1)))
            if unit is None:
                self._zero_gradient(gi, pi, param)
                return lambda: None
            norm = unit_norm(unit, G.dtype)
            if norm is not None:
                alpha = lr / norm
            else:  # at the edge of the float range (a saturated loss): scale G by a power of two first
                G, gmax = pow2_scaled(G, unit[0]) / unit[1], 1.0 + 1e-3
        sign = 1.0 if group["maximize"] else -1.0
        limit = torch.finfo(param.dtype).max / 8
        pm1 = float(exact - 1)
        if exact == 2 and gmax is None and group["fused"]:
            commit = self._fused_sgd(gi, pi, param, W, G, lr, exact, sign * alpha)
            if commit is not None:
                return commit
        if exact != 2 and group["cache_dual"]:
            q = self._buffer("q", min(n, kernels.CHUNK), W)
            tmp = self._buffer("tmp", min(n, kernels.CHUNK), W)
            kernel = self._fused_kernel(group, exact, W)
            return self._fast_cached(
                gi, pi, param, W, G, lr, exact, sign * alpha, gmax, q, tmp, kernel
            )
        wmax = self._abs_bound(param)
        if gmax is None:
            cheap = max(self._bounds_of(wmax, alpha, torch.finfo(G.dtype).max, pm1)) <= limit / 16
            gmax = self._gmax(gi, pi, grad, G, exact, lr, cheap)
        qb, wb = self._bounds_of(wmax, alpha, gmax, pm1)
        if not max(qb, wb) <= limit:  # the cheap bounds cannot exclude overflow: tighten them
            gmax = absmax(G)
            wmax = absmax(W)
            qb, wb = self._bounds_of(wmax, alpha, gmax, pm1)
        safe = math.isfinite(wmax) and max(qb, wb) <= limit
        new_bound = wb * (1 + 1e-3)

        def record() -> None:
            self._bounds[param] = (param._version, param.data_ptr(), new_bound)

        if exact == 2:
            if safe:

                def commit() -> None:
                    W.add_(G, alpha=sign * alpha)  # the same add_ as torch.optim.SGD
                    record()

                return commit
            T = torch.empty_like(W)  # own buffer: commits run after every check
            torch.add(W, G, alpha=sign * alpha, out=T)
            self._check_result(gi, pi, param, T, exact, lr)
            return lambda: W.copy_(T)
        fwd, inv = self._plan(exact)
        q = self._buffer("q", min(n, kernels.CHUNK), W)
        tmp = self._buffer("tmp", min(n, kernels.CHUNK), W)

        def compute(target: torch.Tensor, extremes: list | None = None) -> None:
            chunked_step_direct(target, W, G, sign * alpha, fwd, inv, q, tmp, extremes)

        if safe:

            def commit() -> None:
                extremes: list[torch.Tensor] = []
                compute(W, extremes)
                ext = torch.stack(extremes).abs().max()
                if not bool(torch.isfinite(ext)):
                    # only reachable when W was changed behind autograd's version counter (``.data``)
                    raise FloatingPointError(
                        f"LpMirrorDescent: the mirror step overflowed {param.dtype} in {self._where(gi, pi, param)} "
                        f"after the parameter was modified outside autograd (e.g. through .data), which the "
                        f"overflow pre-check could not see; the parameter is now partially updated; use a "
                        f"smaller lr (lr={lr}, p={exact})"
                    )
                self._bounds[param] = (param._version, param.data_ptr(), float(ext))

            return commit
        T = torch.empty_like(W)  # own buffer: commits run after every check
        compute(T)
        self._check_result(gi, pi, param, T, exact, lr)
        return lambda: W.copy_(T)
