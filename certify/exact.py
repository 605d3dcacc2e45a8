"""Exact views of float64 data and exact exponents (docs/theory.md section 1 and section 4).

Every float64 is a dyadic rational ``k * 2**e``. An array is stored exactly as integers times one
common power of two (`DyadicArray`). The exponent ``p`` of the l_p geometry is a `Fraction` parsed
from its decimal string ("1.1" is 11/10), never from a binary float.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from certify.errors import MdcertError

__all__ = [
    "DyadicArray",
    "dyadic",
    "dyadic_parts",
    "odd_mantissas",
    "parse_p",
    "parse_nonnegative",
    "conjugate",
    "format_fraction",
    "parse_fraction",
    "decimal_str",
    "decimal_int",
    "decimal_digits",
    "format_exact",
    "format_g",
    "format_sci",
    "ldexp_array",
]


def parse_p(p: Any, *, name: str = "p") -> Fraction:
    """Parse an exponent ``1 < p < inf`` exactly.

    Args:
        p: a decimal or ``num/den`` string, a `Fraction`, an int, or a float (read through its
            shortest repr, so ``1.1`` is 11/10).
        name: the parameter name used in error messages.

    Returns:
        The exact rational exponent.

    Raises:
        MdcertError: p is not a finite rational greater than 1.
    """
    if isinstance(p, bool):
        raise MdcertError(f"invalid {name}: {p!r}; give a number greater than 1, e.g. 1.75 or 7/4")
    try:
        if isinstance(p, Fraction):
            value = p
        elif isinstance(p, int):
            value = Fraction(p)
        elif isinstance(p, (float, np.floating)):
            if not math.isfinite(float(p)):
                raise MdcertError(
                    f"invalid {name}: {p!r}; {name} must be finite and greater than 1 "
                    f"(p = inf is not supported)"
                )
            value = Fraction(repr(float(p)))
        elif isinstance(p, str):
            text = p.strip()
            if text.lower() in {
                "inf",
                "+inf",
                "infinity",
                "+infinity",
                "-inf",
                "-infinity",
                "nan",
                "+nan",
                "-nan",
            }:
                raise MdcertError(
                    f"invalid {name}: {p!r}; {name} must be finite and greater than 1 "
                    f"({'p = inf is not supported' if 'inf' in text.lower() else 'not a number'})"
                )
            if not text.isascii() or "_" in text:
                raise ValueError("only ASCII digits, '.', 'e', '/' and a sign")
            value = Fraction(_small_exponent(text))
        else:
            raise TypeError
    except (ValueError, TypeError, ZeroDivisionError) as exc:
        if isinstance(exc, MdcertError):
            raise
        raise MdcertError(
            f"invalid {name}: {p!r}; give a number greater than 1, e.g. 1.75 or 7/4"
        ) from None
    if value <= 1:
        raise MdcertError(
            f"invalid {name}: {p!r}; mirror descent needs {name} > 1 (p = 1 is not strictly convex)"
        )
    return value


def conjugate(p: Fraction) -> Fraction:
    """Dual exponent ``q = p / (p - 1)``."""
    return p / (p - 1)


def decimal_str(k: int) -> str:
    """Decimal string of any integer: Python's ``str`` refuses more than 4300 digits (a
    high-precision certificate has tens of thousands); python-flint's conversion has no limit."""
    k = int(k)
    if k.bit_length() < 14000:
        return str(k)
    import flint

    return str(flint.fmpz(k))


def decimal_int(text: str) -> int:
    """Inverse of `decimal_str` for a string of decimal digits with an optional sign."""
    t = str(text).strip()
    if (
        not t
        or not t.lstrip("+-").isdigit()
        or not t.lstrip("+-").isascii()
        or t.count("-") + t.count("+") > 1
    ):
        raise ValueError(f"not a decimal integer: {text!r}")
    if len(t) < 4000:
        return int(t)
    import flint

    return int(flint.fmpz(t.lstrip("+")))


