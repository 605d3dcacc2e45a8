"""Torch twins of `certify.lp`: the l_p potential, mirror maps and Bregman divergence (docs/theory.md section 2).

Same names and semantics as the numpy functions in `certify.lp` (which hold the float64 reference);
here they run on any dtype/device and are differentiable where the math is. ``dim`` selects the
dimensions to reduce (``None``: all entries), so a stack ``W[B, d, d]`` uses ``dim=(-2, -1)``.
Overflow gives `FloatingPointError`, never a clipped value.
"""

from __future__ import annotations

from typing import Any

import torch

from certify.errors import MdcertError
from certify.lp import Exponents, dual_exponent, exponents_of

__all__ = [
    "Exponents",
    "exponents_of",
    "dual_exponent",
    "lp_norm",
    "psi",
    "mirror_map",
    "inverse_mirror_map",
    "bregman",
    "bregman_terms",
    "lp_normalize",
    "signed_pow",
]

Dim = int | tuple[int, ...] | None


def _finite(name: str, W: torch.Tensor) -> torch.Tensor:
    if not isinstance(W, torch.Tensor):
        W = torch.as_tensor(W, dtype=torch.float64)
    if not bool(torch.isfinite(W).all()):
        raise MdcertError(f"{name} contains NaN or Inf; the l_p geometry needs finite values")
    return W


def _checked(name: str, out: torch.Tensor) -> torch.Tensor:
    if not bool(torch.isfinite(out).all()):
        raise FloatingPointError(
            f"{name} overflowed {out.dtype} (non-finite result); rescale the input"
        )
    return out


def _dims(t: torch.Tensor, dim: Dim) -> tuple[int, ...]:
    if dim is None:
        return tuple(range(t.ndim))
    return (dim,) if isinstance(dim, int) else tuple(dim)


def signed_pow(t: torch.Tensor, exponent: float) -> torch.Tensor:
    """``sign(t) |t|^exponent`` (0 maps to 0); exponents 2 and 1/2 use the fast square/sqrt."""
    if exponent == 1.0:
        return t.clone()
    a = t.abs()
    if exponent == 2.0:
        mag = a * a
    elif exponent == 0.5:
        mag = a.sqrt()
    else:
        mag = a.pow(exponent)
    return mag * t.sign()


def lp_norm(W: torch.Tensor, p: Any, *, dim: Dim = None) -> torch.Tensor:
    """Entrywise l_p norm, scaled so it does not overflow for finite input (0-d tensor for dim=None)."""
    e = exponents_of(p)
    a = _finite("W", W).abs()
    dims = _dims(a, dim)
    if a.numel() == 0:
        return a.sum(dim=dims)
    scale = a.amax(dim=dims, keepdim=True)
    safe = torch.where(scale > 0, scale, torch.ones_like(scale))
    total = (a / safe).pow(e.p).sum(dim=dims, keepdim=True)
    return (scale * total.pow(e.inv_p)).squeeze(dims) if dims else scale * total.pow(e.inv_p)


def psi(W: torch.Tensor, p: Any, *, dim: Dim = None) -> torch.Tensor:
    """Potential ``psi(W) = (1/p) ||W||_p^p``; raises FloatingPointError on overflow."""
    e = exponents_of(p)
    a = _finite("W", W).abs()
    return _checked("psi", a.pow(e.p).sum(dim=_dims(a, dim)) / e.p)


def mirror_map(W: torch.Tensor, p: Any) -> torch.Tensor:
    """Mirror map ``grad psi(W) = sign(W) |W|^{p-1}``; raises FloatingPointError on overflow."""
    e = exponents_of(p)
    return _checked("mirror_map", signed_pow(_finite("W", W), e.pm1))


def inverse_mirror_map(Q: torch.Tensor, p: Any) -> torch.Tensor:
    """Inverse mirror map ``sign(Q) |Q|^{1/(p-1)}``; raises FloatingPointError on overflow."""
    e = exponents_of(p)
    return _checked("inverse_mirror_map", signed_pow(_finite("Q", Q), e.inv_pm1))


def _series_h(u: torch.Tensor, p: float, terms: int = 18) -> torch.Tensor:
    coeffs = [(p - 1.0) / 2.0]
    for k in range(2, terms):
        coeffs.append(coeffs[-1] * (p - k) / (k + 1))
    acc = torch.zeros_like(u)
    for c in reversed(coeffs):
        acc = acc * u + c
    return acc * u * u


def bregman_terms(A: torch.Tensor, B: torch.Tensor, p: Any) -> torch.Tensor:
    """Entrywise Bregman divergences (each >= 0), accurate near ``A = B``; see `certify.lp.bregman_terms`."""
    e = exponents_of(p)
    a, b = torch.broadcast_tensors(_finite("A", A), _finite("B", B))
    ab, bb = a.abs(), b.abs()
    bp = bb.pow(e.p)
    direct = ab.pow(e.p) / e.p + bp * e.inv_q - a * bb.pow(e.pm1) * b.sign()
    nz = b != 0
    ratio = torch.where(nz, a / torch.where(nz, b, torch.ones_like(b)), torch.zeros_like(a))
    u = ratio - 1.0
    close = nz & (u.abs() <= 0.5)
    small = u.abs() <= 0.1
    uu = torch.where(close, u, torch.zeros_like(u))
    h_mid = torch.expm1(e.p * torch.log1p(uu)) / e.p - uu
    h_small = _series_h(torch.where(small, uu, torch.zeros_like(uu)), e.p)
    h = torch.where(small, h_small, h_mid)
    out = torch.where(close, bp * h, direct).clamp_min(
        0.0
    )  # each term >= 0; rounding can give -tiny
    return _checked("bregman", out)


def bregman(A: torch.Tensor, B: torch.Tensor, p: Any, *, dim: Dim = None) -> torch.Tensor:
    """Bregman divergence ``D_psi(A, B) = psi(A) - psi(B) - <grad psi(B), A - B>`` (reference first)."""
    terms = bregman_terms(A, B, p)
    return _checked("bregman", terms.sum(dim=_dims(terms, dim)))


def lp_normalize(W: torch.Tensor, p: Any, *, dim: Dim = None) -> torch.Tensor:
    """Unit-norm direction ``W / ||W||_p``; MdcertError for a zero matrix."""
    W = _finite("W", W)
    norm = lp_norm(W, p, dim=dim)
    if bool((norm == 0).any()):
        raise MdcertError("cannot l_p-normalize a zero matrix; it has no direction")
    if dim is not None:
        for d in sorted(x % W.ndim for x in _dims(W, dim)):
            norm = norm.unsqueeze(d)
    return W / norm
