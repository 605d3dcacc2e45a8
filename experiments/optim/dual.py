"""The cached-dual CPU path of `experiments.optim.optimizer.LpMirrorDescent` (docs/theory.md section 2), as a mixin.

With ``cache_dual=True`` (the default; CPU fast path, p != 2) ``state["dual"]`` holds
``Q = grad psi(W)`` as produced by the last step, so a step is ``Q <- Q - lr G; W <- (grad psi)^{-1}(Q)``
with one power instead of two (one more parameter-sized buffer, like Adam's). ``Q`` equals
``grad psi(W)`` up to the rounding of ``W`` (entries whose inverse underflows keep their dual value,
as exact arithmetic would). The cache is trusted only if the
parameter's version counter and storage pointer are those recorded after the optimizer's own write,
``p`` is unchanged and 64 evenly spaced entries are unchanged; otherwise ``Q`` is recomputed from the
parameter. Detected: in-place ops on the parameter or ``.detach()`` views (version counter), rebinding
``param.data = ...`` (storage), whole-tensor writes through ``.data`` (sampled entries), a new ``p``.
NOT detected: a write through ``.data`` (or a numpy view) that leaves the 64 sampled entries unchanged;
the next step then continues from the cached dual. Use ``cache_dual=False`` (``grad psi(W)`` from the
parameter at every step) when the parameter is edited that way. ``state_dict()`` contains the dual;
on load it is accepted only if its inverse map rounds to the parameter exactly, entry for entry (so a
resumed run continues bit for bit), else recomputed; a state without ``"dual"`` loads too.
Writes through ``.data`` with ``cache_dual=False``: if one makes the ``max|W|`` bound stale and the step
then overflows, the in-cache check still raises (the parameter is then partially updated, as the
message says); for p = 2 such a step behaves like SGD's ``add_``.

With ``fused=True`` the step ``Q <- Q + coef G; W <- (grad psi)^{-1}(Q)`` is one compiled loop
(`experiments.optim.fused`), used for float32/float64 tensors of at least ``FUSED_MIN_NUMEL``
entries; a loaded dual is then checked against that kernel's inverse map (the same code).

The mixin uses the host optimizer's ``state``, ``_plan``, ``_gmax``, ``_check_result`` and the
``_stamps`` / ``_fused_warned`` / ``_compiled_step`` attributes that `LpMirrorDescent.__init__` creates.
"""

from __future__ import annotations

import math
import warnings
from fractions import Fraction
from typing import Callable

import torch

from experiments.optim import fused as _fused
from experiments.optim.kernels import (
    PowPlan,
    absmax,
    chunked_dual,
    chunked_inverse,
    chunked_step_cached,
    inverse_reproduces,
)

__all__ = ["DualCacheMixin", "FUSED_MIN_NUMEL"]

FUSED_MIN_NUMEL = (
    1 << 16
)  # smaller tensors keep the eager kernels (and never trigger a compilation)


def _reproduces(
    W: torch.Tensor,
    Q: torch.Tensor,
    inv: PowPlan,
    scratch: torch.Tensor,
    tmp: torch.Tensor,
    kernel=None,
) -> bool:
    """Does the inverse map of ``Q`` round to ``W`` exactly (with the fused kernel when given: its step
    with ``G = 0`` computes exactly the inverse map its steps compute)?"""
    if kernel is None:
        return inverse_reproduces(W, Q, inv, scratch, tmp)
    q, out = Q.clone(), torch.empty_like(W)
    kernel(q, out, torch.zeros_like(W), torch.tensor(0.0, dtype=torch.float64))
    return torch.equal(out, W)


