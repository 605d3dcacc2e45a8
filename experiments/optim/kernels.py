"""Kernels of the l_p mirror step (docs/theory.md section 2): validation, exact-exponent power plans, the
out-of-place reference update and the chunked in-place CPU loops used by `experiments.optim.optimizer`.

Power plans evaluate ``sign(x)|x|^e`` for an exact rational ``e`` with the cheapest formula that is
exact to rounding: ``e = 1`` a copy, ``e = 2`` ``|x| * x``, integers by binary powering of ``x`` or
``x^2`` (``10``: ``(x^2)^5``, four multiplications), ``k/2^j`` as a product of repeated square roots
(``3/4``: ``sqrt|x| * sqrt(sqrt|x|)``: no intermediate leaves ``[|x|, 1]``, so nothing over- or
underflows early), anything else ``e = m + f`` as ``exp2(f * log2|x|) * x * |x|^{m-1}`` (``4/3``:
``x * |x|^{1/3}``; the smaller exp2 argument also loses fewer digits). Float32 error against the
float64 power over ``|x|`` in ``[1e-26, 1e26]`` (tested): at most 2.2 eps for square roots, 6.6 for
integers up to 17, 15.4 for ``4/3`` (exp2 amplifies the rounding of ``f log2|x|``).

Cost on the 2-core AVX2 machine (10M float32, 2 threads, 4 MiB chunks): a multiplication, ``abs``
or ``add`` pass 2-3 ms (about one SGD step: L3 is not much faster than DRAM here), ``log2`` ~8,
``exp2`` ~4, ``sqrt`` ~5, ``torch.pow(x, 4/3)`` ~30. A Newton cube root (bit-trick start, three
iterations of four passes) costs more than ``log2 + exp2``, and ``torch.compile`` of the fused
``|Q|^{4/3}`` step measured 16.9 ms against 17-21 ms eager (fused Adam 7.2 ms) after an 8 s compile,
so neither is used.
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction
from typing import Any

import torch

from certify.errors import MdcertError
from certify.exact import format_fraction, parse_p
from experiments.optim.threads import chunk_bounds

__all__ = [
    "absmax",
    "dual_norm",
    "dual_unit",
    "unit_norm",
    "pow2_scaled",
    "normalized",
    "simple_update",
    "validate_lr",
    "validate_p",
    "p_text",
    "PowPlan",
    "mirror_step",
    "CHUNK",
    "sample_positions",
    "chunked_dual",
    "chunked_step_cached",
    "chunked_step_direct",
    "chunked_inverse",
    "inverse_reproduces",
    "signed_pow_into",
]

CHUNK = (
    1 << 20
)  # elements per chunk (4 MiB of float32: L3-resident; fewer thread barriers than 1 MiB)


def validate_lr(lr: Any) -> float:
    try:
        value = float(lr)
    except (TypeError, ValueError):
        raise MdcertError(f"Invalid learning rate: {lr}; lr must be a finite number > 0") from None
    if not (math.isfinite(value) and value > 0):
        raise MdcertError(f"Invalid learning rate: {lr}; lr must be a finite number > 0")
    return value


_P_CACHE: dict[tuple[type, Any], Fraction] = {}


def validate_p(p: Any) -> Fraction:
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
        raise MdcertError(
            f"Invalid p: {p}; p must be a finite rational > 1, e.g. 1.75 or '7/4'"
        ) from None
    if not Fraction(1, 2**1000) <= exact - 1 <= 2**1000:  # the exponents p - 1, 1/(p - 1) as floats
        raise MdcertError(
            f"Invalid p: {str(p)[:40]}; the float mirror map needs 2**-1000 <= p - 1 <= 2**1000"
        )
    if key is not None and len(_P_CACHE) < 1024:
        _P_CACHE[key] = exact
    return exact


@functools.lru_cache(maxsize=256)
def p_text(exact: Fraction) -> str:
    """``format_fraction(exact)`` (the group's ``p_exact``), kept: a step asks for it each time."""
    return format_fraction(exact)


class PowPlan:
    """How to evaluate ``sign(x)|x|^e`` for an exact exponent ``e`` with cheap operations.

    Kinds: ``one``; ``square`` (``|x| * x``); ``dyadic`` for integers and ``e = m + k/2^j`` (``j <= 4``,
    ``m <= 16``): the product of the repeated square roots ``|x|^{1/2^i}`` over the set bits of ``k/2^j``
    (``3/4``: ``sqrt|x| * sqrt(sqrt|x|)``), times ``|x|^m`` (square-and-multiply of ``x`` or ``x^2`` when there is no fractional part); ``generic``
    ``e = m + f`` (``0 < f < 1``): ``exp2(f * log2|x|) * x * |x|^{m-1}`` (``m = 0``: with ``copysign``).
    """

    __slots__ = ("exact", "value", "kind", "whole", "frac", "bits", "roots")

    def __init__(self, exponent: Fraction) -> None:
        self.exact = exponent
        self.value = float(exponent)
        den = exponent.denominator
        self.whole = exponent.numerator // den
        frac = exponent - self.whole
        self.frac = float(frac)
        self.roots = den.bit_length() - 1
        self.bits = tuple(
            i
            for i in range(1, self.roots + 1)
            if (frac * 2**i).numerator // (frac * 2**i).denominator % 2
        )
        if exponent == 1:
            self.kind = "one"
        elif exponent == 2:
            self.kind = "square"
        elif den == 1 or (den & (den - 1) == 0 and den <= 16 and self.whole <= 16):
            self.kind = "dyadic"
        else:
            self.kind = "generic"

    def __repr__(self) -> str:
        return f"PowPlan({self.exact}, {self.kind})"


def signed_pow_into(out: torch.Tensor, x: torch.Tensor, plan: PowPlan, tmp: torch.Tensor) -> None:
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
        if plan.whole == 0:
            torch.abs(x, out=out)
            out.log2_().mul_(plan.frac).exp2_()
        else:  # e = m + f: |x|^f * x * |x|^{m-1} (the product carries the sign; exp2's argument is smaller)
            torch.abs(x, out=tmp)
            torch.log2(tmp, out=out)
            out.mul_(plan.frac).exp2_()
            for _ in range(plan.whole - 1):
                out.mul_(tmp)
            out.mul_(x)
            return
    elif (
        not plan.bits
    ):  # integer exponent m: left-to-right binary powering of x (m odd) or x^2 (m even)
        whole, base = plan.whole, x
        if whole % 2 == 0:  # x^{2k} = (x^2)^k; the sign is restored by copysign below
            torch.mul(x, x, out=tmp)
            base, whole = tmp, whole // 2
        bits = bin(whole)[3:]
        torch.mul(base, base, out=out)
        if bits and bits[0] == "1":
            out.mul_(base)
        for bit in bits[1:]:
            out.mul_(out)
            if bit == "1":
                out.mul_(base)
        if plan.whole % 2 == 1:  # an odd power of x already has the sign of x
            return
    else:  # |x|^{0.b1b2..bj} = product over set bits i of |x|^{1/2^i} (repeated square roots): every
        # factor lies between |x| and 1, so no intermediate overflows or underflows before the result
        torch.abs(x, out=tmp)
        first = plan.bits[0]
        for _ in range(first - 1):
            tmp.sqrt_()
        torch.sqrt(tmp, out=out)  # |x|^{1/2^first}
        for i in range(first + 1, plan.bits[-1] + 1):
            if i == first + 1:
                torch.sqrt(out, out=tmp)
            else:
                tmp.sqrt_()
            if i in plan.bits:
                out.mul_(tmp)
        for _ in range(plan.whole):  # |x|^m (signs are fixed by copysign below)
            out.mul_(x)
    out.copysign_(x)


def absmax(t: torch.Tensor) -> float:
    """``max|t|`` in one pass without temporaries (NaN propagates; 0 for an empty tensor)."""
    if t.numel() == 0:
        return 0.0
    lo, hi = torch.aminmax(t)
    lo, hi = float(lo), float(hi)
    if math.isnan(lo) or math.isnan(hi):
        return math.nan
    return max(-lo, hi)


def dual_norm(g: torch.Tensor, q: float) -> float:
    """Scaled entrywise ``||g||_q`` (no overflow for finite g; a subnormal result has few digits:
    normalize with `normalized` or `dual_unit` instead)."""
    unit = dual_unit(g, q)
    return 0.0 if unit is None else math.ldexp(unit[1], -unit[0])


def dual_unit(g: torch.Tensor, q: float) -> tuple[int, float] | None:
    """``(k, n)`` with ``n = ||g 2^k||_q`` (docs/theory.md section 2.3): ``2^k`` brings ``max|g|`` into
    [1/2, 1), a power of two (exact, subnormal gradients included), so ``n`` lies in [1/2, dim^(1/q)]
    and ``g / ||g||_q = (g 2^k) / n`` never under- or overflows, however small g is. None when g is 0."""
    a = g.detach().abs()
    m = float(a.max()) if a.numel() else 0.0
    if m == 0.0:
        return None
    k = -math.frexp(m)[1]
    return k, math.ldexp(m, k) * float(((a / m).pow(q)).sum().double().pow(1.0 / q))


def unit_norm(unit: tuple[int, float], dtype: torch.dtype) -> float | None:
    """``||g||_q = n 2^-k`` when it and its reciprocal are normal numbers of ``dtype`` far from
    overflow (then ``g / ||g||_q`` is one division, as ever); None at the edges of the range."""
    info = torch.finfo(dtype)
    norm = math.ldexp(unit[1], -unit[0]) if unit[0] > -1000 else math.inf
    return norm if info.tiny * 2.0**64 <= norm <= info.max / 4 else None


def pow2_scaled(g: torch.Tensor, k: int) -> torch.Tensor:
    """``g 2^k`` exactly (two finite power-of-two factors, so ``|k|`` up to about 2046 is fine)."""
    h = k // 2
    return g * 2.0**h * 2.0 ** (k - h)


def normalized(g: torch.Tensor, q: float) -> torch.Tensor | None:
    """``g / ||g||_q`` formed without underflow (`dual_unit`); None when g is exactly zero."""
    unit = dual_unit(g, q)
    if unit is None:
        return None
    norm = unit_norm(unit, g.dtype)
    return g / norm if norm is not None else pow2_scaled(g, unit[0]) / unit[1]


def mirror_step(
    W: torch.Tensor,
    G: torch.Tensor,
    lr: float,
    p: Any,
    *,
    maximize: bool = False,
    normalize_gradient: bool = False,
) -> torch.Tensor:
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
    lr = validate_lr(lr)
    exact = validate_p(p)
    if not bool(torch.isfinite(G).all()):
        raise FloatingPointError(
            "mirror_step: non-finite gradient; check the loss or use a smaller lr"
        )
    if not bool(torch.isfinite(W).all()):
        raise FloatingPointError("mirror_step: the point contains NaN or Inf")
    new = simple_update(W, G, lr, exact, maximize, normalize_gradient)
    if not bool(torch.isfinite(new).all()):
        raise FloatingPointError(f"mirror_step: the step overflowed {W.dtype}; use a smaller lr")
    return new


def simple_update(
    W: torch.Tensor, G: torch.Tensor, lr: float, exact: Fraction, maximize: bool, normalize: bool
) -> torch.Tensor:
    g = -G if maximize else G
    if normalize:
        g = normalized(g, float(exact / (exact - 1)))
        if g is None:  # exactly zero: no direction, no step
            return W.clone()
    if exact == 2:
        return W.clone().add_(g, alpha=-lr)
    pm1, inv = float(exact - 1), float(1 / (exact - 1))
    Q = W.abs().pow(pm1) * W.sign()
    Q = Q - lr * g
    return Q.abs().pow(inv) * Q.sign()


# ---------------------------------------------------------------------- chunked in-place CPU loops
def _chunks(n: int) -> list[tuple[int, int]]:
    return chunk_bounds(n, chunk=CHUNK)  # pieces split evenly over threads (bit-identical results)


def _extreme(extremes: list[torch.Tensor]) -> float:
    """Exact ``max|.|`` from per-chunk ``aminmax`` results (NaN propagates, 0 for none)."""
    if not extremes:
        return 0.0
    ext = float(torch.stack(extremes).abs().max())
    return ext


def chunked_dual(Q: torch.Tensor, W: torch.Tensor, fwd: PowPlan, tmp: torch.Tensor) -> float:
    """``Q <- grad psi(W) = sign(W)|W|^{p-1}`` (flat contiguous tensors); returns the exact ``max|Q|``."""
    extremes: list[torch.Tensor] = []
    for s, e in _chunks(W.numel()):
        qc = Q[s:e]
        signed_pow_into(qc, W[s:e], fwd, tmp[: e - s])
        extremes.extend(torch.aminmax(qc))
    return _extreme(extremes)


def chunked_inverse(out: torch.Tensor, Q: torch.Tensor, inv: PowPlan, tmp: torch.Tensor) -> None:
    """``out <- sign(Q)|Q|^{1/(p-1)}`` chunk by chunk (``out`` must not alias ``Q``)."""
    for s, e in _chunks(Q.numel()):
        signed_pow_into(out[s:e], Q[s:e], inv, tmp[: e - s])


def inverse_reproduces(
    W: torch.Tensor, Q: torch.Tensor, inv: PowPlan, scratch: torch.Tensor, tmp: torch.Tensor
) -> bool:
    """Exact identity check: does the inverse map of ``Q`` round to ``W`` bit for bit (every entry)?"""
    for s, e in _chunks(W.numel()):
        out = scratch[: e - s]
        signed_pow_into(out, Q[s:e], inv, tmp[: e - s])
        if not torch.equal(out, W[s:e]):
            return False
    return True


def chunked_step_cached(
    W: torch.Tensor, Q: torch.Tensor, G: torch.Tensor, coef: float, inv: PowPlan, tmp: torch.Tensor
) -> None:
    """In place, chunk by chunk: ``Q <- Q + coef * G``, ``W <- sign(Q)|Q|^{1/(p-1)}``.

    One power per entry (the inverse map) instead of two; every intermediate stays in cache.
    """
    for s, e in _chunks(W.numel()):
        qc = Q[s:e]
        qc.add_(G[s:e], alpha=coef)
        signed_pow_into(W[s:e], qc, inv, tmp[: e - s])


def chunked_step_direct(
    target: torch.Tensor,
    W: torch.Tensor,
    G: torch.Tensor,
    coef: float,
    fwd: PowPlan,
    inv: PowPlan,
    q: torch.Tensor,
    tmp: torch.Tensor,
    extremes: list | None = None,
) -> None:
    """``target <- inv(fwd(W) + coef * G)`` chunk by chunk (``target`` may be ``W``); per-chunk
    ``aminmax`` of the result appended to ``extremes`` when given (in cache, nearly free)."""
    for s, e in _chunks(W.numel()):
        qc, tc = q[: e - s], tmp[: e - s]
        signed_pow_into(qc, W[s:e], fwd, tc)
        qc.add_(G[s:e], alpha=coef)
        signed_pow_into(target[s:e], qc, inv, tc)
        if extremes is not None:
            extremes.extend(torch.aminmax(target[s:e]))


@functools.lru_cache(maxsize=64)
def sample_positions(n: int) -> torch.Tensor:
    """64 evenly spaced positions in ``range(n)`` (all of them when ``n <= 64``), for the dual
    cache's sampled check (`experiments.optim.dual`); shared and never written, so computed once
    per size (each torch call costs a step of a large tensor more once its stream has evicted the
    caches)."""
    return torch.linspace(0, n - 1, steps=min(n, 64)).round().long()
