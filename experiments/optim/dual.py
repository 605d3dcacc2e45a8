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
entries; a loaded dual is then checked against that kernel's inverse map (the same code). The dual is
double-buffered (``state["dual"]`` and a spare of the same size, owned by the optimizer, not saved,
swapped by each step): the loop reads the old dual and ``G``, writes the new dual into the spare and
``W`` in place, and returns ``max|W+|`` from the same pass (not finite iff some entry of ``Q+`` or
``W+`` is not; it bounds nothing about ``Q+``, so the stamp's bound on ``max|Q|`` is then unknown,
and the rare checked step after a fused one takes the exact maxima). When the last write to ``W`` was
that kernel's (``W`` is bit for bit the kernel's inverse map of the cached dual: after every fused
step, and after a loaded dual was verified so; the stamp above also records the thread count), the
step runs without checking ``G`` first ("speculative"): if the maximum is not finite (NaN/Inf in
``G``, an overflow of ``Q`` or of the power), ``W`` is restored by the same kernel's inverse map of
the old dual (``G = 0``, ``coef = -0.0``: ``Q + (-0.0) 0 = Q`` bit for bit), which is bit for bit the
``W`` that was there, the old dual stays, and the step raises as before: nothing changed. Otherwise
(first step, a changed parameter) the checked route of the eager path runs first. Speculative steps
of a multi-parameter step run before all other writes, and a refusal undoes the ones already done
(`_Speculative.undo`), so the step stays all-or-nothing. An outside write that the stamp misses
(above) would be lost on a refusal, as it is lost by any step from the cached dual.

The mixin uses the host optimizer's ``state``, ``_plan``, ``_gmax``, ``_check_result`` and the
``_stamps`` / ``_fused_warned`` / ``_compiled_step`` attributes that `LpMirrorDescent.__init__` creates.
"""

from __future__ import annotations

import math
import warnings
from fractions import Fraction
from typing import Callable, NamedTuple

import torch

from experiments.optim import fused as _fused
from experiments.optim.buffers import state_buffer
from experiments.optim.kernels import (
    PowPlan,
    absmax,
    chunked_dual,
    chunked_inverse,
    chunked_step_cached,
    inverse_reproduces,
    sample_positions,
)

__all__ = ["DualCacheMixin", "FUSED_MIN_NUMEL", "all_or_nothing"]

# smaller tensors keep the eager kernels (and never trigger a compilation)
FUSED_MIN_NUMEL = 1 << 16


def _threads_matter(kernel) -> bool:
    """Whether the kernel's bits depend on the thread count (inductor's loops: the count selects the
    compiled variant; the streaming kernel of `experiments.optim.native`: never)."""
    return getattr(kernel, "threads_matter", True)


class _Stamp(NamedTuple):
    """The state recorded after the optimizer's own write to a parameter (`DualCacheMixin._stamp`)."""

    version: int  #: ``param._version`` after the write
    data_ptr: int  #: ``param.data_ptr()`` (storage) after the write
    dual: torch.Tensor  #: the cached dual ``Q`` (``state["dual"]``) the write left
    p: Fraction  #: the exponent of the step
    qmax: float  #: an upper bound on ``max|Q|``
    idx: torch.Tensor  #: positions of the sampled entries of ``W`` (flat)
    sample: torch.Tensor  #: the sampled entries of ``W``
    threads: int | None  #: if ``W`` is the fused kernel's inverse map: torch's count, or 0 (any)


def _inverse(kernel, Q: torch.Tensor, W: torch.Tensor, spare: torch.Tensor) -> float:
    """``W <-`` the fused kernel's inverse map of ``Q`` (its step with ``G = 0``, ``coef = -0.0``,
    bit for bit the map its steps apply); ``spare`` receives a copy of ``Q``. Returns the maximum."""
    zero = torch.tensor(-0.0, dtype=torch.float64)
    return float(kernel(Q, spare, W, torch.zeros_like(Q), zero))


