"""The figures of the real-data study (`experiments.studies.realdata.report`): the certified
feasibility frontier and the mirror-descent paths of each modality, through matplotlib object API."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np

__all__ = [
    "COLORS",
    "KINDS",
    "P_COLORS",
    "curve",
    "log_ticks",
    "mean_or_none",
    "plot_frontier",
    "plot_paths",
]


KINDS = {"opt": "globally optimal tokens", "trained": "training-derived tokens"}


COLORS = {"feasible": "tab:blue", "infeasible": "tab:red", "undecided": "tab:gray"}


P_COLORS = ("tab:purple", "tab:blue", "tab:green", "tab:orange", "tab:red", "tab:brown")


def mean_or_none(xs) -> float | None:
    xs = [x for x in xs if x is not None]
    return float(np.mean(xs)) if xs else None


def log_ticks(axis, values) -> None:
    """Log-axis ticks in one plain format: 1, 2, 5 per decade labelled ``%g`` over less than three
    decades (never ``2x10^0`` beside ``10^0``), else powers of ten only, minor ticks unlabelled."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    v = np.asarray([x for x in values if x is not None and np.isfinite(x) and x > 0], dtype=float)
    narrow = v.size == 0 or v.max() / v.min() < 1e3
    axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0) if narrow else (1.0,)))
    axis.set_major_formatter(
        FuncFormatter(lambda x, _: f"{x:g}" if narrow else f"$10^{{{np.log10(x):.0f}}}$")
    )
    axis.set_minor_formatter(NullFormatter())


def plot_frontier(summary: dict, path: Path) -> Path:
    """Fractions of subsets per verdict against ``n(T-1)/d^2``, one panel per modality; the two token
    choices are drawn with small opposite offsets along x so coinciding curves both stay visible, and
    the legend (verdict by colour, token choice by line style) sits below the panels."""
    from matplotlib.lines import Line2D

    from experiments.runtime.figures import save_png
    from experiments.studies.plots import figure

    mods = summary["modalities"]
    fig = figure(5.8 * len(mods), 5.2)
    axes = np.atleast_1d(fig.subplots(1, len(mods), squeeze=False)[0])
    for ax, (name, e) in zip(axes, mods.items()):
        fr = e["frontier"]["fractions"]
        x = np.array([f["nominal_ratio"] for f in fr], dtype=float)
        for kind, style, marker, shift in (("opt", "-", "o", 0.97), ("trained", "--", "^", 1.03)):
            for v in ("feasible", "infeasible", "undecided"):
                ax.plot(
                    x * shift,
                    [f[kind]["fractions"][v] for f in fr],
                    style,
                    marker=marker,
                    color=COLORS[v],
                    alpha=0.85,
                )
        ax.plot(
            x,
            [f["trained_locally_optimal"]["fractions"]["holds"] for f in fr],
            "-.",
            marker="s",
            color="tab:green",
        )
        ax.set_xscale("log")
        log_ticks(ax.xaxis, x)
        ax.set_ylim(-0.05, 1.05)
        ax.set_xlabel("n(T-1)/d^2 (constraints per variable, before padding)")
        ax.set_ylabel(f"fraction of the {summary['config']['subsets']} random subsets per n")
        spec = e["spec"]
        ax.set_title(f"{name}: d = {spec['d']}, T = {spec['T']}")
    handles = [
        Line2D([], [], color=COLORS[v], lw=6, label=v)
        for v in ("feasible", "infeasible", "undecided")
    ]
    handles += [
        Line2D([], [], color="black", ls="-", marker="o", label=KINDS["opt"]),
        Line2D([], [], color="black", ls="--", marker="^", label=KINDS["trained"]),
        Line2D(
            [],
            [],
            color="tab:green",
            ls="-.",
            marker="s",
            label="training-derived tokens certified locally optimal",
        ),
    ]
    fig.legend(handles=handles, loc="outside lower center", ncol=3, fontsize=8)
    return save_png(fig, path)


def curve(ax, k, y, style, color, label=None) -> None:
    """A curve over the steps k > 0; a single finite point is a marker, not a line."""
    k, y = np.asarray(k, dtype=float), np.asarray(y, dtype=float)
    keep = (k > 0) & np.isfinite(y)
    if keep.sum() == 1:
        ax.plot(k[keep], y[keep], marker="o", ls="none", color=color, label=label)
    elif keep.any():
        ax.plot(k[keep], y[keep], style, color=color, label=label)


