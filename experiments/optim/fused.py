"""Fused CPU kernel of the dual mirror step for ``LpMirrorDescent(fused=True)`` (docs/theory.md section 2).

``Q <- Q + coef G;  W <- sign(Q)|Q|^e`` (``e = 1/(p-1)``, exact) in one compiled pass (``torch.compile``,
inductor's C++ backend) instead of the eager add and power plan (six to nine passes). What makes it
pay is the cube root: exponents ``m + 1/3`` and ``m + 2/3`` (``p = 1.75``: ``e = 4/3``; ``p = 1.3``,
``2.5``, ``4``) use a bit-trick start and Halley's iteration ``y <- y (y^3 + 2a) / (2y^3 + a)`` (cubic
convergence: 3.2e-2, 2e-5, 1e-14 relative error), only multiplications and divisions, which the
compiled loop vectorizes; ``exp2``/``log2`` (``e = 1/10`` and other exponents) and square-root chains
(``k/2^j``) are fused as well. Float32 error against the float64 power (tested, eagerly on the same
expression): at most 2.2 eps for ``4/3`` (the eager ``exp2(log2 / 3)`` plan: 15.4 eps). Tried instead
(issue 25, benchmarks/README.md): a division-free Newton iteration for ``|x|^{-1/3}`` (4.0 eps, not
faster), one such step then one Halley step (3.3 eps, within noise) and float64 iterations from the
float32 start (0.5 eps, about 1.5x the kernel's time); none beats two float32 Halley steps.

The optimizer runs every check first (nothing written) and then this kernel, as on the eager path.
One compiled function per exponent and dtype, with a dynamic size (one compilation serves every
size); a compile takes about 30 s on 2 cores the first time and a few seconds from inductor's
on-disk cache. A kernel that cannot be compiled (no C++ compiler, no Python headers) is reported by
`KernelUnavailable`; the optimizer then warns once and uses the eager kernels. (Why torch.compile and
not a hand-written extension or numba: it needs no extra dependency and no build step at install.)
"""

from __future__ import annotations

import threading
import types
from fractions import Fraction
from typing import Callable

import torch

from experiments.optim.kernels import PowPlan

__all__ = ["KernelUnavailable", "step_kernel", "signed_pow_expr", "cbrt_expr"]

_PROBE_SIZE = 1 << 20
_LOCK = threading.Lock()
_KERNELS: dict[tuple[Fraction, torch.dtype], Callable[..., None]] = {}
_FAILED: dict[tuple[Fraction, torch.dtype], str] = {}

# per dtype: integer view, cube-root magic constant, Halley iterations; the floor used when the root
# is multiplied by |x| (``e >= 1``: inputs below it give results that underflow to 0 either way, and
# the floor keeps y^3 normal); and for ``e < 1`` the rescaling of tiny and huge inputs by 2^(+-3k)
_CBRT = {
    torch.float32: (torch.int32, 709921077.0, 2, 2.0**-114, 2.0**-100, 2.0**120, 99),
    torch.float64: (torch.int64, float(0x2A9F7893782DA1CE), 3, 2.0**-810, 2.0**-900, 2.0**960, 900),
}


class KernelUnavailable(RuntimeError):
    """The fused kernel could not be compiled here (the message says why)."""