def _reproduces(
    W: torch.Tensor,
    Q: torch.Tensor,
    inv: PowPlan,
    scratch: torch.Tensor,
    tmp: torch.Tensor,
    kernel=None,
) -> bool:
    """Does the inverse map of ``Q`` round to ``W`` exactly (with the fused kernel when given: bit for
    bit, signs of zeros included, the inverse map its steps compute)?"""
    if kernel is None:
        return inverse_reproduces(W, Q, inv, scratch, tmp)
    out = torch.empty_like(W)
    _inverse(kernel, Q, out, torch.empty_like(W))
    return torch.equal(_fused.bits_of(out), _fused.bits_of(W))


class _Speculative:
    """A fused step without a prior check, undone exactly when it fails (see the module docstring)."""

    def __init__(self, opt, job, W, G, Q, qmax, coef, kernel) -> None:
        self.opt, self.job, self.W, self.G, self.kernel = opt, job, W, G, kernel
        self.Q, self.qmax, self.coef = Q, qmax, coef  # Q: state["dual"] (param-shaped)
        self.spare = opt._spare(job[2], Q)

    def _restore(self) -> None:
        """``W <-`` the inverse map of the old dual: the ``W`` of before the step, bit for bit."""
        _inverse(self.kernel, self.Q.view(-1), self.W, self.spare.view(-1))

    def __call__(self) -> None:
        opt, (gi, pi, param, lr, exact) = self.opt, self.job
        coef = torch.tensor(self.coef, dtype=torch.float64)
        top = float(self.kernel(self.Q.view(-1), self.spare.view(-1), self.W, self.G, coef))
        if not math.isfinite(top):
            self._restore()
            opt._stamp(param, self.Q, self.W, exact, self.qmax, kernel=self.kernel)
            opt._refuse(gi, pi, param, exact, lr)
        opt._swap_dual(param, self.spare, self.Q, self.W, exact, math.inf, self.kernel)

    def undo(self) -> None:
        """Take back a step that succeeded (a later parameter's step was refused)."""
        opt, (_, _, param, _, exact) = self.opt, self.job
        self._restore()
        opt._swap_dual(param, self.Q, self.spare, self.W, exact, self.qmax, self.kernel)


def all_or_nothing(commits: list) -> list[Callable[[], None]]:
    """The commits in a safe order: speculative fused steps (which may refuse, undoing themselves,
    `experiments.optim.dual`) first, undoing those already done when one refuses; then the others,
    which were checked in phase 1 and do not fail."""
    speculative = [c for c in commits if hasattr(c, "undo")]
    if not speculative:
        return commits
    rest = [c for c in commits if not hasattr(c, "undo")]

    def run() -> None:
        done = []
        try:
            for commit in speculative:
                commit()
                done.append(commit)
        except BaseException:
            for commit in reversed(done):
                commit.undo()
            raise
        for commit in rest:
            commit()

    return [run]