def decimal_digits(x: Fraction) -> int:
    """The largest integer k with ``0 < x <= 10**-k`` (the decimal digits a relative width certifies),
    computed exactly: no float, so 1e-1000 is 1000 digits, not the float64 floor of 1e-324."""
    x = Fraction(x)
    if x <= 0:
        raise ValueError(f"decimal_digits needs x > 0, got {x}")
    k = math.floor(
        -(x.numerator.bit_length() - x.denominator.bit_length()) * math.log10(2)
    )  # within 1 or 2
    while x > Fraction(10) ** -k:
        k -= 1
    while x <= Fraction(10) ** -(k + 1):
        k += 1
    return k


def format_sci(x: Fraction, digits: int = 3) -> str:
    """``x`` in scientific notation with ``digits`` significant digits (``9.88e-1000``), for display.

    No float conversion (no underflow to 0, no overflow to inf, no OverflowError) and linear time in
    the size of ``x``: the quotient is first cut to ``4 digits + 64`` bits (by shifts, with a sticky
    bit), so only a value within 2**-64 relative of a rounding boundary may round the other way."""
    from decimal import MAX_EMAX, MIN_EMIN, Context, Decimal

    x = Fraction(x)
    if x == 0:
        return "0"
    n, d = abs(x.numerator), x.denominator
    shift = n.bit_length() - d.bit_length() - (4 * digits + 64)
    q, r = divmod(n >> shift, d) if shift >= 0 else divmod(n << -shift, d)  # x ~ q * 2**shift
    if r or (
        shift > 0 and n & ((1 << shift) - 1)
    ):  # a sticky bit: a cut value is never taken for a tie
        q, shift = 2 * q + 1, shift - 1
    ctx = Context(prec=digits + 24, Emin=MIN_EMIN, Emax=MAX_EMAX)
    val = ctx.multiply(Decimal(q), ctx.power(Decimal(2), shift))
    out = format(Context(prec=digits, Emin=MIN_EMIN, Emax=MAX_EMAX).plus(val), f".{digits - 1}e")
    mant, _, ex = out.partition("e")
    out = f"{mant}e{ex[0]}{ex[1:].zfill(2)}"  # Python's float style: 4.28e+00, 1.20e-05, 9.88e-1000
    return "-" + out if x < 0 else out


def format_g(x: Fraction | int, digits: int = 6) -> str:
    """``x`` to ``digits`` significant digits in the style of ``%g`` (``0.00693621``, ``1.27823``,
    ``3.33333e+399``, ``1e-400``), computed exactly: no float overflow or underflow."""
    x = Fraction(x)
    if x == 0:
        return "0"
    text = format_sci(x, digits)
    mant, _, ex = text.partition("e")
    exp10 = int(ex)
    if "." in mant:
        mant = mant.rstrip("0").rstrip(".")
    if -4 <= exp10 < digits:
        sign, body = ("-", mant[1:]) if mant.startswith("-") else ("", mant)
        figures = body.replace(".", "")
        if exp10 >= 0:
            figures = figures.ljust(exp10 + 1, "0")
            whole, frac = figures[: exp10 + 1], figures[exp10 + 1 :]
        else:
            whole, frac = "0", "0" * (-exp10 - 1) + figures
        return sign + whole + ("." + frac if frac else "")
    return f"{mant}e{ex}"


