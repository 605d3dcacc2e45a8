"""Figures of ``mdcert signdescent`` (docs/theory.md section 8.5), matplotlib's object API on the Agg
canvas (no pyplot state): written only when matplotlib (the ``[plots]`` extra) is installed.

- `plot_trajectories`: ``beta_i(t)`` per eps, one panel each (the paper's Fig. 2 style), optionally the
  ODE reference as crosses on the same axes (its Fig. 1);
- `plot_vs_eps`: per rule, the proven delta upper bound and the measured l2 distances to the certified
  minimum-l_{3/2} and minimum-l2 interpolators, and the proven bound on the distance to the minimizer of
  E, against eps (its Fig. 3 style).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

__all__ = ["have_matplotlib", "plot_trajectories", "plot_vs_eps"]

_MARK = {"sign": "o", "adam": "s", "gd": "^"}


def have_matplotlib() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def _save(fig, path: Path) -> Path:
    from experiments.runtime.figures import (
        save_png,
    )  # the one atomic writer (unique temporary names)

    return save_png(fig, path)


def plot_trajectories(
    path: Path,
    *,
    time: np.ndarray,
    beta: np.ndarray,
    eps: list[float],
    title: str,
    xlabel: str = "time t = step x lr",
    ode: list[tuple[np.ndarray, np.ndarray]] | None = None,
    max_coords: int = 10,
) -> Path:
    """``beta`` (P, R, D): one panel per eps (P panels) of beta_i against ``time`` (R,); ``ode[p]`` =
    (times, beta (T, D)) drawn as crosses."""
    from matplotlib.figure import Figure

    P, _, D = beta.shape
    cols = min(P, 3)
    rows = -(-P // cols)
    fig = Figure(figsize=(4.2 * cols + 1.6, 3.2 * rows), layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False)
    colors = [f"C{i % 10}" for i in range(D)]
    for p in range(P):
        ax = axes[p // cols][p % cols]
        for i in range(min(D, max_coords)):
            ax.plot(
                time,
                beta[p, :, i],
                color=colors[i],
                lw=1.4,
                label=f"beta_{i + 1} (discrete)" if p == 0 else None,
            )
            if ode is not None:
                ax.plot(
                    ode[p][0],
                    ode[p][1][:, i],
                    color=colors[i],
                    ls="none",
                    marker="x",
                    ms=4,
                    markevery=max(1, len(ode[p][0]) // 25),
                    label=f"beta_{i + 1} (ODE, solve_ivp)" if p == 0 else None,
                )
        ax.set_title(f"eps = {eps[p]:g}")
        ax.set_xlabel(xlabel)
        ax.set_ylabel("beta_i (coordinate of w+^2 - w-^2)")
        ax.grid(alpha=0.3)
    for p in range(P, rows * cols):
        axes[p // cols][p % cols].set_visible(False)
    fig.suptitle(title)
    fig.legend(
        loc="outside lower center",
        fontsize=8,
        ncols=min(5, 2 * min(D, max_coords) if ode else min(D, max_coords)),
    )
    return _save(fig, path)


def plot_vs_eps(path: Path, rows: list[dict], *, title: str, p: str = "3/2") -> Path:
    """Per rule (rows of a summary's ``trajectories``, finished ones): delta and distances vs eps
    (``p``: the exponent of the min-l_p reference, 2 - 1/H at depth H). Rows without delta-KKT facts
    (depth > 2) leave those panels empty."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(12.5, 3.8), layout="constrained")
    ax_d, ax_32, ax_e = fig.subplots(1, 3)
    rules = sorted({r["rule"] for r in rows}, key=list(_MARK).index)
    for j, rule in enumerate(rules):
        rs = sorted(
            (r for r in rows if r["rule"] == rule and r["status"] == "finished"),
            key=lambda r: r["eps"],
        )
        if not rs:
            continue
        eps = np.array([r["eps"] for r in rs])
        c, mk = f"C{j}", _MARK.get(rule, "o")
        ax_d.plot(
            eps,
            [r.get("delta_upper_float", np.nan) for r in rs],
            color=c,
            marker=mk,
            label=f"{rule}: delta (proven upper bound)",
        )
        ax_32.plot(
            eps,
            [r["dist_lp"] for r in rs],
            color=c,
            marker=mk,
            label=f"{rule}: to min-l{p} interpolator",
        )
        ax_32.plot(
            eps,
            [r["dist_l2"] for r in rs],
            color=c,
            marker=mk,
            ls=":",
            mfc="none",
            label=f"{rule}: to min-l2 interpolator",
        )
        if any(r.get("dist_psi") is not None for r in rs):
            ax_32.plot(
                eps,
                [np.nan if r.get("dist_psi") is None else r["dist_psi"] for r in rs],
                color=c,
                marker=mk,
                ls="--",
                mfc="none",
                label=f"{rule}: to the gd limit argmin Q_alpha",
            )
        e = [
            np.nan
            if r.get("distance_to_E_opt_upper_float") is None
            else r["distance_to_E_opt_upper_float"]
            for r in rs
        ]
        ax_e.plot(
            eps,
            e,
            color=c,
            marker=mk,
            label=f"{rule}: to argmin E (proven upper bound, from beta_f)",
        )
    for ax, ylab in (
        (ax_d, "delta (delta-KKT of E, section 8.4)"),
        (ax_32, "||beta_inf - beta_ref||_2 (measured)"),
        (ax_e, "||beta_f - argmin E||_2 upper bound"),
    ):
        ys = [y for line in ax.get_lines() for y in np.asarray(line.get_ydata(), dtype=float)]
        if not any(np.isfinite(y) and y > 0 for y in ys):
            # e.g. depth > 2: E and delta-KKT are depth-2 facts; say so instead of an empty log axis
            ax.text(
                0.5,
                0.5,
                "not defined for these rows\n(depth > 2 or not finished)",
                ha="center",
                va="center",
                transform=ax.transAxes,
            )
            ax.set_xlabel("eps (smoothing of the sign / Adam's eps)")
            ax.set_ylabel(ylab)
            continue
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("eps (smoothing of the sign / Adam's eps)")
        ax.set_ylabel(ylab)
        ax.grid(alpha=0.3, which="both")
    fig.suptitle(title)
    fig.legend(loc="outside lower center", fontsize=8, ncols=4)
    return _save(fig, path)
