"""Exact conversion of input numbers to float64, or a one-line refusal (docs/theory.md section 1).

mdcert proves facts about float64 arrays (every float64 is a dyadic rational, `certify.exact`). An
input value that float64 cannot hold is never rounded silently: the proof would be about other data
than the file holds (docs/formats.md, "Exact input"). Element by element:

- float16, float32, float64 and booleans of a typed NumPy array: always exact;
- integers (int64, uint64, Python ints): exact when float64 holds them (every integer of magnitude
  at most 2^53, and larger ones only with enough trailing zero bits);
- longdouble (and other wider floats): exact when the value is a float64;
- `Decimal` / `Fraction` objects: exact when equal to a float64;
- JSON number literals (`json_float64`): the text must be its float64's value correctly rounded to
  the significant digits written (trailing zeros count). This accepts what any float64 printer writes
  (Python's shortest ``repr``, ``%.17g``, ``%.18e``) and refuses digits that name another number
  (``9007199254740993``, ``0.1000000000000000000001``). An integer literal is thereby exact.

A refusal names the first entry (in C order) that would round, what it would round to, and the fix:
scale the data, or store float64.
"""

from __future__ import annotations

import math
from decimal import MAX_EMAX, MIN_EMIN, ROUND_HALF_EVEN, Context, Decimal
from fractions import Fraction
from typing import Any

import numpy as np

from certify.errors import MdcertError

__all__ = ["exact_float64", "json_float64", "json_indices"]

_FIX = "scale the data (integers within 2^53 in magnitude are exact) or store float64 values"
_BIG = 2**53


def _where(name: str, index: tuple[int, ...]) -> str:
    return f"{name}[{', '.join(str(i) for i in index)}]" if index else name


def _shown(x: Any) -> str:
    text = str(x)
    return text if len(text) <= 60 else text[:40] + f"... ({len(text)} characters)"


def _scalar(x: Any) -> tuple[float, str | None]:
    """``(value, None)`` when ``x`` is exactly a float64 (or non-finite: refused later as NaN/Inf),
    else ``(nan, why)``."""
    if isinstance(x, (bool, np.bool_)):
        return math.nan, "is a boolean where a number is expected; write the number (1 or 0)"
    if isinstance(x, (int, np.integer)):
        k = int(x)
        if -_BIG <= k <= _BIG:
            return float(k), None
        try:
            f = float(k)
        except OverflowError:
            return math.nan, f"is beyond the float64 range; {_FIX}"
        return (f, None) if int(f) == k else (math.nan, f"would round to {f!r} in float64; {_FIX}")
    if isinstance(x, (float, np.float64, np.float32, np.float16)):
        return float(x), None
    if isinstance(x, np.floating):  # longdouble
        with np.errstate(over="ignore"):
            f = float(x)
        if not np.isfinite(x) or (math.isfinite(f) and np.longdouble(f) == x):
            return f, None
        return math.nan, (
            f"would round to {f!r} in float64; {_FIX}"
            if math.isfinite(f)
            else f"is beyond the float64 range; {_FIX}"
        )
    if isinstance(x, (Decimal, Fraction)):
        if isinstance(x, Decimal) and not x.is_finite():
            return float(x), None
        try:
            f = float(x)
        except OverflowError:
            f = math.inf
        if not math.isfinite(f):
            return math.nan, f"is beyond the float64 range; {_FIX}"
        exact = Decimal(f) if isinstance(x, Decimal) else Fraction(f)
        return (f, None) if exact == x else (math.nan, f"would round to {f!r} in float64; {_FIX}")
    if isinstance(x, (list, tuple, np.ndarray)):
        return (
            math.nan,
            "is a nested list where a number is expected (ragged lists); give equal-length rows",
        )
    return math.nan, "is not a number"


def _objects(name: str, raw: np.ndarray, convert) -> np.ndarray:
    out = []
    for i, x in enumerate(raw.flat):
        if type(x) is float:
            out.append(x)
            continue
        f, why = convert(x)
        if why is not None:
            index = tuple(int(k) for k in np.unravel_index(i, raw.shape)) if raw.ndim else ()
            if why == "is not a number":
                raise MdcertError(
                    f"{name} must be a numeric array of real numbers (int or float); "
                    f"{_where(name, index)} = {_shown(repr(x))} is not a number"
                )
            shown = str(x).lower() if isinstance(x, (bool, np.bool_)) else _shown(x)
            raise MdcertError(f"{_where(name, index)} = {shown} {why}")
        out.append(f)
    return np.array(out, dtype=np.float64).reshape(raw.shape)


