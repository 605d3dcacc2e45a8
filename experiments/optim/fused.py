"""Fused CPU kernel of the dual mirror step for ``LpMirrorDescent(fused=True)`` (docs/theory.md section 2).

``Q <- Q + coef G;  W <- sign(Q)|Q|^e`` (``e = 1/(p-1)``, exact) in one compiled pass (``torch.compile``,
inductor's C++ backend) instead of the eager add and power plan (six to nine passes). What makes it
pay is the cube root: exponents ``m + 1/3`` and ``m + 2/3`` (``p = 1.75``: ``e = 4/3``; ``p = 1.3``,
``2.5``, ``4``) use, in float32, a bit-trick start and two steps of Halley's iteration
``y <- y (y^3 + 2a) / (2y^3 + a)`` (cubic convergence: 3.2e-2, 2e-5, then rounding), and in float64 the
division-free series of `_cbrt64` (three Halley divisions were slower), which the compiled loop
vectorizes; ``exp2``/``log2`` (``e = 1/10`` and other exponents) and square-root chains
(``k/2^j``) are fused as well. Float32 error against the float64 power (tested, eagerly on the same
expression): at most 2.2 eps for ``4/3`` (the eager ``exp2(log2 / 3)`` plan: 15.4 eps). Tried instead
(issue 25, benchmarks/README.md): a division-free Newton iteration for ``|x|^{-1/3}`` (4.0 eps, not
faster), one such step then one Halley step (3.3 eps, within noise) and float64 iterations from the
float32 start (0.5 eps, about 1.5x the kernel's time); none beats two float32 Halley steps.

The kernel reads ``Q`` and ``G`` and writes ``Q + coef G`` into a second buffer (``q_out``) and ``W``,
and returns ``max(|Q + coef G|, |W|)`` (NaN if any entry is NaN) from the same loop: the optimizer
double-buffers the dual, so a step whose result is not finite is undone exactly (the old dual is
intact, and ``W`` is restored by this kernel's own inverse map of it, bit for bit the ``W`` that was
there: `experiments.optim.dual`), with no separate check pass over ``G`` before the writes.
Inductor's C++ backend fuses a reduction with pointwise stores of the same range only when the
stores come first in its node order, which functionalized input mutations never do (they are
emitted last); `_reduction_fusion` admits the reverse order, for independent nodes only, while our
kernels run (and so compile) (measured: one loop instead of two, i.e. one pass instead of two; benchmarks/README.md).
One compiled function per exponent and dtype, with a dynamic size (one compilation serves every
size); a compile takes about 30 s on 2 cores the first time and a few seconds from inductor's
on-disk cache. A kernel that cannot be compiled (no C++ compiler, no Python headers) is reported by
`KernelUnavailable`; the optimizer then warns once and uses the eager kernels. `step_kernel`
prefers the streaming C kernel of `experiments.optim.native` (the same bits, but for its fused
multiply-adds in the float64 cube root, written with
non-temporal stores) where it has the recipe, and compiles inductor's loop otherwise.
"""

from __future__ import annotations

import contextlib
import threading
import types
import math
import operator
from fractions import Fraction
from typing import Callable

import torch

from experiments.optim import native as _native
from experiments.optim import stepsource as _source
from experiments.optim.kernels import PowPlan

__all__ = ["KernelUnavailable", "step_kernel", "signed_pow_expr", "cbrt_expr", "bits_of"]

_PROBE_SIZE = 1 << 20
_INT = {torch.float32: torch.int32, torch.float64: torch.int64}
_LOCK = threading.Lock()
_KERNELS: dict[tuple[Fraction, torch.dtype, str], Callable] = {}
_FAILED: dict[tuple[Fraction, torch.dtype, str], str] = {}


class KernelUnavailable(RuntimeError):
    """The fused kernel could not be compiled here (the message says why)."""


