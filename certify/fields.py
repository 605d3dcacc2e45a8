"""Validation of the fields of an `AttentionProblem` (docs/theory.md sections 1 and 1.3).

Numeric arrays (finite float64, exact shapes), the optional per-example ``lengths`` of variable-length
sequences (padding) and the optional ``provenance`` record. Every error is one line saying what is
wrong and how to fix it.
"""

from __future__ import annotations

import json
import math

import numpy as np

from certify.errors import MdcertError
from certify.exactfloat import exact_float64

__all__ = [
    "MAX_PROVENANCE_CHARS",
    "numeric_array",
    "check_lengths",
    "check_provenance",
    "provenance_text",
]

#: the largest provenance record accepted, in characters of its canonical JSON text
MAX_PROVENANCE_CHARS = 1 << 20


def numeric_array(name: str, value, ndim: int) -> np.ndarray:
    """A read-only finite float64 copy of ``value`` with ``ndim`` dimensions, or a one-line MdcertError.

    The copy equals ``value`` entry by entry: a value float64 cannot hold (an integer beyond 2^53,
    a longdouble, a `Decimal`) is refused, never rounded (`certify.exactfloat`)."""
    if isinstance(value, np.ndarray) and value.dtype.kind not in "biufO":
        raise MdcertError(
            f"{name} must be a numeric array of real numbers (int or float), got dtype {value.dtype}; "
            f"store plain float64 values"
        )
    arr = exact_float64(name, value)
    if arr.ndim != ndim:
        raise MdcertError(f"{name} must have {ndim} dimensions, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        bad = tuple(int(k) for k in np.argwhere(~np.isfinite(arr))[0])
        raise MdcertError(
            f"{name} contains NaN or Inf (first at index {bad}); replace non-finite entries"
        )
    arr.setflags(write=False)
    return arr


def check_lengths(value, X: np.ndarray) -> np.ndarray | None:
    """Validated per-example lengths (docs/theory.md section 1.3), or None for full length.

    Example i has the tokens ``t < lengths[i]``; the rest is padding and must be stored as zeros
    (one file, one meaning, one data hash; a nonzero padding entry is how lengths that disagree with
    the arrays show). ``2 <= lengths[i] <= T``: with fewer than two tokens there is no selection.
    Lengths that are all ``T`` are returned as None, so that a full-length problem is the same
    problem (same data hash) however it was written.
    """
    if value is None:
        return None
    n, T = X.shape[0], X.shape[1]
    if isinstance(value, (list, tuple)) and any(isinstance(k, (bool, np.bool_)) for k in value):
        raise MdcertError(
            f"lengths must be {n} integers (tokens per example, 2..{T}), got booleans (true/false)"
        )
    try:
        raw = np.asarray(value)
    except (TypeError, ValueError):
        raw = None
    if raw is None or raw.dtype.kind not in "iuf":
        shown = "booleans" if raw is not None and raw.dtype.kind == "b" else repr(value)[:60]
        raise MdcertError(f"lengths must be {n} integers (tokens per example, 2..{T}), got {shown}")
    if raw.shape != (n,):
        raise MdcertError(
            f"lengths must have shape ({n},) (one length per example), got shape {raw.shape}"
        )
    vals = raw.tolist()
    for i, k in enumerate(vals):
        if not (isinstance(k, int) or (math.isfinite(k) and float(k).is_integer())):
            raise MdcertError(f"lengths[{i}] = {k!r} is not an integer; give token counts 2..{T}")
        if not 2 <= int(k) <= T:
            raise MdcertError(
                f"lengths[{i}] = {int(k)} leaves {'fewer than 2' if int(k) < 2 else 'more than T'} "
                f"tokens; every example needs 2..{T} tokens (T = {T})"
            )
    out = np.array([int(k) for k in vals], dtype=np.int64)
    pad = np.arange(T)[None, :] >= out[:, None]
    bad = np.argwhere(pad & np.any(X != 0, axis=-1))
    if bad.size:
        i, t = (int(k) for k in bad[0])
        raise MdcertError(
            f"lengths disagree with X: token {t} of example {i} is padding (lengths[{i}] = {out[i]}) "
            f"but X[{i}, {t}] is nonzero; store zeros in the padding or fix lengths"
        )
    if np.all(out == T):
        return None
    out.setflags(write=False)
    return out


def provenance_text(value) -> str:
    """The canonical JSON text (sorted keys, no NaN) of a provenance record."""
    return json.dumps(value, sort_keys=True, allow_nan=False, separators=(",", ":"))


def check_provenance(value) -> dict | None:
    """A validated copy of a provenance record: a JSON object (dict with string keys) of at most
    `MAX_PROVENANCE_CHARS` characters, or None. The copy is taken through JSON, so the caller's
    dict can change later without changing the problem."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise MdcertError(f"provenance must be a JSON object (a dict), got {type(value).__name__}")
    try:
        text = provenance_text(value)
    except (TypeError, ValueError, RecursionError) as exc:
        msg = str(exc).splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise MdcertError(
            f"provenance must be JSON-serializable (strings, numbers, lists, dicts): {msg[:120]}"
        ) from None
    if len(text) > MAX_PROVENANCE_CHARS:
        raise MdcertError(
            f"provenance is {len(text)} characters of JSON; at most {MAX_PROVENANCE_CHARS} "
            f"(record hashes and names, not data)"
        )
    return json.loads(text)