def _first_inexact(a: np.ndarray) -> int | None:
    """Flat index of the first entry of a typed numeric array that float64 does not hold, or None."""
    kind, size = a.dtype.kind, a.dtype.itemsize
    flat = a.ravel()
    if kind == "b" or (kind in "iu" and size <= 4) or (kind == "f" and size <= 8):
        return None
    if (
        kind == "f"
    ):  # longdouble: the float64 value must equal it (non-finite entries are refused later)
        with np.errstate(over="ignore", invalid="ignore"):
            f = flat.astype(np.float64)
            bad = np.isfinite(flat) & ~(np.isfinite(f) & (f.astype(flat.dtype) == flat))
    else:
        big = (
            np.flatnonzero((flat > _BIG) | (flat < -_BIG))
            if kind == "i"
            else np.flatnonzero(flat > _BIG)
        )
        if big.size == 0:
            return None
        vals = flat[big]
        f = vals.astype(np.float64)
        top = 2.0 ** (64 if kind == "u" else 63)
        inside = np.abs(f) < top
        back = np.where(inside, f, 0.0).astype(vals.dtype)
        ok = inside & (back == vals)
        if kind == "i":
            ok |= (f == -top) & (vals == np.iinfo(vals.dtype).min)
        bad_at = np.flatnonzero(~ok)
        return int(big[bad_at[0]]) if bad_at.size else None
    hits = np.flatnonzero(bad)
    return int(hits[0]) if hits.size else None


def exact_float64(name: str, value: Any) -> np.ndarray:
    """A new float64 array equal to ``value`` entry by entry (docs/theory.md section 1).

    ``value`` is a typed NumPy array (bool, integer or floating dtype) or nested Python lists / scalars
    of ints, floats, `Decimal` or `Fraction`. Non-finite entries pass (the caller refuses them with its
    own message). Raises a one-line `MdcertError` naming the first entry that would round, a boolean
    inside a list of numbers, a non-number, or ragged lists."""
    if isinstance(value, np.ndarray) and value.dtype.kind in "biuf":
        at = _first_inexact(value)
        if at is not None:
            index = tuple(int(k) for k in np.unravel_index(at, value.shape)) if value.ndim else ()
            x = value.ravel()[at]
            _, why = _scalar(x)
            raise MdcertError(f"{_where(name, index)} = {_shown(x)} ({value.dtype}) {why}")
        with np.errstate(over="ignore", invalid="ignore"):
            return np.array(value, dtype=np.float64, copy=True)
    raw = _object_array(name, value)
    return _objects(name, raw, _scalar)


def _object_array(name: str, value: Any) -> np.ndarray:
    if isinstance(value, np.ndarray) and value.dtype.kind not in "O":
        raise MdcertError(
            f"{name} must be a numeric array of real numbers (int or float), got dtype "
            f"{value.dtype}; store plain float64 values"
        )
    try:
        raw = np.array(value, dtype=object)
    except (TypeError, ValueError):
        raise MdcertError(
            f"{name} must be a numeric array of real numbers (int or float), got ragged or "
            f"non-numeric nested lists; store plain float64 values"
        ) from None
    return raw


def _json_number(x: Any) -> tuple[float, str | None]:
    """A parsed JSON literal (int, or `Decimal` via ``parse_float=Decimal``): its float64 when the
    digits written are that float64 correctly rounded to as many significant digits."""
    if type(x) is int and -_BIG <= x <= _BIG:
        return float(x), None
    if not isinstance(x, (int, Decimal)) or isinstance(x, bool):
        return _scalar(x)
    d = Decimal(x)
    try:
        f = float(d)
    except OverflowError:  # float(Decimal) gives inf rather than raising, kept for safety
        f = math.inf
    if not math.isfinite(f):
        return math.nan, f"is beyond the float64 range; {_FIX}"
    if d.is_zero():
        return f, None
    digits = len(d.as_tuple().digits)
    ctx = Context(prec=digits, rounding=ROUND_HALF_EVEN, Emax=MAX_EMAX, Emin=MIN_EMIN)
    if ctx.plus(Decimal(f)) == d:
        return f, None
    return math.nan, (
        f"names a number float64 cannot hold: it reads as {f!r}, which has other digits; "
        f"{_FIX} (e.g. as Python's repr writes it)"
    )


def json_float64(name: str, value: Any) -> np.ndarray:
    """`exact_float64` for numbers parsed from JSON text with ``parse_int=int, parse_float=Decimal``
    (the literal rule of the module docstring)."""
    return _objects(name, _object_array(name, value), _json_number)


def json_indices(name: str, value: Any) -> Any:
    """Token indices or lengths parsed from JSON: integers kept, decimals converted by the literal rule
    (an integral float64 such as ``2.0`` stays acceptable to the index checks), booleans refused; the
    same nesting is returned (nested lists, or a scalar)."""
    raw = _object_array(name, value)
    flat = np.empty(raw.size, dtype=object)
    for i, x in enumerate(raw.flat):
        index = tuple(int(k) for k in np.unravel_index(i, raw.shape)) if raw.ndim else ()
        if isinstance(x, bool):
            raise MdcertError(
                f"{_where(name, index)} = {str(x).lower()} is a boolean where an integer is expected; "
                f"write the integer"
            )
        if isinstance(x, Decimal):
            x, why = _json_number(x)
            if why is not None:
                raise MdcertError(f"{_where(name, index)} = {_shown(raw.flat[i])} {why}")
        flat[i] = x
    return flat.reshape(raw.shape).tolist()
