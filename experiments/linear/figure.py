"""The figure of a p-GD run (matplotlib object API: a `Figure` on an Agg canvas; no global backend)."""

from __future__ import annotations

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

__all__ = ["pgd_figure"]


def pgd_figure(run) -> Figure:
    """Median over initializations per (p, lr): D_psi to the certified direction (left), ||w(k)||_p (right)."""
    fig = Figure(figsize=(10, 4))
    FigureCanvasAgg(fig)
    axd, axn = fig.subplots(1, 2)
    paths, cfg = run.paths, run.paths.config
    k = paths.steps[1:].astype(float)
    for p in cfg.ps:
        for lr in cfg.lrs:
            rows = [b for b, (pp, ll, _) in enumerate(cfg.grid) if pp == p and ll == lr]
            label = f"p={p:g} lr={lr:g}"
            if paths.bregman is not None:
                D = np.median(paths.bregman[rows, 1:], axis=0)
                axd.loglog(k[D > 0], D[D > 0], label=label)
            axn.loglog(k, np.maximum(np.median(paths.norms[rows, 1:], axis=0), 1e-300), label=label)
    axd.set(
        xlabel="step k",
        ylabel="D_psi(u_p, w(k)/||w(k)||_p)",
        title="directional Bregman divergence"
        if paths.bregman is not None
        else "no certified reference",
    )
    axn.set(xlabel="step k", ylabel="||w(k)||_p", title="norm growth")
    axn.legend(fontsize=7)
    fig.tight_layout()
    return fig