def format_exact(p: Fraction | int) -> str:
    """An exact rational (the exponent p, a step size) as a user reads it: ``3`` (not ``3/1``), ``1.75`` for the terminating decimal 7/4,
    ``4/3`` for one that does not terminate, ``1e400`` for a huge power of ten; always exact (display
    only: files keep `format_fraction`'s ``"num/den"``)."""
    x = Fraction(p)
    sign, x = ("-" if x < 0 else ""), abs(x)
    den, twos, fives = x.denominator, 0, 0
    while den % 2 == 0:
        den, twos = den // 2, twos + 1
    while den % 5 == 0:
        den, fives = den // 5, fives + 1
    fraction = (
        f"{decimal_str(x.numerator)}/{decimal_str(x.denominator)}" if x.denominator != 1 else None
    )
    if den != 1:  # no terminating decimal
        return sign + (fraction if len(fraction) <= 40 else "~" + format_sci(x, 12))
    scale = max(twos, fives)  # x = m / 10**scale exactly
    m = x.numerator * 2 ** (scale - twos) * 5 ** (scale - fives)
    zeros = 0
    while m and m % 10 == 0 and zeros < 10**6:
        m, zeros = m // 10, zeros + 1
    digits, exp10 = decimal_str(m), zeros - scale  # x = m * 10**exp10, m without trailing zeros
    if len(digits) > 40:
        return sign + (fraction if fraction and len(fraction) <= 40 else "~" + format_sci(x, 12))
    if 0 <= exp10 and len(digits) + exp10 <= 16:
        return sign + digits + "0" * exp10
    if exp10 < 0 and -exp10 <= len(digits) + 6:
        whole, frac = digits[:exp10] or "0", digits[exp10:].rjust(-exp10, "0")
        return f"{sign}{whole}.{frac}"
    lead = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
    return f"{sign}{lead}e{exp10 + len(digits) - 1}"


def format_fraction(x: Fraction | int) -> str:
    """Exact ``"num/den"`` string (``"3/1"`` for integers, so the format never varies)."""
    x = Fraction(x)
    return f"{decimal_str(x.numerator)}/{decimal_str(x.denominator)}"


def parse_fraction(text: str) -> Fraction:
    """Inverse of `format_fraction` (also accepts plain integers and decimals)."""
    t = str(text).strip()
    try:
        if len(t) >= 4000:  # only "num/den" with long integers (no huge decimal exponents)
            num, _, den = t.partition("/")
            return Fraction(decimal_int(num), decimal_int(den) if den else 1)
        return Fraction(_small_exponent(t))
    except (ValueError, ZeroDivisionError):
        raise MdcertError(f"not an exact rational: {text!r:.80}; expected 'num/den'") from None


def _small_exponent(text: str) -> str:
    """``text`` unless it has a decimal exponent beyond 10**4 ("1e1000000000" would take minutes
    and gigabytes to expand exactly); ValueError then."""
    mant, sep, ex = text.lower().partition("e")
    if sep and ex.strip().lstrip("+-").isdigit() and len(ex.strip().lstrip("+-")) > 4:
        raise ValueError(f"decimal exponent out of range in {text!r}")
    return text


@dataclass(frozen=True, eq=False)
class DyadicArray:
    """An exact array ``ints * 2**exp``.

    Attributes:
        ints: integer array (dtype int64 when every entry fits in 62 bits, else object holding
            Python ints).
        exp: the common binary exponent.
    """

    ints: np.ndarray
    exp: int

    @property
    def shape(self) -> tuple[int, ...]:
        return self.ints.shape

    def as_object(self) -> np.ndarray:
        """The integers as an object array of Python ints (safe for exact products)."""
        return self.ints.astype(object)

    def to_float(self) -> np.ndarray:
        """Nearest float64 values (exact when the data came from float64)."""
        return ldexp_array(self.ints, self.exp)

    def fraction(self, index: tuple[int, ...] | int) -> Fraction:
        """One entry as an exact `Fraction`."""
        k = int(self.ints[index])
        return Fraction(k) * (Fraction(2) ** self.exp)

    def to_fmpz_mat(self):
        """A 2-D array as a python-flint ``fmpz_mat`` (exponent kept separately in `exp`)."""
        import flint

        if self.ints.ndim != 2:
            raise ValueError("to_fmpz_mat needs a 2-D array")
        rows, cols = self.ints.shape
        return flint.fmpz_mat(rows, cols, [int(k) for k in self.ints.ravel()])


def _ldexp_round(k: int, e: int) -> float:
    """``k * 2**e`` rounded to float64 (+-inf beyond its range): ``k`` is cut to 64 bits with a
    sticky bit, so ``float`` rounds once (twice only where the result is subnormal)."""
    k = int(k)
    shift = max(0, abs(k).bit_length() - 64)
    if shift:
        k = (abs(k) >> shift | (1 if abs(k) & ((1 << shift) - 1) else 0)) * (1 if k > 0 else -1)
    try:
        return math.ldexp(float(k), e + shift)
    except OverflowError:
        return math.copysign(math.inf, k)