class DualCacheMixin:
    """``state["dual"]`` bookkeeping and the cached (optionally fused) step of `LpMirrorDescent`."""

    def _fused_kernel(self, group, exact: Fraction, W: torch.Tensor):
        """The compiled dual-step kernel when ``fused`` applies to this flat tensor, else None."""
        if not group["fused"] or W.numel() < FUSED_MIN_NUMEL:
            return None
        try:
            kernel = _fused.step_kernel(1 / (exact - 1), W.dtype)
        except _fused.KernelUnavailable as exc:
            key = (exact, W.dtype)
            if key not in self._fused_warned:
                self._fused_warned.add(key)
                warnings.warn(
                    f"LpMirrorDescent(fused=True): {exc}; using the eager CPU kernels (p={exact}, "
                    f"{W.dtype})",
                    RuntimeWarning,
                    stacklevel=4,
                )
            return None
        # the write phase then keeps torch's thread count: dynamo guards the compiled loop on it, so
        # another count would recompile inside the write phase (experiments.optim.threads)
        self._compiled_step = True
        return kernel

    def _fingerprint(self, W: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """A few evenly spaced entries of ``W`` (flat) and their positions: a cheap sampled check
        that catches whole-tensor writes through ``.data`` (it can refute, never prove, "unchanged")."""
        n = W.numel()
        idx = torch.linspace(0, n - 1, steps=min(n, 64)).round().long()
        return idx, W.index_select(0, idx)

    def _stamp(
        self, param: torch.Tensor, Q: torch.Tensor, W: torch.Tensor, exact: Fraction, qmax: float
    ) -> None:
        idx, sample = self._fingerprint(W)
        self._stamps[param] = (param._version, param.data_ptr(), Q, exact, qmax, idx, sample)

    def _dual(
        self,
        param: torch.Tensor,
        W: torch.Tensor,
        exact: Fraction,
        q: torch.Tensor,
        tmp: torch.Tensor,
        kernel=None,
    ) -> tuple[torch.Tensor, float]:
        """The cached dual ``Q = grad psi(W)`` (flat) and an upper bound on ``max|Q|``; ``W`` is not written.

        The cache is used when the parameter's version counter and storage are those recorded after
        the optimizer's own last write, ``p`` is the same, and a sample of entries is unchanged.
        Otherwise a ``state["dual"]`` of the right shape (e.g. from `load_state_dict`) is accepted
        only if its inverse map (the fused ``kernel`` when given) rounds to the parameter exactly,
        entry for entry; failing that, ``Q`` is recomputed from the parameter.
        """
        state = self.state[param]
        fwd, inv = self._plan(exact)
        Q = state.get("dual")
        usable = (
            isinstance(Q, torch.Tensor)
            and Q.shape == param.shape
            and Q.dtype == param.dtype
            and Q.device == param.device
            and Q.is_contiguous()
            and Q.data_ptr() != param.data_ptr()
        )
        if not usable:
            Q = state["dual"] = torch.empty_like(param, memory_format=torch.contiguous_format)
        Qf = Q.detach().view(-1)
        stamp = self._stamps.get(param)
        if (
            usable
            and stamp is not None
            and stamp[2] is Q
            and stamp[0] == param._version
            and stamp[1] == param.data_ptr()
            and stamp[3] == exact
            and torch.equal(W.index_select(0, stamp[5]), stamp[6])
        ):
            return Qf, stamp[4]
        foreign = stamp is None or stamp[2] is not Q  # e.g. loaded by load_state_dict
        if usable and foreign and _reproduces(W, Qf, inv, q, tmp, kernel):
            qmax = absmax(Qf)  # loaded dual consistent with the parameter: keep it
        else:
            qmax = chunked_dual(Qf, W, fwd, tmp)
        self._stamp(param, Q, W, exact, qmax)
        return Qf, qmax

    def _fast_cached(
        self, gi, pi, param, W, G, lr, exact, coef, gmax, q, tmp, kernel=None
    ) -> Callable[[], None]:
        Q, qmax = self._dual(param, W, exact, q, tmp, kernel)
        _, inv = self._plan(exact)
        limit = torch.finfo(param.dtype).max / 8

        eps = torch.finfo(param.dtype).eps

        def bounds(qm: float, gm: float) -> tuple[float, float]:
            """``|Q+| <= (max|Q| + |coef| max|G|)(1 + 4 eps)``; ``|W+| = |Q+|^{1/(p-1)}``."""
            try:
                qb = (qm + abs(coef) * gm) * (1 + 4 * eps)
                return qb, max(qb, qb**inv.value)
            except OverflowError:
                return math.inf, math.inf

        if gmax is None:
            cheap = bounds(qmax, torch.finfo(G.dtype).max)[1] <= limit / 16
            gmax = self._gmax(gi, pi, param.grad, G, exact, lr, cheap)
        qb, bound = bounds(qmax, gmax)
        if not bound <= limit:  # the running bounds are too loose: take the exact maxima
            qmax = absmax(Q)
            qb, bound = bounds(qmax, absmax(G))
        if bound <= limit:  # overflow excluded in advance: update Q and W in place, chunk by chunk

            def commit() -> None:
                if kernel is None:
                    chunked_step_cached(W, Q, G, coef, inv, tmp)
                else:  # the dual update and the inverse map in one compiled pass
                    kernel(Q, W, G, torch.tensor(coef, dtype=torch.float64))
                self._stamp(
                    param, self.state[param]["dual"], W, exact, qb
                )  # qb bounds the new max|Q|

            return commit
        T = torch.empty_like(W)  # own buffers: commits run after every check
        if kernel is None:
            Qn = torch.add(Q, G, alpha=coef)
            chunked_inverse(T, Qn, inv, tmp)
        else:
            Qn = Q.clone()
            kernel(Qn, T, G, torch.tensor(coef, dtype=torch.float64))
        self._check_result(gi, pi, param, T, exact, lr)

        def commit_checked() -> None:
            W.copy_(T)
            Q.copy_(Qn)
            self._stamp(param, self.state[param]["dual"], W, exact, absmax(Qn))

        return commit_checked
