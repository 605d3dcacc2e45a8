"""Intervals of the studies: Student-t intervals over seeds and paired differences (docs/theory.md section 6.5).

The unit of replication is the seed: a seed fixes the initialization, the batch order and dropout,
and every optimizer of a study runs with the same seeds, so the difference of two optimizers on one
seed is a paired observation. `t_interval` is the two-sided Student-t interval of a mean over those
independent seeds, ``mean +- t_{1-a/2, n-1} s / sqrt(n)``; it assumes roughly normal per-seed values
and says nothing about other data sets. With fewer than two finite values there is no interval
(``low`` and ``high`` are None), never a made-up one.

A quantity with a bounded range (a count >= 0, an accuracy or a rate in [0, 1]) takes ``support``:
the interval is intersected with it, so a count never gets a negative lower end (the t-interval is
symmetric and knows no range; clipping keeps its coverage, since the true mean lies in the support).
``method`` then says "clipped to [lo, hi]".
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

__all__ = ["Interval", "t_interval", "paired_difference"]


@dataclass(frozen=True)
class Interval:
    """A mean with its two-sided interval at ``level``; ``low``/``high`` None when n < 2."""

    mean: float
    low: float | None
    high: float | None
    n: int
    sd: float | None
    level: float = 0.95
    method: str = "t-interval over seeds"

    def as_dict(self) -> dict:
        return {
            "mean": self.mean,
            "low": self.low,
            "high": self.high,
            "n": self.n,
            "sd": self.sd,
            "level": self.level,
            "method": self.method,
        }

    def text(self, scale: float = 1.0, digits: int = 2) -> str:
        """``"74.10 [73.20, 75.00]"`` (values times ``scale``); ``"74.10 (n=1, no interval)"``."""
        if not math.isfinite(self.mean):
            return "n/a"
        m = f"{self.mean * scale:.{digits}f}"
        if self.low is None:
            return f"{m} (n={self.n}, no interval)"
        return f"{m} [{self.low * scale:.{digits}f}, {self.high * scale:.{digits}f}]"

    def excludes_zero(self) -> bool:
        """Whether the interval lies strictly on one side of 0."""
        return self.low is not None and (self.low > 0 or self.high < 0)


def t_interval(
    values: Sequence[float], *, level: float = 0.95, support: tuple[float, float] | None = None
) -> Interval:
    """Student-t interval of the mean of the finite ``values`` (NaN entries are dropped and counted out),
    intersected with ``support`` (``(0, inf)`` for a count, ``(0, 1)`` for a rate) when given."""
    from scipy import stats

    x = np.asarray([v for v in values if v is not None], dtype=np.float64)
    x = x[np.isfinite(x)]
    n = int(x.size)
    if n == 0:
        return Interval(math.nan, None, None, 0, None, level)
    mean = float(x.mean())
    if n < 2:
        return Interval(mean, None, None, n, None, level)
    sd = float(x.std(ddof=1))
    half = float(stats.t.ppf(0.5 + level / 2, n - 1)) * sd / math.sqrt(n)
    if support is None:
        return Interval(mean, mean - half, mean + half, n, sd, level)
    lo, hi = support
    return Interval(
        mean,
        max(mean - half, lo),
        min(mean + half, hi),
        n,
        sd,
        level,
        f"t-interval over seeds, clipped to [{lo:g}, {hi:g}]",
    )


def paired_difference(
    a: Sequence[float],
    b: Sequence[float],
    *,
    level: float = 0.95,
    support: tuple[float, float] | None = None,
) -> Interval:
    """Interval of the mean of ``a[i] - b[i]`` over pairs where both are finite (same seed ``i``),
    intersected with ``support`` when given (``(-1, 1)`` for a difference of two rates)."""
    if len(a) != len(b):
        raise ValueError(f"paired values of different lengths: {len(a)} and {len(b)}")
    d = [
        x - y
        for x, y in zip(a, b)
        if x is not None and y is not None and math.isfinite(x) and math.isfinite(y)
    ]
    iv = t_interval(d, level=level, support=support)
    return Interval(iv.mean, iv.low, iv.high, iv.n, iv.sd, level, "paired " + iv.method)