class DualCacheMixin:
    """``state["dual"]`` bookkeeping and the cached (optionally fused) step of `LpMirrorDescent`."""

    def _warn_fused_once(self, key, text: str, exact: Fraction, W, level: int = 5) -> None:
        """One ``RuntimeWarning`` per ``key`` that a ``fused=True`` kernel is unavailable."""
        if key not in self._fused_warned:
            self._fused_warned.add(key)
            msg = f"LpMirrorDescent(fused=True): {text} (p={exact}, {W.dtype})"
            warnings.warn(msg, RuntimeWarning, stacklevel=level)

    def _fused_kernel(self, group, exact: Fraction, W: torch.Tensor):
        """The compiled dual-step kernel when ``fused`` applies to this flat tensor, else None."""
        if not group["fused"] or W.numel() < FUSED_MIN_NUMEL:
            return None
        try:
            kernel = _fused.step_kernel(1 / (exact - 1), W.dtype)
        except _fused.KernelUnavailable as exc:
            self._warn_fused_once((exact, W.dtype), f"{exc}; using the eager CPU kernels", exact, W)
            return None
        self._hold_count(kernel)
        return kernel

    def _hold_count(self, kernel) -> None:
        """Keep torch's thread count (untimed) in this step's write phase: always for an inductor
        loop (dynamo guards it on the count, so another would recompile inside the write phase);
        for the C kernels (`experiments.optim.native`, `experiments.optim.sgdfused`: the same bits
        at every count) unless ``threads=k`` fixes one: their blocks go to whichever thread is
        free, so under load 2 threads measured no slower than 1 (benchmarks/README.md), and timing
        them would only add noise (`experiments.optim.threads`)."""
        if _threads_matter(kernel) or self._threads.threads is None:
            self._compiled_step = True

    def _fingerprint(self, W: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """A few evenly spaced entries of ``W`` (flat) and their positions: a cheap sampled check
        that catches whole-tensor writes through ``.data`` (it can refute, never prove, "unchanged")."""
        idx = sample_positions(W.numel())
        return idx, W.index_select(0, idx)

    def _stamp(
        self,
        param: torch.Tensor,
        Q: torch.Tensor,
        W: torch.Tensor,
        exact: Fraction,
        qmax: float,
        *,
        kernel=None,
    ) -> None:
        """Record the state after our write; ``kernel``: ``W`` is bit for bit this fused kernel's
        inverse map of ``Q`` (kept with the thread count where it selects the compiled variant, 0
        where every count gives the same bits)."""
        idx, sample = self._fingerprint(W)
        threads = None
        if kernel is not None:
            threads = torch.get_num_threads() if _threads_matter(kernel) else 0
        self._stamps[param] = _Stamp(
            version=param._version,
            data_ptr=param.data_ptr(),
            dual=Q,
            p=exact,
            qmax=qmax,
            idx=idx,
            sample=sample,
            threads=threads,
        )

    def _spare(self, param: torch.Tensor, Q: torch.Tensor) -> torch.Tensor:
        """The second dual buffer of ``param`` (allocated once, then swapped with the dual)."""
        spare = self._spares.get(param)
        if not (
            isinstance(spare, torch.Tensor)
            and spare.shape == Q.shape
            and spare.dtype == Q.dtype
            and spare.device == Q.device
            and spare.is_contiguous()
            and spare.data_ptr() not in (Q.data_ptr(), param.data_ptr())
        ):
            spare = self._spares[param] = state_buffer(Q)
        return spare

    def _swap_dual(self, param, dual, spare, W, exact: Fraction, qmax: float, kernel) -> None:
        """After a fused write: ``dual`` becomes the cached dual, ``spare`` the second buffer, and
        the stamp records that ``W`` is the kernel's inverse map of ``dual`` (``qmax`` bounds it)."""
        self.state[param]["dual"], self._spares[param] = dual, spare
        self._stamp(param, dual, W, exact, qmax, kernel=kernel)

    def _refuse(self, gi, pi, param, exact, lr) -> None:
        """Raise for a refused fused step (nothing changed): a non-finite gradient, else overflow."""
        self._check_grad(gi, pi, param.grad, exact, lr)
        raise FloatingPointError(
            f"LpMirrorDescent: the mirror step overflowed {param.dtype} in "
            f"{self._where(gi, pi, param)}; the parameter was left unchanged; use a smaller lr "
            f"(lr={lr}, p={exact})"
        )

    def _dual(
        self,
        param: torch.Tensor,
        W: torch.Tensor,
        exact: Fraction,
        q: torch.Tensor,
        tmp: torch.Tensor,
        kernel=None,
    ) -> tuple[torch.Tensor, float, bool]:
        """The cached dual ``Q = grad psi(W)`` (flat), an upper bound on ``max|Q|`` and whether ``W``
        is bit for bit the fused ``kernel``'s inverse map of ``Q``; ``W`` is not written.

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
            Q = state["dual"] = state_buffer(param)
        Qf = Q.detach().view(-1)
        stamp = self._stamps.get(param)
        if (
            usable
            and stamp is not None
            and stamp.dual is Q
            and stamp.version == param._version
            and stamp.data_ptr == param.data_ptr()
            and stamp.p == exact
            and torch.equal(W.index_select(0, stamp.idx), stamp.sample)
        ):
            return (
                Qf,
                stamp.qmax,
                kernel is not None and stamp.threads in (0, torch.get_num_threads()),
            )
        foreign = stamp is None or stamp.dual is not Q  # e.g. loaded by load_state_dict
        if usable and foreign and _reproduces(W, Qf, inv, q, tmp, kernel):
            qmax = absmax(Qf)  # loaded dual consistent with the parameter: keep it
            self._stamp(param, Q, W, exact, qmax, kernel=kernel)
            return Qf, qmax, kernel is not None
        qmax = chunked_dual(Qf, W, fwd, tmp)
        self._stamp(param, Q, W, exact, qmax)
        return Qf, qmax, False

    def _fast_cached(
        self, gi, pi, param, W, G, lr, exact, coef, gmax, q, tmp, kernel=None
    ) -> Callable[[], None]:
        Q, qmax, speculative = self._dual(param, W, exact, q, tmp, kernel)
        if speculative:
            job = (gi, pi, param, lr, exact)
            return _Speculative(self, job, W, G, self.state[param]["dual"], qmax, coef, kernel)
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
        if kernel is not None:
            return self._fused_checked(gi, pi, param, W, G, lr, exact, coef, bound <= limit, kernel)
        if bound <= limit:  # overflow excluded in advance: update Q and W in place, chunk by chunk

            def commit() -> None:
                chunked_step_cached(W, Q, G, coef, inv, tmp)
                self._stamp(
                    param, self.state[param]["dual"], W, exact, qb
                )  # qb bounds the new max|Q|

            return commit
        T = torch.empty_like(W)  # own buffers: commits run after every check
        Qn = torch.add(Q, G, alpha=coef)
        chunked_inverse(T, Qn, inv, tmp)
        self._check_result(gi, pi, param, T, exact, lr)

        def commit_checked() -> None:
            W.copy_(T)
            Q.copy_(Qn)
            self._stamp(param, self.state[param]["dual"], W, exact, absmax(Qn))

        return commit_checked

    def _fused_checked(
        self, gi, pi, param, W, G, lr, exact, coef, safe, kernel
    ) -> Callable[[], None]:
        """The fused step after the checks (first step, or ``W`` not known to be the kernel's
        inverse map of the dual): in place when the bounds exclude overflow, else computed into
        scratch and checked here, before anything is written."""
        Q = self.state[param]["dual"]
        spare = self._spare(param, Q)
        coef_t = torch.tensor(coef, dtype=torch.float64)
        if safe:

            def commit() -> None:
                top = float(kernel(Q.view(-1), spare.view(-1), W, G, coef_t))
                if not math.isfinite(top):  # pragma: no cover - excluded by the bounds
                    raise FloatingPointError(
                        f"LpMirrorDescent: the fused step overflowed in {self._where(gi, pi, param)} "
                        f"despite its bounds; the parameter is now partially updated"
                    )
                self._swap_dual(param, spare, Q, W, exact, math.inf, kernel)

            return commit
        T = torch.empty_like(W)  # own buffer: commits run after every check
        top = float(kernel(Q.view(-1), spare.view(-1), T, G, coef_t))
        if not math.isfinite(top):
            self._refuse(gi, pi, param, exact, lr)

        def commit_checked() -> None:
            W.copy_(T)
            self._swap_dual(param, spare, Q, W, exact, math.inf, kernel)

        return commit_checked
