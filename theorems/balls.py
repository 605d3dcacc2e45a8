"""Ball-arithmetic helpers (python-flint ``arb``) shared by the rigorous predicates (docs/theory.md section 4).

Every conversion here is exact or outward rounded: dyadic floats become exact balls, rationals
become balls containing them, and an enclosure is turned back into exact `Fraction` end points.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
from flint import arb, fmpq

__all__ = [
    "arb_fraction",
    "arb_dyadic",
    "arb_of_float",
    "arb_array",
    "abs_pow",
    "enclosure",
    "lower_fraction",
    "upper_fraction",
]


def arb_fraction(x: Fraction | int) -> arb:
    """A ball containing the rational ``x`` (exact when x is dyadic and fits the precision)."""
    x = Fraction(x)
    if x.denominator & (x.denominator - 1) == 0:  # power of two: exact dyadic
        return arb((x.numerator, -(x.denominator.bit_length() - 1)))
    return arb(fmpq(x.numerator, x.denominator))


def arb_dyadic(k: int, exp: int) -> arb:
    """The exact ball ``k * 2**exp``."""
    return arb((int(k), int(exp)))


def arb_of_float(x: float) -> arb:
    """The exact ball of a finite float64 (every float64 is dyadic)."""
    if x == 0.0:
        return arb(0)
    num, den = float(x).as_integer_ratio()
    return arb((num, -(den.bit_length() - 1)))


def abs_pow(x: arb, e: arb) -> arb:
    """``|x|**e`` for e > 0, valid when the ball x contains 0 (arb gives nan there)."""
    if x.is_zero():
        return arb(0)
    ax = abs(x)
    if ax.lower() > 0:
        return ax**e
    top = ax.abs_upper() ** e
    return arb(0).union(top)


def _exact_fraction(x: arb) -> Fraction:
    man, exp = x.man_exp()
    man, exp = int(man), int(exp)
    return Fraction(man * 2**exp) if exp >= 0 else Fraction(man, 2**-exp)


def lower_fraction(x: arb) -> Fraction | None:
    """An exact lower bound of the ball (None if not finite)."""
    if not x.is_finite():
        return None
    return _exact_fraction(x.lower())


def upper_fraction(x: arb) -> Fraction | None:
    """An exact upper bound of the ball (None if not finite)."""
    if not x.is_finite():
        return None
    return _exact_fraction(x.upper())


def enclosure(x: arb) -> tuple[Fraction | None, Fraction | None]:
    """Exact ``(lo, hi)`` with the ball inside ``[lo, hi]``."""
    return lower_fraction(x), upper_fraction(x)


def arb_array(values: np.ndarray) -> np.ndarray:
    """Object array of exact balls of a float64 array (same shape)."""
    a = np.asarray(values, dtype=np.float64)
    flat = [arb_of_float(float(v)) for v in a.ravel()]
    out = np.empty(a.size, dtype=object)
    out[:] = flat
    return out.reshape(a.shape)
