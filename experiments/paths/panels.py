"""The panels of the ``mdcert paths`` figures (`experiments.paths.plots`): quantile bands over
trajectories, log axes, 2-D projections of normalized paths, the rate-fit panel and the norm-growth
panel (docs/theory.md sections 6.2, 6.3 and 6.4). Each draws into a given matplotlib ``Axes``."""

from __future__ import annotations

import numpy as np

__all__ = [
    "BAND",
    "quantile_curves",
    "band",
    "log_axes",
    "projections_panel",
    "rate_panel",
    "norm_panel",
    "count_text",
    "legend_below",
]

#: the quantiles of the bands (percent)
BAND = (10, 90)


def quantile_curves(steps_row: np.ndarray, curves: np.ndarray):
    """``(k, median, lower, upper, n)`` over the trajectories (rows) of ``curves`` at the recorded steps
    ``k > 0`` (log axes), ignoring non-finite values; ``n`` is the number of trajectories with a
    finite value at every drawn step."""
    valid = steps_row > 0
    k = steps_row[valid].astype(float)
    c = np.where(np.isfinite(curves[:, valid]), curves[:, valid], np.nan)
    n = int(np.sum(np.all(np.isfinite(c), axis=1))) if c.size else 0
    with np.errstate(invalid="ignore"):
        if c.shape[0] == 0 or not np.isfinite(c).any():
            nan = np.full(k.shape, np.nan)
            return k, nan, nan, nan, 0
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns stay NaN
            med = np.nanmedian(c, axis=0)
            lo, hi = np.nanpercentile(c, BAND, axis=0)
    return k, med, lo, hi, n


def band(ax, steps_row: np.ndarray, curves: np.ndarray, label: str, **kw):
    """The median over trajectories as a line and its 10-90% quantiles as a band, both in the legend;
    returns the line (None when nothing is finite)."""
    k, med, lo, hi, n = quantile_curves(steps_row, curves)
    if not np.isfinite(med).any():
        return None
    (line,) = ax.plot(k, med, label=f"{label}: median of {n} trajectories", **kw)
    ax.fill_between(
        k,
        lo,
        hi,
        color=line.get_color(),
        alpha=0.2,
        lw=0,
        label=f"{label}: {BAND[0]}-{BAND[1]}% of them",
    )
    return line


