"""``LpMirrorDescent``: mirror descent with the l_p potential as a ``torch.optim.Optimizer`` (SPEC section 2).

One step, per parameter ``W`` with gradient ``G`` (``-G`` with ``maximize``):

    grad psi(W+) = grad psi(W) - lr * G,    grad psi(W) = sign(W) |W|^{p-1},

so ``W+ = sign(Q) |Q|^{1/(p-1)}`` with ``Q = sign(W)|W|^{p-1} - lr G``. With
``normalize_gradient=True``, ``G`` is replaced by ``G / ||G||_q`` (entrywise dual norm, per parameter;
a zero gradient gives no step). ``p = 2`` is gradient descent, computed with the same ``add_`` as
``torch.optim.SGD`` so it matches it bit for bit.

Errors: a non-finite gradient, a non-finite parameter, or a step whose result overflows raises
``FloatingPointError`` naming the parameter (group and position) *before anything is written*: a step
either updates every parameter or none. Nothing is ever clipped.

Paths (all compute the same update; the float64 agreement is tested):
- simple: out-of-place reference (also used for ``differentiable=True`` and non-contiguous tensors);
- foreach: ``torch._foreach_*`` over each group (default on CUDA, or ``foreach=True``);
- CPU fast path (default on CPU for contiguous float32/float64 tensors): in-place ops on persistent
  chunk-sized scratch buffers (cache resident), exponents 2, 1/2, integers and ``k/2^j`` by
  multiplications and square roots, other exponents as ``exp2(e * log2|x|)`` (float32: a few ulps
  from ``pow``). The gradient is read once (``G.G``: finite iff every entry is, and its square root
  bounds ``max|G|``); overflow is excluded *in advance* from that bound and a running upper bound on
  ``max|W|`` kept per parameter (the exact max of the last result, taken in cache; recomputed from
  the tensor whenever its version counter or storage changed). When the bounds cannot exclude
  overflow the step is computed into a scratch tensor, checked, and only then copied. Writes through
  ``.data`` bypass the version counter: if one makes the bound stale and the step then overflows, the
  in-cache check still raises (p != 2; the parameter is then partially updated, as the message says);
  for p = 2 such a step behaves like SGD's ``add_``.

Speed (benchmarks/optimizer_step.py, 10M float32 parameters, 2-core machine, see benchmarks/README.md):
p = 2 costs one gradient read more than SGD (1.6x); p = 3 about 2.5x a fused Adam step; exponents that
need the generic power (p = 1.75, p = 1.1) about 5x. Chunked ops synchronise the intra-op threads once per chunk, so
on an oversubscribed machine ``torch.set_num_threads(1)`` can be faster.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any, Callable, Iterable

import torch
from torch.optim import Optimizer
from torch.utils.weak import WeakIdKeyDictionary

from certify.errors import MdcertError
from certify.exact import format_fraction, parse_p

__all__ = ["LpMirrorDescent", "mirror_step", "PowPlan"]

_CHUNK = 1 << 18  # elements per in-cache chunk (1 MiB of float32)


def _validate_lr(lr: Any) -> float:
    try:
        value = float(lr)
    except (TypeError, ValueError):
        raise MdcertError(f"Invalid learning rate: {lr}; lr must be a finite number > 0") from None
    if not (math.isfinite(value) and value > 0):
        raise MdcertError(f"Invalid learning rate: {lr}; lr must be a finite number > 0")
    return value


_P_CACHE: dict[tuple[type, Any], Fraction] = {}


def _validate_p(p: Any) -> Fraction:
    key = (type(p), p)
    try:
        hit = _P_CACHE.get(key)
    except TypeError:  # unhashable
        key, hit = None, None
    if hit is not None:
        return hit
    try:
        exact = parse_p(p)
    except MdcertError:
        raise MdcertError(f"Invalid p: {p}; p must be a finite rational > 1, e.g. 1.75 or '7/4'") from None
    if key is not None and len(_P_CACHE) < 1024:
        _P_CACHE[key] = exact
    return exact


class PowPlan:
    """How to evaluate ``sign(x)|x|^e`` for an exact exponent ``e`` with cheap operations.

    Kinds: ``one``; ``square`` (``|x| * x``); ``dyadic`` for ``e = m + k/2^j`` (``j <= 4``,
    ``m <= 16``): nested square roots ``sqrt(|x|^{b1} sqrt(|x|^{b2} ...))`` over the bits of ``k/2^j``,
    times ``|x|^m`` (square-and-multiply when there is no fractional part); ``generic``:
    ``exp2(e * log2|x|)``.
    """

    __slots__ = ("exact", "value", "kind", "whole", "bits", "roots")

    def __init__(self, exponent: Fraction) -> None:
        self.exact = exponent
        self.value = float(exponent)
        den = exponent.denominator
        self.whole = exponent.numerator // den
        frac = exponent - self.whole
        self.roots = den.bit_length() - 1
        self.bits = tuple(i for i in range(1, self.roots + 1) if (frac * 2**i).numerator // (frac * 2**i).denominator % 2)
        if exponent == 1:
            self.kind = "one"
        elif exponent == 2:
            self.kind = "square"
        elif den & (den - 1) == 0 and den <= 16 and self.whole <= 16:
            self.kind = "dyadic"
        else:
            self.kind = "generic"

    def __repr__(self) -> str:
        return f"PowPlan({self.exact}, {self.kind})"


def _signed_pow_into(out: torch.Tensor, x: torch.Tensor, plan: PowPlan, tmp: torch.Tensor) -> None:
    """``out <- sign(x)|x|^e`` in place (``out`` must not alias ``x``; ``tmp`` a scratch of the same size)."""
    kind = plan.kind
    if kind == "one":
        out.copy_(x)
        return
    if kind == "square":
        torch.abs(x, out=out)
        out.mul_(x)
        return
    if kind == "generic":
        torch.abs(x, out=out)
        out.log2_().mul_(plan.value).exp2_()
    elif not plan.bits:  # integer exponent: left-to-right binary powering of |x| (kept in tmp)
        torch.abs(x, out=tmp)
        bits = bin(plan.whole)[3:]
        torch.mul(tmp, tmp, out=out)
        if bits[0] == "1":
            out.mul_(tmp)
        for bit in bits[1:]:
            out.mul_(out)
            if bit == "1":
                out.mul_(tmp)
    else:  # |x|^{0.b1b2..bj} = sqrt(|x|^{b1} sqrt(|x|^{b2} ... sqrt(|x|^{bj})))
        torch.abs(x, out=tmp)
        torch.sqrt(tmp, out=out)  # the last set bit
        for i in range(plan.bits[-1] - 1, 0, -1):
            if i in plan.bits:
                out.mul_(tmp)
            out.sqrt_()
        for _ in range(plan.whole):  # |x|^m (signs are fixed by copysign below)
            out.mul_(x)
    out.copysign_(x)


def _absmax(t: torch.Tensor) -> float:
    """``max|t|`` in one pass without temporaries (NaN propagates; 0 for an empty tensor)."""
    if t.numel() == 0:
        return 0.0
    lo, hi = torch.aminmax(t)
    lo, hi = float(lo), float(hi)
    if math.isnan(lo) or math.isnan(hi):
        return math.nan
    return max(-lo, hi)


def _dual_norm(g: torch.Tensor, q: float) -> float:
    """Scaled entrywise ``||g||_q`` (no overflow for finite g)."""
    a = g.detach().abs()
    m = float(a.max()) if a.numel() else 0.0
    if m == 0.0:
        return 0.0
    return m * float(((a / m).pow(q)).sum().double().pow(1.0 / q))


def mirror_step(W: torch.Tensor, G: torch.Tensor, lr: float, p: Any, *, maximize: bool = False,
                normalize_gradient: bool = False) -> torch.Tensor:
    """Reference (out-of-place) l_p mirror step ``W+ = (grad psi)^{-1}(grad psi(W) -+ lr G)``.

    Args:
        W: current point; G: gradient (same shape); lr: step size > 0; p: exponent (exact).
        maximize: ascend instead of descend.
        normalize_gradient: use ``G / ||G||_q``.

    Returns:
        The new point (a new tensor); ``W`` is untouched.

    Raises:
        FloatingPointError: non-finite input or a result that overflows.
    """
    lr = _validate_lr(lr)
    exact = _validate_p(p)
    if not bool(torch.isfinite(G).all()):
        raise FloatingPointError("mirror_step: non-finite gradient; check the loss or use a smaller lr")
    if not bool(torch.isfinite(W).all()):
        raise FloatingPointError("mirror_step: the point contains NaN or Inf")
    new = _simple_update(W, G, lr, exact, maximize, normalize_gradient)
    if not bool(torch.isfinite(new).all()):
        raise FloatingPointError(f"mirror_step: the step overflowed {W.dtype}; use a smaller lr")
    return new


def _simple_update(W: torch.Tensor, G: torch.Tensor, lr: float, exact: Fraction, maximize: bool,
                   normalize: bool) -> torch.Tensor:
    g = -G if maximize else G
    if normalize:
        norm = _dual_norm(g, float(exact / (exact - 1)))
        if norm == 0.0:
            return W.clone()
        g = g / norm
    if exact == 2:
        return W.clone().add_(g, alpha=-lr)
    pm1, inv = float(exact - 1), float(1 / (exact - 1))
    Q = W.abs().pow(pm1) * W.sign()
    Q = Q - lr * g
    return Q.abs().pow(inv) * Q.sign()


class LpMirrorDescent(Optimizer):
    """Mirror descent with the l_p potential ``psi(W) = (1/p)||W||_p^p`` (SPEC section 2).

    Args:
        params: parameters or param groups (each group may set its own ``lr`` and ``p``).
        lr: step size ``eta > 0``.
        p: exponent ``1 < p < inf``, exact (``"1.75"``, ``"7/4"``, ``Fraction(7, 4)`` or ``1.75``).
            Each group also stores ``p_exact`` (``"7/4"``).
        normalize_gradient: divide each parameter's gradient by its dual norm ``||G||_q``.
        maximize: maximize the objective.
        foreach: use ``torch._foreach_*`` kernels (``None``: only on CUDA).
        differentiable: keep the step differentiable (out-of-place reference path).

    Raises:
        ValueError (MdcertError): invalid ``lr`` or ``p``, with the bad value in the message.

    Example:
        >>> opt = LpMirrorDescent(model.parameters(), lr=0.1, p="1.75")
    """

    def __init__(self, params: Iterable, lr: float = 1e-3, p: Any = 2, *, normalize_gradient: bool = False,
                 maximize: bool = False, foreach: bool | None = None, differentiable: bool = False) -> None:
        lr = _validate_lr(lr)
        exact = _validate_p(p)
        defaults = dict(lr=lr, p=p, p_exact=format_fraction(exact), normalize_gradient=normalize_gradient,
                        maximize=maximize, foreach=foreach, differentiable=differentiable)
        self._plans: dict[Fraction, tuple[PowPlan, PowPlan]] = {}
        self._scratch: dict[tuple, torch.Tensor] = {}
        self._bounds = WeakIdKeyDictionary()
        super().__init__(params, defaults)

    def add_param_group(self, param_group: dict) -> None:
        lr = param_group.get("lr", self.defaults["lr"])
        p = param_group.get("p", self.defaults["p"])
        param_group["lr"] = _validate_lr(lr) if not isinstance(lr, torch.Tensor) else lr
        param_group["p_exact"] = format_fraction(_validate_p(p))
        super().add_param_group(param_group)

    def __setstate__(self, state: dict) -> None:
        super().__setstate__(state)
        self.__dict__.setdefault("_plans", {})
        self.__dict__.setdefault("_scratch", {})
        self.__dict__.setdefault("_bounds", WeakIdKeyDictionary())
        for group in self.param_groups:
            group.setdefault("normalize_gradient", False)
            group.setdefault("maximize", False)
            group.setdefault("foreach", None)
            group.setdefault("differentiable", False)
            group.setdefault("p", 2)
            group.setdefault("p_exact", format_fraction(_validate_p(group["p"])))

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
            lr = _validate_lr(group["lr"])
            exact = _validate_p(group["p"])
            group["p_exact"] = format_fraction(exact)
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
                new = _simple_update(param.clone(), param.grad, lr, exact, group["maximize"],
                                     group["normalize_gradient"])
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
        # phase 1: check every gradient, plan each update (nothing is written here)
        commits: list[Callable[[], None]] = []
        by_group: dict[int, list] = {}
        for job in jobs:
            by_group.setdefault(job[0], []).append(job)
        for gi, group_jobs in by_group.items():
            group = group_jobs[0][2]
            params = [job[3] for job in group_jobs]
            if self._use_foreach(group, params) and all(p.grad.dtype == p.dtype for p in params):
                commits.append(self._foreach_group(group_jobs))
            else:
                for job in group_jobs:
                    commits.append(self._single(job))
        # phase 2: write (every check has passed)
        for commit in commits:
            commit()
        self._count_steps(jobs)

    # ------------------------------------------------------------------ checks
    @staticmethod
    def _where(gi: int, pi: int, param: torch.Tensor) -> str:
        return f"parameter {pi} of param group {gi} (shape {tuple(param.shape)}, {param.dtype})"

    def _check_grad(self, gi, pi, grad, exact, lr) -> None:
        if not bool(torch.isfinite(grad).all()):
            raise FloatingPointError(
                f"LpMirrorDescent: non-finite gradient in {self._where(gi, pi, grad)}; the parameter was left "
                f"unchanged; check the loss for overflow or use a smaller lr (lr={lr}, p={exact})")

    def _check_result(self, gi, pi, param, new, exact, lr) -> None:
        if not bool(torch.isfinite(new).all()):
            if not bool(torch.isfinite(param).all()):
                raise FloatingPointError(
                    f"LpMirrorDescent: {self._where(gi, pi, param)} contains NaN or Inf; it was left unchanged")
            raise FloatingPointError(
                f"LpMirrorDescent: the mirror step overflowed {param.dtype} in {self._where(gi, pi, param)}; "
                f"the parameter was left unchanged; use a smaller lr (lr={lr}, p={exact})")

    # ------------------------------------------------------------------ simple / fast single tensor
    def _single(self, job) -> Callable[[], None]:
        gi, pi, group, param, lr, exact = job
        grad = param.grad
        fast = (param.device.type == "cpu" and param.is_contiguous() and grad.is_contiguous()
                and grad.dtype == param.dtype and param.dtype in (torch.float32, torch.float64)
                and param.numel() > 0)
        if not fast:
            self._check_grad(gi, pi, grad, exact, lr)
            new = _simple_update(param, grad, lr, exact, group["maximize"], group["normalize_gradient"])
            self._check_result(gi, pi, param, new, exact, lr)
            return lambda: param.copy_(new)
        return self._fast_cpu(gi, pi, group, param, grad, lr, exact)

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
        return _absmax(param.detach())

    def _grad_bound(self, gi, pi, grad, G, exact, lr) -> float:
        """Upper bound on ``max|G|`` from one fast reduction; raises on a non-finite gradient.

        ``sqrt(G.G)`` bounds ``max|G|`` (a rounded sum of non-negative terms is at least each
        rounded term; entries whose square underflows are below ``sqrt(tiny)``). When ``G.G``
        overflows, the exact maximum is computed instead.
        """
        sq = float(torch.dot(G, G))
        if math.isfinite(sq):
            return max(math.sqrt(sq), math.sqrt(torch.finfo(G.dtype).tiny)) * (1 + 1e-3)
        gmax = _absmax(G)  # NaN/Inf propagate
        if not math.isfinite(gmax):
            self._check_grad(gi, pi, grad, exact, lr)
        return gmax

    @staticmethod
    def _bounds_of(wmax: float, alpha: float, gmax: float, pm1: float) -> tuple[float, float]:
        """Bounds on ``|Q| <= wmax^{p-1} + alpha gmax`` and ``|W+| <= |Q|^{1/(p-1)}``."""
        try:
            qb = wmax ** pm1 + alpha * gmax
            return qb, qb ** (1.0 / pm1)
        except OverflowError:
            return math.inf, math.inf

    def _fast_cpu(self, gi, pi, group, param, grad, lr, exact) -> Callable[[], None]:
        W, G = param.detach().view(-1), grad.detach().view(-1)
        n = W.numel()
        gmax = self._grad_bound(gi, pi, grad, G, exact, lr)
        alpha = lr
        if group["normalize_gradient"]:
            norm = _dual_norm(G, float(exact / (exact - 1)))
            if norm == 0.0:
                return lambda: None
            alpha = lr / norm
        sign = 1.0 if group["maximize"] else -1.0
        limit = torch.finfo(param.dtype).max / 8
        pm1 = float(exact - 1)
        wmax = self._abs_bound(param)
        qb, wb = self._bounds_of(wmax, alpha, gmax, pm1)
        if not max(qb, wb) <= limit:  # the cheap bounds cannot exclude overflow: tighten them
            gmax = _absmax(G)
            wmax = _absmax(W)
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
        q = self._buffer("q", min(n, _CHUNK), W)
        tmp = self._buffer("tmp", min(n, _CHUNK), W)

        def compute(target: torch.Tensor, extremes: list | None = None) -> None:
            for s in range(0, n, _CHUNK):
                e = min(s + _CHUNK, n)
                qc, tc = q[: e - s], tmp[: e - s]
                _signed_pow_into(qc, W[s:e], fwd, tc)
                qc.add_(G[s:e], alpha=sign * alpha)
                _signed_pow_into(target[s:e], qc, inv, tc)
                if extremes is not None:  # in-cache, so nearly free
                    extremes.extend(torch.aminmax(target[s:e]))

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
                        f"smaller lr (lr={lr}, p={exact})")
                self._bounds[param] = (param._version, param.data_ptr(), float(ext))
            return commit
        T = torch.empty_like(W)  # own buffer: commits run after every check
        compute(T)
        self._check_result(gi, pi, param, T, exact, lr)
        return lambda: W.copy_(T)

    # ------------------------------------------------------------------ foreach
    def _foreach_group(self, group_jobs) -> Callable[[], None]:
        _, _, group, _, lr, exact = group_jobs[0]
        params = [job[3].detach() for job in group_jobs]
        grads = [job[3].grad.detach() for job in group_jobs]
        norms = torch.stack([n.float() for n in torch._foreach_norm(grads, float("inf"))])
        if not bool(torch.isfinite(norms).all()):
            for gi, pi, _, param, _, _ in group_jobs:
                self._check_grad(gi, pi, param.grad, exact, lr)
        if group["maximize"]:
            grads = torch._foreach_neg(grads)
        if group["normalize_gradient"]:
            q = float(exact / (exact - 1))
            scales = []
            for g in grads:
                norm = _dual_norm(g, q)
                scales.append(0.0 if norm == 0.0 else 1.0 / norm)
            grads = torch._foreach_mul(grads, scales)
        if exact == 2:
            news = torch._foreach_add(params, grads, alpha=-lr)
        else:
            pm1, inv = float(exact - 1), float(1 / (exact - 1))
            Q = torch._foreach_abs(params)
            Q = torch._foreach_pow(Q, pm1) if pm1 != 2.0 else torch._foreach_mul(Q, Q)
            torch._foreach_mul_(Q, torch._foreach_sign(params))
            torch._foreach_add_(Q, grads, alpha=-lr)
            news = torch._foreach_abs(Q)
            news = torch._foreach_sqrt(news) if inv == 0.5 else torch._foreach_pow(news, inv)
            torch._foreach_mul_(news, torch._foreach_sign(Q))
        finite = torch.stack([n.float() for n in torch._foreach_norm(news, float("inf"))])
        if not bool(torch.isfinite(finite).all()):
            for (gi, pi, _, param, lr_, _), new in zip(group_jobs, news):
                self._check_result(gi, pi, param, new, exact, lr_)

        def commit() -> None:
            torch._foreach_copy_(params, news)
        return commit
