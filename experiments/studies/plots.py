"""Figures of a study report (PNG; docs/theory.md section 6.5); each figure's runs are listed in
summary.json ``figures`` and in report.md.

Drawn with matplotlib's object API (`matplotlib.figure.Figure`, no pyplot state, no backend switch)
and constrained layout; legends sit outside the axes, every axis names its unit, count axes have
integer ticks, and every accuracy axis carries the majority-class baseline. Curves of different
optimizers that coincide (a study at chance) are drawn with small horizontal offsets and distinct
markers, so each stays visible; a curve of a single point is drawn as a marker, not as a line.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

__all__ = ["write_figures", "figure"]

MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")


def figure(width: float, height: float):
    """A `matplotlib.figure.Figure` with constrained layout (saved by `experiments.runtime.figures.save_png`)."""
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), layout="constrained")


def _err(iv):
    """``(mean, lower error, upper error)`` of an interval dict (errors 0 when there is no interval)."""
    m = iv["mean"] if iv["mean"] is not None else np.nan
    if iv.get("low") is None:
        return m, 0.0, 0.0
    return m, m - iv["low"], iv["high"] - m


def _bars(ivs, scale: float = 1.0):
    m, lo, hi = (np.array(v, dtype=float) * scale for v in zip(*[_err(iv) for iv in ivs]))
    return m, np.vstack([lo, hi])


def _baseline(ax, value, what: str) -> None:
    if value is not None:
        ax.axhline(
            100 * value,
            color="black",
            ls=":",
            lw=1.2,
            label=f"majority-class baseline ({what}): {100 * value:.1f}%",
        )


def _legend_right(fig, ax) -> None:
    fig.legend(*ax.get_legend_handles_labels(), loc="outside right upper", fontsize=8)


def _save(fig, path: Path) -> None:
    from experiments.runtime.figures import save_png

    save_png(fig, path)


def write_figures(root: Path, study: str, sizes: list[dict]) -> dict:
    """Write the figures; returns figure file name -> the record keys it is drawn from."""
    from matplotlib.ticker import MaxNLocator

    figs: dict = {}
    runs_all = [k for s in sizes for o in s["optimizers"].values() for k in o["runs"]]

    fig = figure(8.0, 4.2)
    ax = fig.add_subplot()
    keys = list(sizes[0]["optimizers"])
    for j, s in enumerate(sizes):
        m, e = _bars([s["optimizers"][k]["test_acc"] for k in keys], 100)
        x = np.arange(len(keys)) + (j - (len(sizes) - 1) / 2) * 0.8 / max(len(sizes), 1)
        ax.errorbar(
            x,
            m,
            yerr=e,
            fmt=MARKERS[j % len(MARKERS)],
            capsize=4,
            color=f"C{j}",
            label=f"size {s['size']} (mean, 95% interval over seeds)",
        )
    _baseline(ax, sizes[0]["baseline"]["test_acc"], "test split")
    ax.set_xticks(np.arange(len(keys)), [sizes[0]["optimizers"][k]["label"] for k in keys])
    ax.set_ylabel("test accuracy (%)")
    ax.set_xlabel("optimizer (step size tuned on validation)")
    ax.set_title(f"{study}: test accuracy")
    _legend_right(fig, ax)
    figs["accuracy.png"] = runs_all
    _save(fig, root / "accuracy.png")

    for s in sizes:
        tag = f"size{s['size']}"
        opts = s["optimizers"]
        runs = [k for o in opts.values() for k in o["runs"]]
        n = len(opts)
        fig = figure(11.0, 4.0)
        a0, a1 = fig.subplots(1, 2)
        for i, (k, o) in enumerate(opts.items()):
            loss = np.array(
                [np.nan if v is None else v for v in o["curves"]["train_loss"]], dtype=float
            )
            acc = np.array(
                [np.nan if v is None else 100 * v for v in o["curves"]["val_acc"]], dtype=float
            )
            dx = (i - (n - 1) / 2) * 0.06  # coinciding curves stay visible
            style = dict(
                marker=MARKERS[i % len(MARKERS)],
                color=f"C{i}",
                label=o["label"],
                ls="-" if max(loss.size, acc.size) > 1 else "none",
            )
            a0.plot(np.arange(1, loss.size + 1) + dx, loss, **style)
            a1.plot(np.arange(1, acc.size + 1) + dx, acc, **style)
        _baseline(a1, s["baseline"]["val_acc"], "validation split")
        a0.set_ylabel("training loss (cross-entropy, nats)")
        a0.set_title("mean over batches and seeds")
        a1.set_ylabel("validation accuracy (%)")
        a1.set_title("after each epoch, mean over seeds")
        epochs = max(len(o["curves"]["train_loss"]) for o in opts.values())
        for a in (a0, a1):
            a.set_xlabel("epoch")
            a.set_xlim(0.5, max(epochs, 1) + 0.5)
            if epochs <= 12:
                a.set_xticks(range(1, max(epochs, 1) + 1))
            else:
                a.xaxis.set_major_locator(MaxNLocator(integer=True))
        _legend_right(fig, a1)
        fig.suptitle(f"{study} size {s['size']}: training curves")
        _save(fig, root / f"curves_{tag}.png")
        figs[f"curves_{tag}.png"] = runs

        fig = figure(9.0, 4.2)
        ax = fig.add_subplot()
        for i, (k, o) in enumerate(opts.items()):
            w = o.get("weights")
            if not w:
                continue
            edges = np.array(w["edges"])
            h = np.array(w["histogram"], dtype=float)
            ax.step(
                0.5 * (edges[1:] + edges[:-1]),
                h / max(h.sum(), 1),
                where="mid",
                color=f"C{i}",
                ls=("-", "--", "-.", ":")[i % 4],
                label=o["label"],
            )
        ax.axvline(0.06, color="grey", ls=":", lw=1)
        ax.axvline(-0.06, color="grey", ls=":", lw=1, label="|w| = 0.06")
        ax.set_yscale("log")
        ax.set_xlabel(
            "attention weight entry value (q, k, v, o of all blocks; dimensionless; end bins: beyond +-0.3)"
        )
        ax.set_ylabel("fraction of entries (all seeds)")
        ax.set_title(f"{study} size {s['size']}: attention weights")
        _legend_right(fig, ax)
        _save(fig, root / f"weights_{tag}.png")
        figs[f"weights_{tag}.png"] = runs

        first = next(iter(opts.values()))
        if first.get("prune"):
            _prune_figure(root / f"prune_{tag}.png", study, s)
            figs[f"prune_{tag}.png"] = runs
        if first.get("causal"):
            _causal_figure(root / f"causal_{tag}.png", study, s)
            figs[f"causal_{tag}.png"] = runs
    return figs


def _prune_figure(path: Path, study: str, s: dict) -> None:
    """Accuracy against sparsity per weight set: one colour and marker per optimizer, solid without
    retraining, dashed after fine-tuning; the legend lists optimizers and line styles once each."""
    from matplotlib.lines import Line2D

    opts = s["optimizers"]
    sets = list(next(iter(opts.values()))["prune"]["sets"])
    fig = figure(5.0 * len(sets) + 2.6, 4.2)
    axes = np.atleast_1d(fig.subplots(1, len(sets), sharey=True))
    n = len(opts)
    for a, name in zip(axes, sets):
        for i, o in enumerate(opts.values()):
            rows = o["prune"]["sets"][name]
            sp = np.array([r["sparsity"] for r in rows]) * 100 + (i - (n - 1) / 2) * 0.8
            for col, ls in (("acc_pruned", "-"), ("acc_finetuned", "--")):
                m, e = _bars([r[col] for r in rows], 100)
                a.errorbar(
                    sp,
                    m,
                    yerr=e,
                    ls=ls,
                    marker=MARKERS[i % len(MARKERS)],
                    capsize=3,
                    color=f"C{i}",
                    ms=5 if ls == "-" else 4,
                    mfc="white" if ls == "--" else None,
                )
        _baseline(a, s["baseline"]["test_acc"], "test split")
        a.set_xlabel(f"sparsity of the {name} weight matrices (%)")
        a.set_title(f"pruning: {name}")
    axes[0].set_ylabel("test accuracy (%), mean and 95% interval over seeds")
    handles = [
        Line2D([], [], color=f"C{i}", marker=MARKERS[i % len(MARKERS)], ls="-", label=o["label"])
        for i, o in enumerate(opts.values())
    ]
    handles += [
        Line2D([], [], color="grey", ls="-", label="pruned, no retraining"),
        Line2D(
            [], [], color="grey", ls="--", marker="o", mfc="white", label="pruned, then fine-tuned"
        ),
        Line2D([], [], color="black", ls=":", label="majority-class baseline"),
    ]
    fig.legend(handles=handles, loc="outside right upper", fontsize=8)
    fig.suptitle(f"{study} size {s['size']}: magnitude pruning")
    _save(fig, path)


def _causal_figure(path: Path, study: str, s: dict) -> None:
    """Drop of P(predicted class) and flip rate per optimizer and removal rule (grouped bars)."""
    opts = s["optimizers"]
    rules = (
        ("attention", "most-attended token"),
        ("random", "random token"),
        ("gradxinput", "largest grad x input"),
    )
    fig = figure(12.0, 4.2)
    axes = fig.subplots(1, 2)
    width = 0.8 / len(rules)
    x = np.arange(len(opts))
    for a, metric, scale, ylab, title in (
        (
            axes[0],
            "drop",
            100,
            "drop of P(predicted class) (percentage points)",
            "probability drop",
        ),
        (axes[1], "flip", 100, "reviews whose prediction flips (%)", "flip rate"),
    ):
        for j, (rule, what) in enumerate(rules):
            m, e = _bars([o["causal"][rule][metric] for o in opts.values()], scale)
            a.bar(
                x + (j - 1) * width,
                m,
                width,
                yerr=e,
                capsize=3,
                color=f"C{j}",
                label=f"remove the {what}",
            )
        a.axhline(0, color="black", lw=0.8)
        a.set_xticks(x, [o["label"] for o in opts.values()])
        a.set_xlabel("optimizer")
        a.set_ylabel(ylab)
        a.set_title(f"{title}: mean and 95% interval over seeds")
    fig.legend(*axes[0].get_legend_handles_labels(), loc="outside right upper", fontsize=8)
    fig.suptitle(f"{study} size {s['size']}: removing one token from each test review")
    _save(fig, path)
