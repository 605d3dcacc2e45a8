"""Results of the batched mirror-descent engine (docs/theory.md section 2): how each trajectory ended
(`TrajectoryStatus`) and the recorded trajectories (`PathResult`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

import numpy as np

__all__ = ["TrajectoryStatus", "PathResult"]


class TrajectoryStatus(str, Enum):
    """How a trajectory ended."""

    OK = "ok"  #: ran all its steps
    NONFINITE = "nonfinite"  #: a NaN/Inf appeared in the gradient or iterate; stopped there
    ZERO_GRADIENT = (
        "zero_gradient"  #: normalized step undefined: the gradient is exactly 0; stopped
    )


@dataclass(frozen=True)
class PathResult:
    """Recorded trajectories (numpy, float64 unless run in float32).

    Attributes:
        p: exact exponent per trajectory (tuple of Fractions, length B).
        lr, steps, data_index: per trajectory (B,).
        record_steps: (B, R) step of each record, -1 where unused.
        W: (B, R, d, d) iterates at the record steps; v: (B, R, d) decoders (None for a fixed decoder).
        loss, norm_p: (B, R); top_attention: (B, R, n) = max_t a_it per example.
        W_final: (B, d, d) the last iterate; v_final: (B, d); attention_final: (B, n, T).
        status: (B,) `TrajectoryStatus` values; stop_step: (B,) steps actually taken.
        saturated_step: (B,) first record step where some example's top attention rounded to exactly
            1.0 (a float limit: that example's gradient is then exactly 0), -1 if never.
        device, dtype: what ran; elapsed_s: wall time of the training loop.
    """

    p: tuple
    lr: np.ndarray
    steps: np.ndarray
    data_index: np.ndarray
    normalize: bool
    record_steps: np.ndarray
    W: np.ndarray
    v: np.ndarray | None
    loss: np.ndarray
    norm_p: np.ndarray
    top_attention: np.ndarray
    W_final: np.ndarray
    v_final: np.ndarray
    attention_final: np.ndarray
    status: np.ndarray
    stop_step: np.ndarray
    saturated_step: np.ndarray
    device: str
    dtype: str
    elapsed_s: float
    notes: tuple = field(default_factory=tuple)

    @property
    def B(self) -> int:
        return len(self.p)

    def final_alpha(self) -> np.ndarray:
        """Token indices read from the final attention, ``argmax_t a_it`` (as the paper does), (B, n)."""
        return np.argmax(self.attention_final, axis=-1)

    def limit_messages(self) -> list[str]:
        """One line per kind of float limit / non-finite stop that occurred."""
        out = []
        for st in (TrajectoryStatus.NONFINITE, TrajectoryStatus.ZERO_GRADIENT):
            idx = np.flatnonzero(self.status == st.value)
            if idx.size:
                what = (
                    f"non-finite gradient or iterate (float limit of {self.dtype} reached)"
                    if st is TrajectoryStatus.NONFINITE
                    else "gradient exactly 0, normalized step undefined"
                )
                out.append(
                    f"{idx.size} trajectories stopped early: {what}; first: #{idx[0]} at step {self.stop_step[idx[0]]}"
                )
        zero = np.flatnonzero(
            (self.status == TrajectoryStatus.OK.value) & np.all(self.W_final == 0, axis=(-2, -1))
        )
        if zero.size:
            out.append(
                f"{zero.size} trajectories ended at W = 0 exactly (the inverse mirror map underflowed in "
                f"{self.dtype}: a float limit; their direction is undefined); first: #{zero[0]}"
            )
        sat = np.flatnonzero(self.saturated_step >= 0)
        if sat.size:
            out.append(
                f"{sat.size} trajectories reached a top attention weight that rounds to 1.0 in {self.dtype} "
                f"(first at step {int(self.saturated_step[sat].min())}); the engine keeps their gradient accurate "
                f"(formed from the small weights), a softmax-backward gradient is rounding noise there"
            )
        return out
