"""The one JSON encoder of mdcert's outputs: strict JSON (no NaN) from the values commands produce.

`jsonable` turns a value into plain JSON data, the value a JSON round trip gives back
(``jsonable(x) == json.loads(dumps(x))``):

    dict                       -> dict with string keys (``True`` -> "true", ``None`` -> "null",
                                  numbers as ``str``: what ``json.dumps`` does with keys)
    list, tuple                -> list
    Enum                       -> its value
    float, numpy floating      -> float; NaN and +-inf -> None (JSON has no non-finite numbers)
    numpy integer / bool       -> int / bool
    Fraction                   -> "num/den" (always with a denominator: "3/1"; docs/formats.md)
    numpy array                -> nested lists of the above
    anything with ``.item()``  -> its item (numpy and torch scalars)

Anything else goes to ``default`` (e.g. ``str``) or raises TypeError. `dumps` is ``json.dumps`` of
`jsonable` with ``allow_nan=False``: the text is strict JSON whatever the input.
"""

from __future__ import annotations

import json
import math
from enum import Enum
from fractions import Fraction
from typing import Any, Callable

__all__ = ["jsonable", "dumps"]

_KEYS = {True: "true", False: "false", None: "null"}


def _key(k: Any) -> str:
    if isinstance(k, str):
        return k
    if k is None or isinstance(k, bool):
        return _KEYS[k]
    return str(k)


def jsonable(obj: Any, *, default: Callable[[Any], Any] | None = None) -> Any:
    """Plain JSON data for ``obj`` (see the module docstring); ``default`` maps any other object
    (its result is converted again), else TypeError."""
    if obj is None or isinstance(obj, (str, bool)):
        return obj
    if isinstance(obj, Enum):
        return jsonable(obj.value, default=default)
    if isinstance(obj, int):
        return int(obj)
    if isinstance(obj, float):
        return float(obj) if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {_key(k): jsonable(v, default=default) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v, default=default) for v in obj]
    if isinstance(obj, Fraction):
        return f"{obj.numerator}/{obj.denominator}"
    np = _numpy()
    if np is not None:
        if isinstance(obj, np.ndarray):
            return jsonable(obj.tolist(), default=default)
        if isinstance(obj, np.generic):
            return jsonable(obj.item(), default=default)
    item = getattr(obj, "item", None)
    if callable(item) and not isinstance(obj, type):
        try:
            value = item()
        except (TypeError, ValueError, RuntimeError):  # a tensor of several elements
            value = obj
        if value is not obj:
            return jsonable(value, default=default)
    if default is not None:
        return jsonable(default(obj))
    raise TypeError(f"{type(obj).__name__} is not JSON serializable")


def _numpy():
    """numpy when it is already imported (a value cannot be a numpy one otherwise)."""
    import sys

    return sys.modules.get("numpy")


def dumps(
    obj: Any,
    *,
    indent: int | None = None,
    sort_keys: bool = False,
    separators: tuple[str, str] | None = None,
    default: Callable[[Any], Any] | None = None,
) -> str:
    """Strict JSON text of ``jsonable(obj, default=default)`` (``json.dumps`` options as given)."""
    return json.dumps(
        jsonable(obj, default=default),
        indent=indent,
        sort_keys=sort_keys,
        separators=separators,
        allow_nan=False,
    )