def plot_paths(name: str, entry: dict, threshold: float, path: Path) -> Path:
    """Decay, norm growth, sorted weight profile and weight counts against p for one modality. The
    decay panel's reference to the optimal tokens is drawn only where it differs from the trajectory's
    own final tokens (else the two curves coincide); the legends sit beside the panels."""
    from matplotlib.lines import Line2D
    from matplotlib.ticker import MaxNLocator

    from experiments.runtime.figures import save_png
    from experiments.studies.plots import figure

    per_p = entry["paths"]["per_p"]
    fig = figure(14.0, 8.6)
    (a1, a2), (a3, a4) = fig.subplots(2, 2)
    same, ks, ds, norms = [], [], [], []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for (p, r), color in zip(per_p.items(), P_COLORS):
            k = np.asarray(r["record_steps"], dtype=float)
            ks += list(k[k > 0])
            curves = {
                key: None
                if r[key]["mean_curve"] is None
                else np.array(
                    [np.nan if c is None else c for c in r[key]["mean_curve"]], dtype=float
                )
                for key in ("bregman", "bregman_opt")
            }
            own, opt = curves["bregman"], curves["bregman_opt"]
            if own is not None:
                curve(a1, k, own, "-", color)
                ds += list(own[np.isfinite(own) & (own > 0)])
            if opt is not None and (
                own is None or not np.allclose(own, opt, rtol=1e-6, equal_nan=True)
            ):
                curve(a1, k, opt, ":", color)
            elif opt is not None:
                same.append(p)
            norm = np.asarray(r["norm"]["mean_curve"], dtype=float)
            curve(a2, k, norm, "-", color, f"p = {p}")
            norms += list(norm[(k > 0) & np.isfinite(norm)])
            prof = np.asarray(r["weights"]["profile_mean"])
            a3.plot(np.arange(1, prof.size + 1), prof, "-", color=color)
            if r["weights_W_mm"] is not None:
                pm = np.asarray(r["weights_W_mm"]["profile_mean"])
                a3.plot(np.arange(1, pm.size + 1), pm, "--", color=color)
    a1.set(
        xscale="log",
        yscale="log",
        xlabel="step k (iterations)",
        ylabel="D_psi(Wbar_mm, Wbar(k)) (dimensionless)",
        title=f"{name}: directional Bregman divergence, mean over inits",
    )
    a2.set(
        xscale="log",
        yscale="log",
        xlabel="step k (iterations)",
        ylabel="||W(k)||_p (dimensionless)",
        title="norm growth, mean over inits",
    )
    for ax, ys in ((a1, ds), (a2, norms)):
        log_ticks(ax.xaxis, ks)
        log_ticks(ax.yaxis, ys)
    p_handles = [Line2D([], [], color=c, label=f"p = {p}") for p, c in zip(per_p, P_COLORS)]
    ref = [
        Line2D([], [], color="black", ls="-", label="SVM of each trajectory's own final tokens"),
        Line2D(
            [],
            [],
            color="black",
            ls=":",
            label="SVM of the optimal tokens"
            + (f" (same curve for p = {', '.join(same)})" if same else ""),
        ),
    ]
    a1.legend(handles=p_handles + ref, fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    a2.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    a3.axhline(threshold, color="black", linewidth=0.8)
    a3.set(
        yscale="log",
        xlabel="entry rank (1 = largest |W_ij|)",
        ylabel="|W_ij| / ||W||_F (dimensionless)",
        title="sparsity profile",
    )
    a3.xaxis.set_major_locator(MaxNLocator(integer=True))
    log_ticks(a3.yaxis, [v for r in per_p.values() for v in r["weights"]["profile_mean"]])
    a3.legend(
        handles=p_handles
        + [
            Line2D([], [], color="black", ls="-", label="W(K)/||W(K)||_F, mean over inits"),
            Line2D([], [], color="black", ls="--", label="certified W_mm/||W_mm||_F"),
            Line2D([], [], color="black", lw=0.8, label=f"threshold {threshold}"),
        ],
        fontsize=7,
        loc="upper left",
        bbox_to_anchor=(1.01, 1.0),
    )
    ps = list(per_p)
    xs = np.arange(len(ps))
    unit = [mean_or_none(per_p[p]["weights"]["count_unit"]) or 0 for p in ps]
    mm = [per_p[p]["weights_W_mm"]["count_unit"][0] if per_p[p]["weights_W_mm"] else 0 for p in ps]
    raw = [mean_or_none(per_p[p]["weights"]["count_raw"]) or 0 for p in ps]
    a4.bar(
        xs - 0.27,
        raw,
        0.27,
        color="tab:gray",
        label="raw W(K) (horizon-dependent), mean over inits",
    )
    a4.bar(xs, unit, 0.27, color="tab:blue", label="W(K)/||W(K)||_F, mean over inits")
    a4.bar(xs + 0.27, mm, 0.27, color="tab:orange", label="certified W_mm/||W_mm||_F")
    a4.set_xticks(xs, [f"p = {p}" for p in ps])
    a4.yaxis.set_major_locator(MaxNLocator(integer=True))
    total = len(per_p[ps[0]]["weights"]["profile_mean"])
    a4.set(
        xlabel="mirror-descent exponent",
        ylabel=f"entries with |W_ij| >= {threshold} (count, of {total})",
        title="weight counts against p",
    )
    a4.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return save_png(fig, path)