def cbrt_expr(a: torch.Tensor, *, floor: bool = False) -> torch.Tensor:
    """``a^{1/3}`` for finite ``a >= 0`` (float32/float64) with multiplications and divisions only.

    Start: ``bits(y) = bits(a) / 3 + magic`` (relative error <= 3.2e-2), then Halley's iteration
    (float32: 2, float64: 3 iterations). Default: inputs below ``2^-100`` (float64 ``2^-900``) are
    scaled up by ``2^99`` (``2^900``) and the root scaled back, so subnormals work, huge ones likewise
    down; ``0`` maps to ``0``. ``floor=True`` (for callers that multiply the root by ``a``, cheaper):
    inputs below ``2^-114`` (``2^-810``) are raised to it, where ``a * root`` underflows to 0 anyway.
    """
    ibits, magic, iters, lowest, tiny, huge, k3 = _CBRT[a.dtype]
    if floor:
        s = a.clamp_min(lowest)
    else:
        small, big = a < tiny, a > huge
        s = torch.where(small, a * 2.0**k3, torch.where(big, a * 2.0**-k3, a)).clamp_min(tiny)
    y = (s.view(ibits).to(a.dtype) * (1.0 / 3.0) + magic).to(ibits).view(a.dtype)
    for _ in range(iters):
        y3 = y * y * y
        y = y * ((y3 + 2.0 * s) / (2.0 * y3 + s))  # the ratio first: y * (y^3 + 2s) could overflow
    if floor:
        return y
    y = torch.where(small, y * 2.0 ** -(k3 // 3), torch.where(big, y * 2.0 ** (k3 // 3), y))
    return torch.where(a == 0, a, y)


def _int_pow(a: torch.Tensor, m: int) -> torch.Tensor | None:
    """``a^m`` by square-and-multiply (None for ``m = 0``)."""
    result, base = None, a
    while m:
        if m & 1:
            result = base if result is None else result * base
        m >>= 1
        if m:
            base = base * base
    return result


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
        return torch.copysign(_int_pow(a, whole), x)
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
    power = _int_pow(a, whole)
    if power is not None:
        r = r * power
    return torch.copysign(r, x)


def _make_kernel(exponent: Fraction) -> Callable[..., None]:
    recipe = _recipe(exponent)

    def kernel(q: torch.Tensor, w: torch.Tensor, g: torch.Tensor, coef: torch.Tensor) -> None:
        qn = q + coef * g
        q.copy_(qn)
        w.copy_(signed_pow_expr(qn, recipe))

    # a code object of its own per exponent: torch.compile caches compiled code per code object, so
    # kernels for different exponents never evict each other
    code = kernel.__code__.replace(co_name=f"lp_step_{exponent.numerator}_{exponent.denominator}")
    fn = types.FunctionType(code, kernel.__globals__, code.co_name, None, kernel.__closure__)
    compiled = torch.compile(fn, fullgraph=True)

    def run(q: torch.Tensor, w: torch.Tensor, g: torch.Tensor, coef: torch.Tensor) -> None:
        with torch.no_grad():  # always the same grad mode: a change would recompile (a guard on it)
            compiled(q, w, g, coef)

    return run


def step_kernel(exponent: Fraction, dtype: torch.dtype) -> Callable[..., None]:
    """The compiled dual step ``q <- q + coef g; w <- sign(q)|q|^exponent`` (one pass, in place).

    Arguments: contiguous 1-d CPU tensors ``q, w, g`` of ``dtype`` (``q`` and ``w`` written) and
    ``coef`` a 0-d float64 tensor (a tensor, so that a new ``lr`` never recompiles). With ``g = 0`` and
    ``coef = 0`` it is the inverse map of ``q``, bit for bit the one a step computes (the same code).
    Compiled on first use and checked on a probe (against the float64 power) before it is returned,
    so that a compile failure never happens in the middle of a step.

    Raises:
        KernelUnavailable: the kernel could not be compiled or failed its probe (remembered: asked
            again, the same error is raised without a new attempt).
    """
    if dtype not in _CBRT:
        raise KernelUnavailable(f"fused kernels support float32 and float64, not {dtype}")
    key = (Fraction(exponent), dtype)
    with _LOCK:
        kernel = _KERNELS.get(key)
        if kernel is not None:
            return kernel
        if key in _FAILED:
            raise KernelUnavailable(_FAILED[key])
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


def _probe(kernel: Callable[..., None], exponent: Fraction, dtype: torch.dtype) -> None:
    """Compile (dynamic size) and check the kernel. The probe is large on purpose: inductor chooses
    the loop's parallelization from the size seen at compile time (a small one compiles a serial loop)."""
    base = torch.tensor([0.0, -0.0, 1.0, -2.0, 0.5, 3.0e-3, -70.0, 1e-6], dtype=dtype)
    q = base.repeat(_PROBE_SIZE // base.numel())
    w, g = torch.empty_like(q), torch.ones_like(q)
    for t in (q, w, g):
        torch._dynamo.mark_dynamic(t, 0)  # one compilation for every size
    kernel(q, w, g, torch.tensor(0.5, dtype=torch.float64))
    shifted = base + 0.5
    expect = shifted.double().abs().pow(float(exponent)).copysign(shifted.double()).to(dtype)
    tol = 64 * torch.finfo(dtype).eps
    if not (
        torch.equal(q[: base.numel()], shifted)
        and torch.allclose(w[: base.numel()], expect, rtol=tol, atol=0.0)
    ):
        raise KernelUnavailable(
            f"the compiled kernel for exponent {exponent} failed its probe: "
            f"{w[: base.numel()].tolist()}"
        )
