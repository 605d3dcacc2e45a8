"""Weight statistics of trained models: threshold counts per attention matrix and histograms (docs/theory.md section 6.5).

The paper counts attention entries with ``|w| >= 0.06`` and reads fewer such entries for p near 1 as
sparser weights. A count is a description of the trained weights, not a pruning result: what
removing the small entries does to accuracy, size and time is measured by `experiments.studies.prune`.
"""

from __future__ import annotations

import numpy as np
import torch

__all__ = ["THRESHOLD", "HIST_EDGES", "threshold_counts", "histogram"]

THRESHOLD = 0.06
#: fixed histogram bins (so runs and optimizers are comparable); entries outside fall in the end bins
HIST_EDGES = np.linspace(-0.3, 0.3, 61)


def threshold_counts(matrices: dict[str, torch.Tensor], *, threshold: float = THRESHOLD) -> dict[str, dict]:
    """Per matrix: ``{"count": #|w| >= threshold, "size": entries, "fraction": count / size}``, plus ``"all"``."""
    out: dict[str, dict] = {}
    total = size = 0
    for name, w in matrices.items():
        c = int((w.detach().abs() >= threshold).sum())
        out[name] = {"count": c, "size": int(w.numel()), "fraction": c / w.numel()}
        total, size = total + c, size + int(w.numel())
    out["all"] = {"count": total, "size": size, "fraction": total / max(size, 1)}
    return out


def histogram(matrices: dict[str, torch.Tensor], *, edges: np.ndarray = HIST_EDGES) -> dict:
    """Counts of all entries of ``matrices`` in ``edges`` (clipped into the end bins), and summary moments."""
    w = torch.cat([m.detach().reshape(-1).double().cpu() for m in matrices.values()]).numpy()
    counts, _ = np.histogram(np.clip(w, edges[0], edges[-1]), bins=edges)
    return {"edges": edges.tolist(), "counts": counts.tolist(), "mean_abs": float(np.abs(w).mean()),
            "max_abs": float(np.abs(w).max()), "size": int(w.size)}
