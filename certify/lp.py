"""The l_p potential, its mirror maps and Bregman divergence in float64 numpy (docs/theory.md section 2).

All functions are pure and vectorized. ``p`` is accepted as a decimal/``num/den`` string, a
`Fraction`, an int or a float and is parsed exactly with `certify.exact.parse_p`; the derived float
exponents (``p - 1``, ``1/(p - 1)``, ``1/p``) are rounded once from the exact rational. These are
float computations: they may refute a claim but never prove one (certificates use balls, see
docs/theory.md section 4). The torch twins live in ``experiments.optim.mirror``.

Norms are entrywise: ``||W||_p = (sum_jk |W_jk|^p)^{1/p}`` (not Schatten). ``axis`` selects the
axes to reduce (``None``: all entries), so a stack ``W[B, d, d]`` uses ``axis=(-2, -1)``.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np

from certify.errors import MdcertError
from certify.exact import parse_p

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
]

Axis = int | tuple[int, ...] | None


class Exponents:
    """Float exponents derived once from an exact ``p`` (each rounded from the exact rational).

    Attributes:
        exact: the exact `Fraction` p.
        p: float(p).
        pm1: float(p - 1), the mirror-map exponent.
        inv_pm1: float(1 / (p - 1)), the inverse-map exponent.
        inv_p: float(1 / p).
        inv_q: float(1 / q) = float((p - 1) / p).
    """

    __slots__ = ("exact", "p", "pm1", "inv_pm1", "inv_p", "inv_q")

    def __init__(self, p: Any) -> None:
        exact = parse_p(p)
        self.exact: Fraction = exact
        self.p = float(exact)
        self.pm1 = float(exact - 1)
        self.inv_pm1 = float(1 / (exact - 1))
        self.inv_p = float(1 / exact)
        self.inv_q = float((exact - 1) / exact)

    def __repr__(self) -> str:
        return f"Exponents(p={self.exact})"


def exponents_of(p: Any) -> Exponents:
    """`Exponents` for ``p`` (passes an `Exponents` through unchanged)."""
    return p if isinstance(p, Exponents) else Exponents(p)


def dual_exponent(p: Any) -> Fraction:
    """Exact conjugate exponent ``q = p / (p - 1)`` (so ``1/p + 1/q = 1``)."""
    exact = parse_p(p)
    return exact / (exact - 1)


def _finite(name: str, W: Any) -> np.ndarray:
    a = np.asarray(W, dtype=np.float64)
    if not np.all(np.isfinite(a)):
        raise MdcertError(f"{name} contains NaN or Inf; the l_p geometry needs finite values")
    return a


def _checked(name: str, out: np.ndarray) -> np.ndarray:
    if not np.all(np.isfinite(out)):
        raise FloatingPointError(
            f"{name} overflowed float64 (non-finite result); rescale the input"
        )
    return out


def lp_norm(W: Any, p: Any, *, axis: Axis = None) -> np.ndarray | float:
    """Entrywise l_p norm, computed with scaling so it never overflows for finite input.

    Args:
        W: array of any shape.
        p: exponent ``1 < p < inf``.
        axis: axes to reduce (``None``: all entries).

    Returns:
        The norm (a float for ``axis=None``, else an array).
    """
    e = exponents_of(p)
    a = np.abs(_finite("W", W))
    scale = np.max(a, axis=axis, keepdims=True) if a.size else np.zeros((1,) * a.ndim)
    safe = np.where(scale > 0, scale, 1.0)
    total = np.sum((a / safe) ** e.p, axis=axis, keepdims=True)
    out = np.squeeze(
        scale * total**e.inv_p, axis=axis if axis is not None else tuple(range(a.ndim))
    )
    return float(out) if np.ndim(out) == 0 else out


def psi(W: Any, p: Any, *, axis: Axis = None) -> np.ndarray | float:
    """Potential ``psi(W) = (1/p) ||W||_p^p`` (docs/theory.md section 2).

    Raises:
        FloatingPointError: the value overflows float64.
    """
    e = exponents_of(p)
    a = np.abs(_finite("W", W))
    with np.errstate(over="ignore"):
        out = np.sum(a**e.p, axis=axis) / e.p
    out = _checked("psi", np.asarray(out))
    return float(out) if out.ndim == 0 else out


def mirror_map(W: Any, p: Any) -> np.ndarray:
    """Mirror map ``grad psi(W) = sign(W) |W|^{p-1}`` (entrywise).

    Raises:
        FloatingPointError: a value overflows float64.
    """
    e = exponents_of(p)
    a = _finite("W", W)
    with np.errstate(over="ignore"):
        out = np.asarray(np.copysign(np.abs(a) ** e.pm1, a))
    return _checked("mirror_map", out)


def inverse_mirror_map(Q: Any, p: Any) -> np.ndarray:
    """Inverse mirror map ``sign(Q) |Q|^{1/(p-1)}`` (entrywise; the gradient of psi's conjugate).

    Raises:
        FloatingPointError: a value overflows float64 (e.g. a too-large mirror step).
    """
    e = exponents_of(p)
    a = _finite("Q", Q)
    with np.errstate(over="ignore"):
        out = np.asarray(np.copysign(np.abs(a) ** e.inv_pm1, a))
    return _checked("inverse_mirror_map", out)


def _series_h(u: np.ndarray, p: float, terms: int = 18) -> np.ndarray:
    """``(1/p)((1+u)^p - 1) - u = sum_{k>=2} c_k u^k`` with ``c_2 = (p-1)/2``, for ``|u| <= 0.1``."""
    coeffs = [0.0, 0.0, (p - 1.0) / 2.0]
    for k in range(2, terms):
        coeffs.append(coeffs[-1] * (p - k) / (k + 1))
    acc = np.zeros_like(u)
    for c in reversed(coeffs[2:]):
        acc = acc * u + c
    return acc * u * u


def bregman_terms(A: Any, B: Any, p: Any) -> np.ndarray:
    """Entrywise Bregman divergences ``d(a, b)`` of the separable potential (each >= 0).

    ``D_psi(A, B) = sum d(a, b)`` with ``d(a, b) = |a|^p/p - |b|^p/p - sign(b)|b|^{p-1}(a - b)``.
    Where ``a/b = 1 + u`` is close to 1 the value is evaluated as ``|b|^p h(u)`` with an
    accurate ``h`` (series for small ``|u|``, ``expm1``/``log1p`` otherwise), so it keeps relative
    accuracy instead of cancelling; ``d(b, b) = 0`` exactly.
    """
    e = exponents_of(p)
    a = _finite("A", A)
    b = _finite("B", B)
    a, b = np.broadcast_arrays(a, b)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        ab, bb = np.abs(a), np.abs(b)
        bp = bb**e.p
        direct = ab**e.p / e.p + bp * e.inv_q - a * np.copysign(bb**e.pm1, b)
        ratio = np.where(b != 0, a / np.where(b != 0, b, 1.0), 0.0)
        u = ratio - 1.0
        close = (b != 0) & (np.abs(u) <= 0.5)
        small = np.abs(u) <= 0.1
        uu = np.where(close, u, 0.0)
        h_mid = np.expm1(e.p * np.log1p(uu)) / e.p - uu
        h_small = _series_h(np.where(small, uu, 0.0), e.p)
        h = np.where(small, h_small, h_mid)
        out = np.where(close, bp * h, direct)
    out = np.maximum(out, 0.0)  # each term is >= 0 mathematically; rounding can give -tiny
    return _checked("bregman", out)


def bregman(A: Any, B: Any, p: Any, *, axis: Axis = None) -> np.ndarray | float:
    """Bregman divergence ``D_psi(A, B) = psi(A) - psi(B) - <grad psi(B), A - B>`` (reference first).

    Not symmetric. The theory tracks ``D_psi(Wbar_mm, Wbar(k))`` (docs/theory.md section 2).
    ``D >= 0``, ``= 0`` iff ``A = B``, and ``D(cA, cB) = c^p D(A, B)`` for ``c > 0``.

    Args:
        A: reference point.
        B: base point (where the mirror map is evaluated).
        p: exponent ``1 < p < inf``.
        axis: axes to reduce (``None``: all entries).
    """
    out = np.sum(bregman_terms(A, B, p), axis=axis)
    out = _checked("bregman", np.asarray(out))
    return float(out) if out.ndim == 0 else out


def lp_normalize(W: Any, p: Any, *, axis: Axis = None) -> np.ndarray:
    """Unit-norm direction ``W / ||W||_p`` (``Wbar`` in docs/theory.md section 2).

    Raises:
        MdcertError: W is zero (along the reduced axes), so it has no direction.
    """
    a = _finite("W", W)
    norm = np.asarray(lp_norm(a, p, axis=axis))
    if np.any(norm == 0):
        raise MdcertError("cannot l_p-normalize a zero matrix; it has no direction")
    if axis is not None:
        norm = np.expand_dims(norm, axis)
    return a / norm
