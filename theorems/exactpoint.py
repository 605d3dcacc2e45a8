"""Exact points of a constraint system (`theorems.tokens`): a float vector read as exact dyadic
integers, its feasibility margin proved exactly, and a Gordan (infeasibility) witness verified
(docs/theory.md section 4)."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

from certify.exact import format_fraction

__all__ = ["exact_vector", "dyadic_scale", "verify_gordan", "verify_point"]


# ---------------------------------------------------------------------- exact vector helpers
def exact_vector(vec: Any) -> tuple[list[int], int, int] | None:
    """Normalize an exact vector to ``(ints, exp, den)`` meaning ``ints * 2**exp / den``.

    Accepts `certify.certificate.ExactVector`-like objects (``ints``, ``exp``, ``den``), sequences of
    Fractions/ints, or None. Floats are refused (they are not evidence).
    """
    if vec is None:
        return None
    if hasattr(vec, "ints"):
        if (
            any(not isinstance(k, (int, np.integer)) for k in vec.ints)
            or int(getattr(vec, "den", 1)) <= 0
        ):
            raise TypeError("exact vectors must hold integers with a positive denominator")
        return [int(k) for k in vec.ints], int(getattr(vec, "exp", 0)), int(getattr(vec, "den", 1))
    if hasattr(vec, "fractions"):
        vec = vec.fractions()
    items = list(vec)
    if any(isinstance(x, (float, np.floating)) for x in items):
        raise TypeError("exact vectors must hold Fractions or ints, not floats")
    fr = [Fraction(x) for x in items]
    den = math.lcm(1, *(f.denominator for f in fr))
    return [int(f * den) for f in fr], 0, den


def dyadic_scale(exp: int, den: int) -> Fraction:
    return Fraction(2) ** exp / den


def verify_point(system, vec: Any) -> Fraction | None:
    """Exact ``min_r a_r^T w`` for the constraint system and an exact point (None if no usable point)."""
    try:
        ev = exact_vector(vec)
    except TypeError:
        return None
    if ev is None:
        return None
    ints, exp, den = ev
    rows, rexp = system.exact_rows()
    if len(ints) != rows.shape[1]:
        return None
    prod = rows.dot(np.array(ints, dtype=object))
    return Fraction(int(min(prod))) * dyadic_scale(rexp + exp, den)


def verify_gordan(system, vec: Any) -> tuple[bool, Fraction, dict]:
    """Exact check of a Gordan vector ``g >= 0, g != 0, A^T g = 0``.

    Returns:
        (valid, max_j |(A^T g)_j| / 1^T g, data) where data maps row labels to normalized weights.
    """
    try:
        ev = exact_vector(vec)
    except TypeError:
        ev = None
    if ev is None:
        return False, Fraction(0), {}
    ints, exp, den = ev
    rows, rexp = system.exact_rows()
    if len(ints) != rows.shape[0] or any(k < 0 for k in ints) or sum(ints) == 0:
        return False, Fraction(0), {}
    combo = np.array(ints, dtype=object).dot(rows)
    total = sum(ints)
    resid = Fraction(int(max(abs(int(c)) for c in combo))) * Fraction(2) ** rexp / total
    data = {
        ",".join(str(x) for x in system.index[r]): format_fraction(Fraction(k, total))
        for r, k in enumerate(ints)
        if k
    }
    return resid == 0, resid, data
