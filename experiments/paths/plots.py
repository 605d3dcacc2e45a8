"""Figures for a ``mdcert paths`` run directory (matplotlib, Agg backend; no torch).

`plot_paths_run(run_dir)` reads ``summary.json`` and ``arrays.npz`` and writes PNGs next to them:

- ``bregman.png``: median and 10-90% band over trajectories of ``D_psi(Wbar_mm, Wbar(k))`` per p
  (alpha from the final attention, and the globally optimal alpha dashed);
- ``rate_fit.png``: the mean curve with its 95% bootstrap band, both laws fitted before the held-out
  split and their predictions of the held-out tail (each legend entry also gives the whole-window
  exponent that the terminal and summary.json report), the window's start when a transient was
  skipped, the verdict and the margin that decided it;
- ``cross.png``: the cross grid (rows: path exponent p, columns: SVM exponent q; median and 10-90%
  band), when present;
- ``projections.png``: 2-D projections of up to 8 normalized paths per group onto the plane of the
  SVM direction and the initial direction, with their starts, final points and SVM directions;
- ``norm_growth.png``: median ``||W(k)||_p`` with the 10-90% band over trajectories and the fitted law of
  the step rule (normalized: ``C k^e`` beside ``1/(p-1)`` and the dual-step bound; constant: ``log k``).
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import numpy as np

from certify.errors import MdcertError
from certify.exact import format_exact
from experiments.runtime.figures import read_summary, save_png, subplots
from experiments.paths.panels import (
    BAND,
    band,
    log_axes,
    norm_panel,
    projections_panel,
    quantile_curves,
    rate_panel,
)

__all__ = [
    "BAND",
    "load_run",
    "plot_paths_run",
    "quantile_curves",
    "band",
    "log_axes",
    "projections_panel",
    "cross_figure",
]


def cross_figure(groups: list, arrays: dict):
    """The cross grid: rows = path (p, lr) groups, columns = SVM exponents q; each panel the median
    and 10-90% band of ``D_psi(Wbar_mm^(q), Wbar(k))``; the panel with q = p is the path's own SVM."""
    qs = arrays["cross_q"]
    rs = arrays["record_steps"]
    fig, axes = subplots(
        len(groups),
        len(qs),
        figsize=(3.6 * len(qs) + 0.8, 2.9 * len(groups) + 0.9),
        squeeze=False,
        sharex=True,
        constrained_layout=True,
    )
    for i, (label, e, rows) in enumerate(groups):
        p = Fraction(e["p_exact"])
        for j, q in enumerate(qs):
            ax = axes[i, j]
            qf = Fraction(str(q)).limit_denominator(10**6)
            own = abs(float(q) - float(p)) < 1e-12
            band(ax, rs[rows[0]], arrays["cross"][rows, j], "D", color="C3" if own else "C0")
            log_axes(ax)
            ax.grid(True, which="major", alpha=0.3)
            ax.set_title(
                f"path {label} vs SVM q={format_exact(qf)}" + (" (own)" if own else ""), fontsize=8
            )
            if i == len(groups) - 1:
                ax.set_xlabel("step k")
            if j == 0:
                ax.set_ylabel(r"$D_\psi(\bar W^{(q)}_{mm}, \bar W(k))$")
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    counts = sorted({len(rows) for _, _, rows in groups})
    n = str(counts[0]) if len(counts) == 1 else ", ".join(str(len(rows)) for _, _, rows in groups)
    handles = [
        Line2D([], [], color="C0", label="median over the trajectories of the row"),
        Patch(color="C0", alpha=0.2, label=f"{BAND[0]}-{BAND[1]}% of trajectories"),
        Line2D([], [], color="C3", label="q = p: the path's own SVM"),
    ]
    fig.legend(handles=handles, loc="outside lower center", ncols=3, fontsize=8)
    fig.suptitle(
        f"directional Bregman divergence of each path to the certified l_q SVM direction "
        f"({n} trajectories per row)",
        fontsize=9,
    )
    return fig


