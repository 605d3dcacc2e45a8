"""Hypothesis strategies of the property-test kit (docs/theory.md section 2): exact exponents per p regime,
float tensors whose mirror maps stay finite, small attention problems.

The p regimes are searched separately, so a failure is reported in each regime where it occurs (the
realistic one near p = 1 is not hidden behind a shrunk p = 2 extreme):

    near_one   1 < p <= 1.1   (the inverse map's exponent 1/(p-1) is 10 or more)
    below_two  1.1 < p < 2
    two        p = 2           (gradient descent)
    above_two  2 < p <= 8
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np
import torch

try:
    import hypothesis  # noqa: F401
except ImportError as exc:  # pragma: no cover - hypothesis ships with the test extra
    raise ImportError(
        "experiments.testing needs hypothesis; install it with: pip install 'mdcert[test]'"
    ) from exc
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from certify import lp as ref
from certify.problem import AttentionProblem

__all__ = [
    "REGIMES",
    "REGIME_LABELS",
    "regime_of",
    "exponents",
    "safe_bound",
    "bounded_tensors",
    "attention_problems",
    "p_text",
    "safe_lower",
]

#: regime name -> (pinned values tried first, lower bound, upper bound, bounds inclusive?) in hundredths
REGIMES = ("near_one", "below_two", "two", "above_two")
REGIME_LABELS = {
    "near_one": "1 < p <= 1.1",
    "below_two": "1.1 < p < 2",
    "two": "p = 2",
    "above_two": "p > 2",
}
_PINNED = {
    "near_one": ("1.01", "1.1", "1.05", "1.02"),
    "below_two": ("1.5", "1.75", "1.25", "1.9"),
    "two": ("2",),
    "above_two": ("3", "4", "2.5", "8"),
}
_RANGE = {
    "near_one": (101, 110),
    "below_two": (111, 199),
    "two": (200, 200),
    "above_two": (201, 800),
}


def regime_of(p: Any) -> str:
    """The regime name of an exponent (see the module docstring)."""
    exact = ref.exponents_of(p).exact
    if exact <= Fraction(11, 10):
        return "near_one"
    if exact < 2:
        return "below_two"
    return "two" if exact == 2 else "above_two"


def p_text(p: Any) -> str:
    """An exponent as a short decimal when it has one (``1.01``, ``3``), else ``num/den``."""
    exact = ref.exponents_of(p).exact
    if exact.denominator == 1:
        return str(exact.numerator)
    den = exact.denominator
    twos = fives = 0
    while den % 2 == 0:
        den, twos = den // 2, twos + 1
    while den % 5 == 0:
        den, fives = den // 5, fives + 1
    if den == 1:
        return f"{float(exact):.{max(twos, fives)}f}"
    return f"{exact.numerator}/{exact.denominator}"


def exponents(
    *,
    regime: str | None = None,
    min_value: Fraction | str = Fraction(101, 100),
    max_value: Fraction | str = Fraction(8),
) -> st.SearchStrategy[Fraction]:
    """Exact rational exponents with at most two decimals (so ``float(p)`` reads back as the same p).

    Args:
        regime: one of `REGIMES` (pinned values of that regime first, then its hundredths), or None for
            every regime in ``[min_value, max_value]``.
        min_value, max_value: bounds when no regime is given (default ``[1.01, 8]``).
    """
    if regime is not None:
        if regime not in REGIMES:
            raise ValueError(f"unknown regime {regime!r}; choose one of {REGIMES}")
        lo, hi = _RANGE[regime]
        pinned = [Fraction(x) for x in _PINNED[regime]]
        return st.one_of(
            st.sampled_from(pinned), st.integers(lo, hi).map(lambda n: Fraction(n, 100))
        )
    lo_f, hi_f = Fraction(min_value), Fraction(max_value)
    if not 1 < lo_f <= hi_f:
        raise ValueError(f"need 1 < min_value <= max_value, got {lo_f}, {hi_f}")
    pinned = [Fraction(x) for r in REGIMES for x in _PINNED[r] if lo_f <= Fraction(x) <= hi_f]
    lo, hi = math.ceil(lo_f * 100), math.floor(hi_f * 100)
    parts = ([st.sampled_from(pinned)] if pinned else []) + (
        [st.integers(lo, hi).map(lambda n: Fraction(n, 100))] if lo <= hi else []
    )
    if not parts:
        raise ValueError(f"no exponent with two decimals lies in [{lo_f}, {hi_f}]")
    return st.one_of(*parts)


def safe_bound(p: Any | None, dtype: torch.dtype) -> float:
    """Largest magnitude M (quartered) with M^(p-1) and M^(1/(p-1)) both finite in ``dtype``."""
    log_max = math.log(torch.finfo(dtype).max)
    if p is None:
        return math.exp(log_max) / 4
    a = float(ref.exponents_of(p).exact - 1)
    return math.exp(log_max * min(a, 1 / a)) / 4


def safe_lower(p: Any | None, dtype: torch.dtype) -> float:
    """Smallest magnitude m (times 4) whose mirror map m^(p-1) is a normal number of ``dtype`` (p > 2
    raises small entries to a power above 1 and underflows them; p <= 2 cannot)."""
    if p is None:
        return 0.0
    a = float(ref.exponents_of(p).exact - 1)
    return 4 * float(torch.finfo(dtype).tiny) ** (1 / a) if a > 1 else 0.0


def bounded_tensors(
    shape=None,
    *,
    p: Any = None,
    dtype: torch.dtype = torch.float64,
    max_abs: float = 4.0,
    min_abs: float = 0.0,
    allow_zero: bool = True,
) -> st.SearchStrategy[torch.Tensor]:
    """Float tensors whose entries are bounded so the mirror maps of ``p`` stay finite in ``dtype``.

    Args:
        shape: a shape tuple, or None for 1-2 dims of side 1-5.
        p: exponent (str/Fraction/float); the bound is ``min(max_abs, safe_bound(p, dtype))``.
        dtype: torch.float32 or torch.float64 (elements are representable in it).
        max_abs: upper bound on ``|entry|``; min_abs: lower bound of the non-zero ``|entry|``.
        allow_zero: include exact zeros.
    """
    if dtype not in (torch.float32, torch.float64):
        raise ValueError(f"bounded_tensors supports float32 and float64, got {dtype}")
    bound = min(max_abs, safe_bound(p, dtype))
    lower = max(min_abs, 2.0**-60, safe_lower(p, dtype))
    width = 64
    if dtype == torch.float32:
        width = 32
        b32, l32 = np.float32(bound), np.float32(lower)
        bound = float(np.nextafter(b32, np.float32(0)) if float(b32) > bound else b32)
        lower = float(np.nextafter(l32, np.float32(np.inf)) if float(l32) < lower else l32)
    mags = st.floats(
        min_value=lower,
        max_value=bound,
        allow_nan=False,
        allow_infinity=False,
        allow_subnormal=False,
        width=width,
    )
    signed = st.tuples(st.booleans(), mags).map(lambda t: -t[1] if t[0] else t[1])
    elements = st.one_of(st.just(0.0), signed) if allow_zero else signed
    shapes = (
        hnp.array_shapes(min_dims=1, max_dims=2, min_side=1, max_side=5)
        if shape is None
        else st.just(tuple(shape))
    )
    return shapes.flatmap(lambda s: hnp.arrays(np.float64, s, elements=elements)).map(
        lambda a: torch.from_numpy(a).to(dtype)
    )


def attention_problems(
    *, n=st.integers(1, 4), T=st.integers(2, 5), d=st.integers(1, 4), max_abs: float = 4.0
) -> st.SearchStrategy[AttentionProblem]:
    """Small valid `AttentionProblem` instances (bounded finite float64 data, labels in {-1, +1})."""
    elem = st.floats(
        -max_abs, max_abs, allow_nan=False, allow_infinity=False, allow_subnormal=False
    )

    @st.composite
    def build(draw):
        nn_, TT, dd = draw(n), draw(T), draw(d)
        X = draw(hnp.arrays(np.float64, (nn_, TT, dd), elements=elem))
        y = draw(hnp.arrays(np.float64, (nn_,), elements=st.sampled_from([-1.0, 1.0])))
        z = draw(hnp.arrays(np.float64, (nn_, dd), elements=elem))
        v = draw(hnp.arrays(np.float64, (dd,), elements=elem))
        return AttentionProblem(X=X, y=y, z=z, v=v)

    return build()