def ldexp_array(ints: np.ndarray, exp: int) -> np.ndarray:
    """Float64 values of ``ints * 2**exp`` for an int64 or object (Python int) array: no OverflowError
    when the integers exceed the float range (data spanning 1e-320 to 1 has 1100-bit integers)."""
    ints = np.asarray(ints)
    if ints.dtype != object:
        return np.ldexp(ints.astype(np.float64), exp)
    with np.errstate(over="ignore"):  # +-inf beyond the range is the documented result
        return np.frompyfunc(lambda k: _ldexp_round(k, exp), 1, 1)(ints).astype(np.float64)


def odd_mantissas(values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(k, e, nonzero)`` with ``values == k * 2**e`` exactly entrywise: ``k`` int64 odd (or 0),
    ``|k| < 2**53``, ``e`` int64 (0 where the value is 0). ``values``: finite float64."""
    a = np.asarray(values, dtype=np.float64)
    if not np.all(np.isfinite(a)):
        raise MdcertError("array contains NaN or Inf; exact arithmetic needs finite float64 data")
    mant, e = np.frexp(a)  # a = mant * 2**e, 0.5 <= |mant| < 1
    k = (mant * 2.0**53).astype(np.int64)  # exact integer mantissa
    e = e.astype(np.int64) - 53
    nz = k != 0
    low = k & -k  # lowest set bit
    tz = np.zeros(a.shape, dtype=np.int64)
    tz[nz] = np.round(np.log2(np.abs(low[nz]).astype(np.float64))).astype(np.int64)
    return np.where(nz, k >> tz, 0), np.where(nz, e + tz, 0), nz


def dyadic_parts(values: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """The exact parts of a finite float64 array: ``values = k * 2**(shift + common)`` entrywise, with
    ``k`` int64 odd (``|k| < 2^53``; 0 where the value is 0), ``shift >= 0`` int64 (0 where the value
    is 0) and ``common`` the smallest exponent of a nonzero entry (`dyadic` is ``k << shift``)."""
    k, e, nz = odd_mantissas(values)
    if not np.any(nz):
        return k, np.zeros(k.shape, dtype=np.int64), 0
    common = int(e[nz].min())
    return k, np.where(nz, e - common, 0), common


def dyadic(values: np.ndarray) -> DyadicArray:
    """Exact integer-times-power-of-two view of a finite float64 array.

    Args:
        values: finite float64 array of any shape.

    Returns:
        `DyadicArray` whose value equals ``values`` exactly (no rounding); its exponent is the
        smallest ``e`` of `odd_mantissas` over the nonzero entries (0 for an all-zero array).
    """
    k, shift, common = dyadic_parts(values)
    nz = k != 0
    if not np.any(nz):
        return DyadicArray(np.zeros(k.shape, dtype=np.int64), 0)
    bits = np.where(nz, np.floor(np.log2(np.maximum(np.abs(k), 1))).astype(np.int64) + 1, 0)
    if int((bits + shift).max()) <= 62:
        return DyadicArray(np.where(nz, k << shift, 0).astype(np.int64), common)
    ints = k.astype(object) << shift.astype(object)  # elementwise Python-int shifts (exact)
    return DyadicArray(ints, common)


def parse_nonnegative(value: Any, name: str) -> Fraction:
    """An exact non-negative rational from a decimal / "num/den" string, int, Fraction or float repr."""
    if isinstance(value, bool):
        raise MdcertError(f"invalid {name}: {value!r}; give a non-negative number")
    if isinstance(value, (float, np.floating)):
        if not np.isfinite(value):
            raise MdcertError(f"invalid {name}: {value!r}; must be finite")
        value = repr(float(value))
    try:
        out = parse_fraction(str(value)) if not isinstance(value, Fraction) else value
    except MdcertError:
        raise MdcertError(
            f"invalid {name}: {value!r}; give a non-negative number like 0.5 or 1/2"
        ) from None
    if out < 0:
        raise MdcertError(f"invalid {name}: {value!r}; must be >= 0")
    return out