def load_run(run_dir: str | Path) -> tuple[dict, dict]:
    """``(summary, arrays)`` of a run directory; MdcertError if it is missing or unreadable."""
    run_dir = Path(run_dir)
    summary = read_summary(run_dir)
    afile = run_dir / "arrays.npz"
    arrays = {}
    if afile.is_file():
        try:
            with open(afile, "rb") as fh:
                if fh.read(4) != b"PK\x03\x04":
                    raise ValueError("not a .npz archive")
            with np.load(afile, allow_pickle=False) as f:
                arrays = {k: f[k] for k in f.files}
        except Exception as exc:  # OSError, ValueError, EOFError, zipfile.BadZipFile
            msg = str(exc).splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise MdcertError(
                f"cannot read {str(afile)!r} ({msg}); rerun 'mdcert paths' to rewrite the run"
            ) from None
    return summary, arrays


def _groups(summary: dict, arrays: dict):
    """Yield (label, entry, row indices) per (p, lr) entry of the summary."""
    p_ex = arrays["p_exact"]
    lr = arrays["lr"]
    for e in summary["per_p"]:
        rows = np.flatnonzero((p_ex == e["p_exact"]) & np.isclose(lr, e["lr"]))
        label = f"p={format_exact(Fraction(e['p_exact']))}" + (
            f", lr={e['lr']:g}" if len({x["lr"] for x in summary["per_p"]}) > 1 else ""
        )
        yield label, e, rows


def plot_paths_run(run_dir: str | Path) -> list[Path]:
    """Write the PNG figures of a paths run; returns their paths."""
    import warnings

    run_dir = Path(run_dir)
    summary, arrays = load_run(run_dir)
    if summary.get("kind") != "paths":
        raise MdcertError(f"{str(run_dir)!r} is a {summary.get('kind')!r} run, not a paths run")
    if "record_steps" not in arrays:
        raise MdcertError(f"{str(run_dir)!r} has no arrays.npz with recorded paths")
    out: list[Path] = []
    groups = list(_groups(summary, arrays))
    rs = arrays["record_steps"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        if "bregman" in arrays:
            fig, axes = subplots(
                1,
                len(groups),
                figsize=(4.4 * len(groups), 4.3),
                squeeze=False,
                constrained_layout=True,
            )
            for ax, (label, e, rows) in zip(axes[0], groups):
                band(
                    ax,
                    rs[rows[0]],
                    arrays["bregman"][rows],
                    "vs SVM(alpha_final), alpha = argmax of the final attention",
                )
                band(
                    ax,
                    rs[rows[0]],
                    arrays["bregman_opt"][rows],
                    "vs SVM(opt), the globally optimal alpha",
                    linestyle="--",
                )
                log_axes(ax)
                k_opt = e.get("alpha_final_is_opt")
                ax.set_title(
                    label
                    if k_opt is None
                    else f"{label}\n{k_opt} of {e['trajectories']} trajectories ended at the optimal tokens",
                    fontsize=9,
                )
                ax.set_xlabel("step k")
                ax.set_ylabel(r"$D_\psi(\bar W_{mm}, \bar W(k))$")
                ax.grid(True, which="major", alpha=0.3)
            handles, labels = axes[0][0].get_legend_handles_labels()
            fig.legend(handles, labels, loc="outside lower center", ncols=2, fontsize=7)
            out.append(save_png(fig, run_dir / "bregman.png"))

            fig, axes = subplots(
                1,
                len(groups),
                figsize=(4.6 * len(groups), 5.6),
                squeeze=False,
                constrained_layout=True,
            )
            for ax, (label, e, rows) in zip(axes[0], groups):
                rate_panel(ax, rs[rows[0]], arrays["bregman"][rows], e.get("rate_fit") or {}, label)
            out.append(save_png(fig, run_dir / "rate_fit.png"))

        if "cross" in arrays:
            out.append(save_png(cross_figure(groups, arrays), run_dir / "cross.png"))

        if "W_mm" in arrays:
            fig, axes = subplots(1, len(groups), figsize=(4.6 * len(groups), 4.4), squeeze=False)
            for ax, (label, e, rows) in zip(axes[0], groups):
                projections_panel(ax, arrays, rows, float(e["p"]), label)
            fig.tight_layout()
            out.append(save_png(fig, run_dir / "projections.png"))

        fig, axes = subplots(
            1, len(groups), figsize=(4.6 * len(groups), 5.4), squeeze=False, constrained_layout=True
        )
        for ax, (label, e, rows) in zip(axes[0], groups):
            norm_panel(
                ax,
                rs[rows[0]],
                arrays["norm_p"][rows],
                e,
                label,
                bool(summary["config"].get("normalize")),
            )
        out.append(save_png(fig, run_dir / "norm_growth.png"))
    return out
