"""Exact vectors of a certificate (docs/formats.md, "certificates"): integers times a power of two over
a common denominator, read back losslessly from JSON, and the small JSON field codecs a
certificate uses (integers that may pass 2^53, fractions, token indices)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Sequence

import numpy as np

from certify.errors import MdcertError
from certify.exact import decimal_int, decimal_str, format_fraction, parse_fraction

__all__ = [
    "ExactVector",
    "MAX_EXP",
    "fraction_json",
    "fraction_float",
    "index_from_json",
    "int_from_json",
    "int_json",
    "ldexp_int",
    "short_repr",
    "fraction_from_json",
]


@dataclass(frozen=True)
class ExactVector:
    """An exact rational vector ``ints * 2**exp / den`` (den > 0; docs/theory.md section 4.1).

    Attributes:
        ints: Python integers.
        exp: common binary exponent.
        den: common positive denominator (1 for dyadic vectors).
    """

    ints: tuple[int, ...]
    exp: int = 0
    den: int = 1

    def __post_init__(self) -> None:
        if self.den <= 0:
            raise MdcertError(f"exact vector denominator must be positive, got {self.den}")

    def __len__(self) -> int:
        return len(self.ints)

    def fractions(self) -> list[Fraction]:
        scale = Fraction(2) ** self.exp / self.den
        return [Fraction(k) * scale for k in self.ints]

    def to_float(self) -> np.ndarray:
        """Each entry rounded to float64 (within one unit in the last place)."""
        if self.den == 1:
            out = np.empty(len(self.ints))
            for j, k in enumerate(self.ints):
                out[j] = ldexp_int(k, self.exp)
            return out
        return np.array([fraction_float(f) for f in self.fractions()], dtype=np.float64)

    def to_json(self) -> dict:
        """Integers as JSON numbers; one beyond Python's 4300-digit str limit as a decimal string
        (``json`` could neither write nor read it as a number)."""
        return {
            "ints": [int_json(k) for k in self.ints],
            "exp": int(self.exp),
            "den": int_json(self.den),
        }

    @classmethod
    def from_json(cls, data: Any, *, name: str = "vector") -> "ExactVector":
        if not isinstance(data, dict) or "ints" not in data:
            raise MdcertError(
                f"certificate field {name!r} must be an object with 'ints', 'exp', 'den'"
            )
        ints = data["ints"]
        try:
            if not isinstance(ints, list):
                raise TypeError
            ints = [int_from_json(k) for k in ints]
            exp, den = data.get("exp", 0), int_from_json(data.get("den", 1))
        except (TypeError, ValueError):
            raise MdcertError(
                f"certificate field {name!r}: 'ints' and 'den' must be integers (no floats)"
            ) from None
        if (
            not isinstance(exp, int)
            or not isinstance(den, int)
            or isinstance(exp, bool)
            or den <= 0
        ):
            raise MdcertError(
                f"certificate field {name!r}: 'exp' must be an integer and 'den' a positive integer"
            )
        if (
            abs(exp) > MAX_EXP
        ):  # 2**exp is formed exactly: a hostile exponent would hang the checker
            raise MdcertError(
                f"certificate field {name!r}: 'exp' = {exp} is out of range (|exp| <= {MAX_EXP})"
            )
        return cls(tuple(ints), exp, den)

    @classmethod
    def from_dyadic(cls, ints: Sequence[int], exp: int) -> "ExactVector":
        return cls(tuple(int(k) for k in ints), int(exp), 1)


#: largest binary exponent of an exact vector read from JSON (real certificates stay far below)
MAX_EXP = 10**7


def ldexp_int(k: int, e: int) -> float:
    """``k * 2**e`` rounded to float64 without overflow in the integer conversion."""
    k = int(k)
    if k == 0:
        return 0.0
    sign = 1.0 if k > 0 else -1.0
    k = abs(k)
    shift = max(0, k.bit_length() - 64)
    try:
        return sign * math.ldexp(float(k >> shift), e + shift)
    except OverflowError:
        return sign * math.inf


def short_repr(x: Any) -> str:
    """A short, safe display of an untrusted value (never the repr of a huge or deeply nested one)."""
    if x is None or isinstance(x, (bool, float)):
        return repr(x)
    if isinstance(x, int):
        return repr(x) if x.bit_length() < 256 else f"an integer of {x.bit_length()} bits"
    if isinstance(x, str):
        return repr(x[:60]) + ("..." if len(x) > 60 else "")
    return f"a {type(x).__name__}"


def fraction_float(x: Fraction) -> float:
    """``float(x)``, +-inf beyond the float64 range (float() raises OverflowError there)."""
    try:
        return float(x)
    except OverflowError:
        return math.copysign(math.inf, x)


def int_json(k: int) -> int | str:
    k = int(k)
    return k if k.bit_length() < 14000 else decimal_str(k)


def int_from_json(x: Any) -> int:
    if isinstance(x, bool) or not isinstance(x, (int, str)):
        raise TypeError(f"{short_repr(x)} is not an integer")
    return x if isinstance(x, int) else decimal_int(x)


def index_from_json(x: Any) -> int:
    """A row index component: an integer, never a float truncated to one."""
    if isinstance(x, bool) or not isinstance(x, (int, np.integer)):
        raise TypeError(f"index {short_repr(x)} is not an integer")
    return int(x)


def fraction_json(x: Fraction | None) -> str | None:
    return None if x is None else format_fraction(x)


def fraction_from_json(data: dict, key: str) -> Fraction | None:
    val = data.get(key)
    if val is None:
        return None
    if not isinstance(val, str):
        raise MdcertError(
            f"certificate field {key!r} must be an exact 'num/den' string, got {type(val).__name__}"
        )
    return parse_fraction(val)
