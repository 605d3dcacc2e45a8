"""Radius grids of the regularization paths (docs/theory.md section 5): ``START:STOP:COUNT`` parsing,
geometric grids with exact ends, and validation of explicit radius sequences."""

from __future__ import annotations

import math
import re

import numpy as np

from certify.errors import MdcertError

__all__ = ["geometric_radii", "parse_radii", "check_radii", "as_radii", "MAX_RADII"]

#: the most radii one grid may hold (each radius is a full constrained solve)
MAX_RADII = 100_000


def geometric_radii(start: float, stop: float, count: int) -> np.ndarray:
    """``count`` radii from ``start`` to ``stop``, equally spaced in log R.

    Raises:
        MdcertError: non-positive or non-finite ends, start > stop, count < 1, or count == 1 with
            start != stop.
    """
    try:
        start, stop = float(start), float(stop)
    except (TypeError, ValueError):
        raise MdcertError(f"invalid radii {start!r}:{stop!r}; radii must be numbers") from None
    if isinstance(count, bool) or not isinstance(count, (int, np.integer)):
        raise MdcertError(f"invalid radii count {count!r}; COUNT must be an integer >= 1")
    if not (math.isfinite(start) and math.isfinite(stop)) or start <= 0 or stop <= 0:
        raise MdcertError(
            f"invalid radii {start!r}:{stop!r}; radii must be finite and positive (e.g. 10:1000:9)"
        )
    if start > stop:
        raise MdcertError(
            f"invalid radii: START {start!r} > STOP {stop!r}; give an increasing range like 10:1000:9"
        )
    if count < 1:
        raise MdcertError(f"invalid radii count {count}; COUNT must be >= 1")
    if count > MAX_RADII:
        raise MdcertError(
            f"invalid radii count {count}; COUNT must be at most {MAX_RADII} (one path solve per radius)"
        )
    if count == 1:
        if start != stop:
            raise MdcertError(
                f"invalid radii: COUNT 1 needs START == STOP (got {start!r}:{stop!r})"
            )
        return np.array([start])
    out = np.geomspace(start, stop, int(count))
    out[0], out[-1] = start, stop
    return out


_RADII = re.compile(r"^\s*([^:\s]+)\s*:\s*([^:\s]+)\s*:\s*([^:\s]+)\s*$")


def parse_radii(text: str) -> np.ndarray:
    """Parse ``START:STOP:COUNT`` (geometric grid, e.g. ``10:1000:9``) into radii.

    Raises:
        MdcertError: malformed text or an invalid grid (see `geometric_radii`).
    """
    m = _RADII.match(str(text))
    if not m:
        raise MdcertError(f"invalid radii {text!r}; use START:STOP:COUNT, e.g. 10:1000:9")
    try:
        start, stop = float(m.group(1)), float(m.group(2))
    except ValueError:
        raise MdcertError(
            f"invalid radii {text!r}; START and STOP must be numbers (e.g. 10:1000:9)"
        ) from None
    try:
        count = int(m.group(3))
    except ValueError:
        raise MdcertError(
            f"invalid radii {text!r}; COUNT must be an integer >= 1 (e.g. 10:1000:9)"
        ) from None
    return geometric_radii(start, stop, count)


def check_radii(radii) -> np.ndarray:
    """A strictly increasing, finite, positive float64 radius vector (MdcertError otherwise)."""
    r = np.asarray(radii, dtype=np.float64).ravel()
    if r.size < 1:
        raise MdcertError("no radii given; use e.g. --radii 10:1000:9")
    if not np.all(np.isfinite(r)) or np.any(r <= 0):
        raise MdcertError(f"radii must be finite and positive, got {r.tolist()}")
    if np.any(np.diff(r) <= 0):
        raise MdcertError(f"radii must be strictly increasing, got {r.tolist()}")
    return r


def as_radii(radii) -> np.ndarray:
    """Radii from an increasing sequence or a geometric ``(start, stop, count)`` triple (validated)."""
    if (
        isinstance(radii, tuple)
        and len(radii) == 3
        and isinstance(radii[2], (int, np.integer))
        and not isinstance(radii[2], bool)
    ):
        radii = geometric_radii(*radii)
    return check_radii(radii)