def log_axes(ax) -> None:
    """Log-log axes whose tick labels are plain numbers (0.7, 1e-05), readable when the range is
    under a decade."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    ax.set_xscale("log")
    ax.set_yscale("log")
    lo, hi = ax.get_ylim()
    fmt = FuncFormatter(lambda y, _: f"{y:.4g}")  # 0.7, 100, 1e-05: one format on every tick
    ax.yaxis.set_major_formatter(fmt)
    span = hi / max(lo, 1e-300)
    if (
        span < 10
    ):  # under a decade: label the minor ticks, plainly (every one only when they do not crowd)
        ax.yaxis.set_minor_locator(
            LogLocator(subs=tuple(range(2, 10)) if span < 3 else (2.0, 3.0, 5.0))
        )
        ax.yaxis.set_minor_formatter(fmt)
    elif span < 1000:  # one to three decades: 2 and 5 too, so every panel has at least two labels
        ax.yaxis.set_minor_locator(LogLocator(subs=(2.0, 5.0)))
        ax.yaxis.set_minor_formatter(fmt)
    else:
        ax.yaxis.set_minor_formatter(NullFormatter())


def projections_panel(
    ax, arrays: dict, rows: np.ndarray, p: float, label: str, *, max_paths: int = 8
) -> int:
    """Coordinates of ``Wbar(k) = W(k)/||W(k)||_p`` in the orthonormal (Frobenius) basis
    ``e1 = W_mm/||W_mm||_F``, ``e2`` = the part of ``W(0)`` orthogonal to ``e1``, for at most
    ``max_paths`` paths of ``rows``, each with its own certified SVM direction; returns how many
    were drawn (the title and legend say it)."""
    from matplotlib.lines import Line2D

    rs = arrays["record_steps"]
    shown = 0
    for b in rows:
        ref = arrays["W_mm"][b]
        if not np.all(np.isfinite(ref)) or shown >= max_paths:
            continue
        valid = rs[b] >= 0
        W = arrays["W"][b][valid]
        W = W / np.sum(np.abs(W) ** p, axis=(1, 2), keepdims=True) ** (1 / p)
        e1 = ref / np.linalg.norm(ref)
        w0 = W[0] - np.sum(W[0] * e1) * e1
        nrm = np.linalg.norm(w0)
        if nrm == 0 or not np.all(np.isfinite(W)):
            continue
        e2 = w0 / nrm
        x, y = np.sum(W * e1, axis=(1, 2)), np.sum(W * e2, axis=(1, 2))
        ax.plot(x, y, "-", lw=1, alpha=0.8)
        ax.plot(x[0], y[0], "o", ms=4, mfc="none", color="0.35")
        ax.plot(x[-1], y[-1], "o", ms=3, color="k")
        ax.plot(np.sum(ref * e1) / np.sum(np.abs(ref) ** p) ** (1 / p), 0.0, "*", ms=10, color="r")
        shown += 1
    ax.set_xlabel(r"$\langle \bar W(k), e_1\rangle$, $e_1 = W_{mm}/\|W_{mm}\|_F$")
    ax.set_ylabel(r"$\langle \bar W(k), e_2\rangle$, $e_2 \perp e_1$ from $W(0)$")
    ax.set_title(f"{label}: {shown} of {len(rows)} paths drawn", fontsize=9)
    handles = [
        Line2D([], [], color="C0", lw=1, label=r"path $\bar W(k) = W(k)/\|W(k)\|_p$"),
        Line2D([], [], ls="", marker="o", mfc="none", color="0.35", label=r"start $\bar W(0)$"),
        Line2D([], [], ls="", marker="o", ms=3, color="k", label=r"final iterate $\bar W(K)$"),
        Line2D(
            [],
            [],
            ls="",
            marker="*",
            ms=10,
            color="r",
            label=r"certified SVM direction $\bar W_{mm}$ (one per problem)",
        ),
    ]
    ax.legend(handles=handles, fontsize=7, loc="best")
    ax.grid(True, alpha=0.3)
    return shown


def rate_panel(ax, steps_row: np.ndarray, curves: np.ndarray, fit: dict, label: str) -> None:
    """The mean D(k) with its bootstrap band, both laws fitted before the held-out split and their
    predictions of the held-out tail, and the verdict with the margin that decided it."""
    from experiments.paths.rates import bootstrap_means

    valid = steps_row > 0
    k, c = steps_row[valid].astype(float), curves[:, valid]
    rows = np.all(np.isfinite(c) & (c > 0), axis=1)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("step k")
    ax.set_ylabel(r"$D_\psi(\bar W_{mm}, \bar W(k))$")
    if not rows.any():
        ax.set_title(f"{label}: no finite curve", fontsize=9)
        return
    c = c[rows]
    geo = fit.get("average", "arithmetic") == "geometric"
    name = "geometric mean" if geo else "mean"
    ax.plot(
        k,
        np.exp(np.log(c).mean(axis=0)) if geo else c.mean(axis=0),
        "k.",
        ms=3,
        label=f"{name} over {count_text(c.shape[0], 'trajectory', 'trajectories')}",
    )
    if c.shape[0] > 1:
        boot = bootstrap_means(np.log(c) if geo else c, 400, np.random.default_rng(0))
        lo, hi = np.percentile(np.exp(boot) if geo else boot, [2.5, 97.5], axis=0)
        ax.fill_between(
            k, lo, hi, color="0.6", alpha=0.35, lw=0, label=f"95% bootstrap band of the {name}"
        )
    sel = fit.get("selection")
    if sel and "tail_from_step" in fit:
        split = sel["split_step"]
        kk = k[k >= fit["tail_from_step"]]
        one = fit.get("trials") == 1
        for m, style, name, sym in (
            ("log", "C0", "C (log k)^-a", "a"),
            ("power", "C3", "C k^-b", "b"),
        ):
            a, C = sel["early_fits"][m]
            x = np.log(kk) if m == "log" else kk
            y = C * x ** (-a)
            err = sel[f"error_{m}"]
            whole = fit.get(m) or {}
            ci = whole.get("ci")
            whole_txt = (
                ""
                if whole.get("exponent") is None
                else (
                    f"\nwhole window: {sym} = {whole['exponent']:.3g}"
                    + (
                        " (one trajectory, no interval)"
                        if one
                        else (f" [{ci[0]:.3g}, {ci[1]:.3g}]" if ci else "")
                    )
                )
            )
            ax.plot(
                kk[kk < split],
                y[kk < split],
                "-",
                color=style,
                label=f"{name}, {sym} = {a:.3g} fitted before the split{whole_txt}",
            )
            ax.plot(
                kk[kk >= split],
                y[kk >= split],
                "--",
                color=style,
                label=f"its prediction (rms log error {err:.2g})",
            )
        ax.axvline(split, color="0.3", ls=":", lw=1, label=f"held-out tail from k={split}")
        win = fit.get("window") or {}
        if win.get("transient_skipped"):
            ax.axvline(
                fit["tail_from_step"],
                color="0.3",
                ls="-.",
                lw=1,
                label=f"window from k={fit['tail_from_step']} (transient from k={win['default_from_step']} skipped)",
            )
    verdict = fit.get("verdict", "n/a")
    margin = ""
    if sel and sel.get("difference_ci"):
        lo_d, hi_d = sel["difference_ci"]
        margin = f"\nerror log - power {sel['difference']:.2g} [{lo_d:.2g}, {hi_d:.2g}]"
    state = fit.get("state")
    ax.set_title(
        f"{label}, D vs SVM(alpha_final): {verdict}"
        + (f" ({state})" if state and state != "asymptotic" else "")
        + margin,
        fontsize=9,
    )
    log_axes(ax)  # plain tick labels (0.7, not 7 x 10^-1)
    legend_below(ax)


def norm_panel(
    ax, steps_row: np.ndarray, norms: np.ndarray, entry: dict, label: str, normalized: bool
) -> None:
    """Median ||W(k)||_p with its 10-90% band over trajectories and the fitted law of the step rule
    (power of k for normalized steps, log k for constant steps; docs/theory.md section 6)."""
    from experiments.paths.growth import normalized_bound

    valid = steps_row > 0
    k, c = steps_row[valid].astype(float), norms[:, valid]
    c = c[np.all(np.isfinite(c), axis=1)]
    ax.set_xscale("log")
    if normalized:
        ax.set_yscale("log")
    ax.set_xlabel("step k")
    ax.set_ylabel(r"$\|W(k)\|_p$")
    ax.set_title(label, fontsize=9)
    if c.shape[0] == 0:
        return
    med = np.median(c, axis=0)
    (line,) = ax.plot(
        k, med, label=f"median over {count_text(c.shape[0], 'trajectory', 'trajectories')}"
    )
    ax.plot(k, c.mean(axis=0), "k.", ms=2, label="mean (the fitted curve)")
    ax.fill_between(
        k,
        np.percentile(c, 10, axis=0),
        np.percentile(c, 90, axis=0),
        color=line.get_color(),
        alpha=0.2,
        lw=0,
        label="10-90% of trajectories",
    )
    nf = entry.get("norm_fit") or {}
    if "law" in nf:
        kk = k[k >= nf["tail_from"]]
        ci = nf.get("ci")
        ci_txt = (
            " (one trajectory, no interval)"
            if nf.get("trials") == 1 or not ci
            else f" [{ci[0]:.3g}, {ci[1]:.3g}]"
        )
        win = f"\non k >= {nf['tail_from']}"
        if nf.get("default_from") is not None and nf["tail_from"] > nf["default_from"]:
            win += " (past the initial plateau)"
        if nf.get("settled") is False:
            win += "\ngrowth not settled to one law"
        if nf["law"] == "power":
            fit_label = f"fit of the mean: C k^e, e = {nf['coefficient']:.3g}{ci_txt}{win}"
            if nf.get("expected") is not None:
                fit_label += f"\n(1/(p-1) = {nf['expected']:.3g})"
            ax.plot(
                kk, np.exp(nf["intercept"]) * kk ** nf["coefficient"], "k--", lw=1, label=fit_label
            )
        else:
            ax.plot(
                kk,
                nf["intercept"] + nf["coefficient"] * np.log(kk),
                "k--",
                lw=1,
                label=f"fit of the mean: c1 log k + c0, c1 = {nf['coefficient']:.3g}{ci_txt}{win}"
                f"\n(Theorem 8, R^2 {nf['r2']:.3f})",
            )
    if normalized and steps_row[0] == 0 and np.isfinite(norms[:, 0]).all():
        bound = normalized_bound(
            np.median(norms[:, 0]), k, p=float(entry["p"]), lr=float(entry["lr"])
        )
        ax.plot(
            k,
            bound,
            ":",
            color="0.4",
            lw=1,
            label="dual-step bound (||W0||^(p-1) + lr k)^(1/(p-1))",
        )
    if normalized:
        log_axes(ax)  # plain tick labels (20, 6), not 2 x 10^1
    legend_below(ax)


def count_text(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def legend_below(ax) -> None:
    """The panel's legend under its axes, where it hides no data."""
    ax.legend(fontsize=6, loc="upper center", bbox_to_anchor=(0.5, -0.14), borderaxespad=0)