def cbrt_expr(a: torch.Tensor, *, floor: bool = False) -> torch.Tensor:
    """``a^{1/3}`` for finite ``a >= 0`` (float32/float64) with multiplications and divisions only.

    float32: the start ``bits(y) = bits(a) / 3 + magic`` (relative error <= 3.2e-2), then two steps
    of Halley's iteration; float64: `_cbrt64` (no division). Default: inputs below ``2^-100``
    (float64 ``2^-900``) are scaled up by ``2^99`` (``2^900``) and the root scaled back, so
    subnormals work, huge ones likewise down; ``0`` maps to ``0``. ``floor=True`` (for callers that multiply the root by ``a``, cheaper):
    inputs below ``2^-114`` (``2^-810``) are raised to it, where ``a * root`` underflows to 0 anyway.
    """
    magic, iters, lowest, tiny, huge, k3 = _source.CBRT[a.dtype]  # the C source's too
    if floor:
        s = a.clamp_min(lowest)
    else:
        small, big = a < tiny, a > huge
        s = torch.where(small, a * 2.0**k3, torch.where(big, a * 2.0**-k3, a)).clamp_min(tiny)
    if a.dtype == torch.float64:
        y = _cbrt64(s)
    else:
        ibits = _INT[a.dtype]
        y = (s.view(ibits).to(a.dtype) * (1.0 / 3.0) + magic).to(ibits).view(a.dtype)
    for _ in range(iters):
        y3 = y * y * y
        y = y * ((y3 + 2.0 * s) / (2.0 * y3 + s))  # the ratio first: y * (y^3 + 2s) could overflow
    if floor:
        return y
    y = torch.where(small, y * 2.0 ** -(k3 // 3), torch.where(big, y * 2.0 ** (k3 // 3), y))
    return torch.where(a == 0, a, y)


def _cbrt64(s: torch.Tensor) -> torch.Tensor:
    """``s^{1/3}`` for float64 ``s`` in the normal range, multiplications only (Inf and NaN give
    Inf or NaN): the inverse root's magic start (3.4e-2 relative), one third-order step of
    ``r <- r (1 + d)^(-1/3)``, ``d = s r^3 - 1`` (to about 2e-5), then ``s^(1/3) = u + u d Q(d)``,
    ``u = s r^2``, ``1 + d Q(d)`` the third-order series of ``(1 + d)^(-2/3)``
    (`experiments.optim.stepsource` holds the constants; its C kernel fuses each ``x y + c`` where
    the machine can). Three Halley divisions made the float64 step slower (benchmarks/README.md)."""

    def mad(x, y, c):
        return x * y + c

    r = mad(-s.view(torch.int64).to(torch.float64), 1.0 / 3.0, _source.CBRT[torch.float64][0])
    r = r.to(torch.int64).view(torch.float64)
    t, r2 = s * r, r * r
    d = mad(t, r2, -1.0)
    r = r * mad(d, _source.horner(d, _source.INV_CBRT_SERIES, mad), 1.0)
    t, r2 = s * r, r * r
    d = mad(t, r2, -1.0)
    u = t * r
    return mad(u, d * _source.horner(d, _source.CBRT_SERIES, mad), u)


def _recipe(exponent: Fraction) -> tuple[int, str, float, tuple[int, ...]]:
    """Plain Python constants that describe ``|x|^e`` (computed before tracing: the traced function
    must not do Fraction arithmetic), from the eager `PowPlan`'s split ``e = whole + frac``; its
    ``generic`` exponents with a fractional part in thirds get the cube root. Returns
    ``(whole, kind, frac, root_bits)``."""
    plan = PowPlan(exponent)
    if plan.kind in ("one", "square") or (plan.kind == "dyadic" and not plan.bits):
        return plan.whole, "integer", 0.0, ()
    if plan.kind == "dyadic":
        return plan.whole, "roots", plan.frac, plan.bits
    if (exponent - plan.whole).denominator == 3:
        return (
            plan.whole,
            "cbrt" if (exponent - plan.whole).numerator == 1 else "cbrt2",
            plan.frac,
            (),
        )
    return plan.whole, "exp2", plan.frac, ()


def signed_pow_expr(
    x: torch.Tensor, recipe: tuple[int, str, float, tuple[int, ...]]
) -> torch.Tensor:
    """``sign(x)|x|^e`` as one traced expression (the body of the compiled kernel); ``recipe`` from `_recipe`.

    ``e = m + f``: ``f = 0`` an integer power; ``f`` in ``{1/3, 2/3}`` the Halley cube root (squared for
    2/3); ``f = k/2^j`` (as in the eager plans) a product of repeated square roots; otherwise ``exp2(f log2|x|)``.
    """
    whole, kind, frac, bits = recipe
    a = x.abs()
    if kind == "integer":
        return torch.copysign(_source.square_and_multiply(a, whole, operator.mul), x)
    if kind in ("cbrt", "cbrt2"):
        c = cbrt_expr(a, floor=whole >= 1)
        r = c if kind == "cbrt" else c * c
    elif kind == "roots":
        r, root = None, a
        for i in range(1, bits[-1] + 1):
            root = root.sqrt()
            if i in bits:
                r = root if r is None else r * root
    else:
        r = torch.exp2(frac * torch.log2(a))
    power = _source.square_and_multiply(a, whole, operator.mul)
    if power is not None:
        r = r * power
    return torch.copysign(r, x)


def _make_kernel(exponent: Fraction) -> Callable[..., torch.Tensor]:
    recipe = _recipe(exponent)

    def kernel(
        q: torch.Tensor, q_out: torch.Tensor, w: torch.Tensor, g: torch.Tensor, coef: torch.Tensor
    ) -> torch.Tensor:
        qn = q + coef * g
        wn = signed_pow_expr(qn, recipe)
        top = wn.abs().amax()  # NaN propagates (inductor: max_propagate_nan); see step_kernel
        q_out.copy_(qn)
        w.copy_(wn)
        return top

    # a code object of its own per exponent: torch.compile caches compiled code per code object, so
    # kernels for different exponents never evict each other
    code = kernel.__code__.replace(co_name=f"lp_step2_{exponent.numerator}_{exponent.denominator}")
    fn = types.FunctionType(code, kernel.__globals__, code.co_name, None, kernel.__closure__)
    compiled = torch.compile(fn, fullgraph=True)

    def run(q, q_out, w, g, coef) -> torch.Tensor:
        # always the same grad mode (a change would recompile: a guard on it), and the fusion hook
        with torch.no_grad(), _reduction_fusion():
            return compiled(q, q_out, w, g, coef)

    return run


_FUSION_LOCK = threading.RLock()
# in inductor's cache key while the hook is on, so that a kernel compiled without it (the same graph
# compiled elsewhere) is never served in its place, nor ours elsewhere
_CACHE_TAG = "mdcert-optim-reduction-fusion-1"


@contextlib.contextmanager
def _reduction_fusion():
    """Around every kernel call (a compile can happen at any call: dynamo recompiles when a guard,
    e.g. the thread count, changes): let inductor's C++ scheduler fuse a full reduction (node 1) with
    pointwise nodes over the reduced range (node 2) when node 2 does not read node 1 (a dependent
    pair goes through ``can_fuse_vertical``, which refuses a reduction producer before asking this
    rule; the code generator already handles either order). Only speed depends on it: without the
    private hook (another torch) the kernel compiles as two loops, with the same results."""
    with _FUSION_LOCK:
        try:
            from torch._inductor.codegen import cpp as cpp_codegen

            scheduling = cpp_codegen.CppScheduling
            original = scheduling._why_fuse_nodes
            reason = cpp_codegen.ReasonFusedNodes.COMPATIBLE_REDUCTION
            tagged = torch.compiler.config.patch(cache_key_tag=_CACHE_TAG)
        except (ImportError, AttributeError):  # pragma: no cover - another torch version
            yield
            return
        if getattr(original, "_mdcert_hook", False):  # nested: already on
            yield
            return

        def why(self, node1, node2):
            found = original(self, node1, node2)
            if found is None:
                _, (vars1, reduce1) = node1.group
                _, (vars2, reduce2) = node2.group
                if vars1 == () and reduce2 == () and vars2 == reduce1:
                    return reason
            return found

        why._mdcert_hook = True
        scheduling._why_fuse_nodes = why
        try:
            with tagged:
                yield
        finally:
            scheduling._why_fuse_nodes = original


def step_kernel(
    exponent: Fraction, dtype: torch.dtype, *, backend: str = "auto"
) -> Callable[..., torch.Tensor | float]:
    """The compiled dual step ``kernel(q, q_out, w, g, coef)``: ``q_out <- q + coef g;
    w <- sign(q_out)|q_out|^exponent``, returning ``max|w|`` (a 0-d tensor from inductor, a float
    from the streaming kernel; NaN when any entry is NaN), all in one pass.

    ``backend``: ``"native"`` the streaming C kernel of `experiments.optim.native` (the same bits as
    inductor's loop but in the float64 cube root, tested, with non-temporal stores: 0.61-0.94x a
    fused Adam step in float32 against 1.04-1.3x, benchmarks/README.md); ``"inductor"`` the
    ``torch.compile`` loop; ``"auto"``
    (default) the streaming kernel where it exists (not for ``exp2`` exponents, nor without a C
    compiler) and passes its probe, else inductor's. It is finite iff every written entry is: every
    recipe maps an infinite ``q_out`` to Inf or NaN (powers, roots, ``exp2``: Inf; the float32
    Halley cube root: ``inf/inf``, NaN; the float64 series: Inf) and NaN to NaN (tested). (``max(|q_out|, |w|)`` costs twice the extra work in the loop: measured
    23.6 against 10.7 ms CPU for ``|Q|^{4/3}`` at 1 thread, 9.4 without any reduction.)

    Arguments: contiguous 1-d CPU tensors ``q, q_out, w, g`` of ``dtype`` (``q_out`` and ``w``
    written; none may overlap another) and ``coef`` a 0-d float64 tensor (a tensor, so that a new
    ``lr`` never recompiles). With ``g = 0`` and ``coef = -0.0`` it is the inverse map of ``q``, bit
    for bit the one a step computes (the same code; ``x + (-0.0) 0 = x`` for every ``x``, ``-0``
    included, where ``+0.0`` would turn ``-0`` into ``+0``).
    Compiled on first use and checked on a probe (against the float64 power) before it is returned,
    so that a compile failure never happens in the middle of a step.

    Raises:
        KernelUnavailable: the kernel could not be compiled or failed its probe (remembered: asked
            again, the same error is raised without a new attempt).
    """
    if dtype not in _INT:
        raise KernelUnavailable(f"fused kernels support float32 and float64, not {dtype}")
    if backend not in ("auto", "native", "inductor"):
        raise ValueError(f"backend must be 'auto', 'native' or 'inductor', not {backend!r}")
    key = (Fraction(exponent), dtype, backend)
    with _LOCK:
        kernel = _KERNELS.get(key)
        if kernel is not None:
            return kernel
        if key in _FAILED:
            raise KernelUnavailable(_FAILED[key])
        if backend != "inductor":
            try:
                kernel = _native.native_kernel(_recipe(key[0]), dtype)
                _probe(kernel, key[0], dtype)
            except (_native.NativeUnavailable, KernelUnavailable) as exc:
                if backend == "native":
                    _FAILED[key] = f"no streaming kernel: {exc}"
                    raise KernelUnavailable(_FAILED[key]) from None
                kernel = None
            if kernel is not None:
                _KERNELS[key] = kernel
                return kernel
        try:
            kernel = _make_kernel(key[0])
            _probe(kernel, key[0], dtype)
        except Exception as exc:  # noqa: BLE001 - any compiler/toolchain failure means "not available"
            text = str(exc).strip()
            reason = text.splitlines()[0][:200] if text else type(exc).__name__
            _FAILED[key] = (
                f"torch.compile could not build the fused kernel ({type(exc).__name__}: {reason})"
            )
            raise KernelUnavailable(_FAILED[key]) from None
        _KERNELS[key] = kernel
        return kernel


def _probe(kernel: Callable[..., torch.Tensor], exponent: Fraction, dtype: torch.dtype) -> None:
    """Compile (dynamic size) and check the kernel, its maximum (NaN included) and its inverse map.
    The probe is large on purpose: inductor chooses the loop's parallelization from the size seen at
    compile time (a small one compiles a serial loop)."""
    base = torch.tensor([0.0, -0.0, 1.0, -2.0, 0.5, 3.0e-3, -70.0, 1e-6], dtype=dtype)
    q = base.repeat(_PROBE_SIZE // base.numel())
    q_out, w, g = torch.empty_like(q), torch.empty_like(q), torch.ones_like(q)
    for t in (q, q_out, w, g):
        torch._dynamo.mark_dynamic(t, 0)  # one compilation for every size
    half, minus_zero = (torch.tensor(c, dtype=torch.float64) for c in (0.5, -0.0))
    top = kernel(q, q_out, w, g, half)
    g[-3] = math.nan  # the maximum must see a NaN anywhere (here: a vector's last lanes)
    bad = kernel(q, torch.empty_like(q), torch.empty_like(q), g, half)
    g[-3], g[-6] = 1.0, -math.inf  # and an infinite dual
    bad2 = kernel(q, torch.empty_like(q), torch.empty_like(q), g, half)
    w0 = torch.empty_like(q)  # the inverse map of q_out, by the same kernel
    kernel(q_out, torch.empty_like(q), w0, torch.zeros_like(q), minus_zero)
    shifted = base + 0.5
    expect = shifted.double().abs().pow(float(exponent)).copysign(shifted.double()).to(dtype)
    tol = 64 * torch.finfo(dtype).eps
    if not (
        torch.equal(q_out[: base.numel()], shifted)
        and torch.allclose(w[: base.numel()], expect, rtol=tol, atol=0.0)
        and float(top) == float(w.abs().max())
        and math.isnan(float(bad))
        and not math.isfinite(float(bad2))
        and torch.equal(bits_of(w0), bits_of(w))
    ):
        raise KernelUnavailable(
            f"the compiled kernel for exponent {exponent} failed its probe: "
            f"{w[: base.numel()].tolist()}"
        )


def bits_of(t: torch.Tensor) -> torch.Tensor:
    """The tensor's bit patterns (so that ``torch.equal`` tells ``-0`` from ``+0``)."""
    return t.view(_INT[t.dtype])
