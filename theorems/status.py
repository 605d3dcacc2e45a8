"""Verdict and method enums and the small exact-number helpers of `theorems.verdict` (docs/theory.md
section 5): HOLDS / FAILS / UNDECIDED with Kleene conjunction, how evidence was obtained."""

from __future__ import annotations

from enum import Enum
from fractions import Fraction
from typing import Any, Iterable

from certify.exact import format_fraction

__all__ = [
    "EvidenceError",
    "Method",
    "Verdict",
    "approx_float",
    "fraction_text",
    "fraction_or_none",
    "kleene_and",
]


class EvidenceError(AssertionError):
    """An internal soundness violation: a report claims more than its evidence proves."""


class Verdict(str, Enum):
    """Kleene three-valued truth value of a hypothesis."""

    HOLDS = "holds"
    FAILS = "fails"
    UNDECIDED = "undecided"

    def __and__(self, other: "Verdict") -> "Verdict":
        """Kleene AND: FAILS dominates, then UNDECIDED, HOLDS only if both hold."""
        if not isinstance(other, Verdict):
            return NotImplemented
        if Verdict.FAILS in (self, other):
            return Verdict.FAILS
        if Verdict.UNDECIDED in (self, other):
            return Verdict.UNDECIDED
        return Verdict.HOLDS

    def __or__(self, other: "Verdict") -> "Verdict":
        """Kleene OR (dual of AND)."""
        if not isinstance(other, Verdict):
            return NotImplemented
        if Verdict.HOLDS in (self, other):
            return Verdict.HOLDS
        if Verdict.UNDECIDED in (self, other):
            return Verdict.UNDECIDED
        return Verdict.FAILS


def kleene_and(verdicts: Iterable[Verdict]) -> Verdict:
    """Kleene AND of many verdicts (HOLDS for an empty iterable)."""
    out = Verdict.HOLDS
    for v in verdicts:
        out = out & v
    return out


class Method(str, Enum):
    """How an enclosure was obtained. Only EXACT and INTERVAL are rigorous."""

    EXACT = "exact"  # integer / rational arithmetic on the given float64 data
    INTERVAL = "interval"  # outward-rounded ball arithmetic (python-flint arb)
    SOLVER = "solver"  # a numerical solver's output (warm start only)
    SAMPLED = "sampled"  # sampling or float64 evaluation at some points

    @property
    def rigorous(self) -> bool:
        return self in (Method.EXACT, Method.INTERVAL)


def fraction_or_none(name: str, value: Any) -> Fraction | None:
    if value is None:
        return None
    if isinstance(value, bool):
        raise TypeError(f"Evidence.{name} must be a Fraction or int, not bool")
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, Fraction):
        return value
    raise TypeError(
        f"Evidence.{name} must be an exact Fraction or int (got {type(value).__name__}); "
        f"convert floats with Fraction(x) and mark them Method.SAMPLED"
    )


def fraction_text(x: Fraction | None) -> str | None:
    return None if x is None else format_fraction(x)


def approx_float(x: Fraction | None) -> float | None:
    """An informational float of an exact value: None when it is None or beyond the float64 range
    (JSON has no infinity); a value below the smallest subnormal reads 0.0."""
    if x is None:
        return None
    try:
        return float(x)
    except OverflowError:
        return None
