"""Figures of a study report (PNG, legends and axis labels; docs/theory.md section 6.5); each figure's
runs are listed in summary.json ``figures`` and in report.md."""

from __future__ import annotations

from pathlib import Path

import numpy as np

__all__ = ["write_figures"]


def _err(iv):
    m = iv["mean"] if iv["mean"] is not None else np.nan
    if iv.get("low") is None:
        return m, 0.0
    return m, (iv["high"] - iv["low"]) / 2


def write_figures(root: Path, study: str, sizes: list[dict]) -> dict:
    """Write the figures; returns figure file name -> the record keys it is drawn from."""
    from experiments.figures import pyplot, save_png

    plt = pyplot()
    figs: dict = {}
    runs_all = [k for s in sizes for o in s["optimizers"].values() for k in o["runs"]]

    fig, ax = plt.subplots(figsize=(6.5, 4))
    for j, s in enumerate(sizes):
        keys = list(s["optimizers"])
        ms, es = zip(*[_err(s["optimizers"][k]["test_acc"]) for k in keys])
        x = np.arange(len(keys)) + 0.8 * j / max(len(sizes), 1)
        ax.errorbar(x, 100 * np.array(ms), yerr=100 * np.array(es), fmt="o", capsize=4, label=f"size {s['size']}")
        ax.set_xticks(np.arange(len(keys)), [s["optimizers"][k]["label"] for k in keys])
    ax.set_ylabel("test accuracy (%), mean and 95% t-interval over seeds")
    ax.set_xlabel("optimizer (step size tuned on validation)")
    ax.set_title(f"{study}: test accuracy")
    ax.legend()
    figs["accuracy.png"] = runs_all
    save_png(fig, root / "accuracy.png")
    plt.close(fig)

    for s in sizes:
        tag = f"size{s['size']}"
        opts = s["optimizers"]
        runs = [k for o in opts.values() for k in o["runs"]]
        fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
        for k, o in opts.items():
            e = np.arange(1, len(o["curves"]["train_loss"]) + 1)
            axes[0].plot(e, [np.nan if v is None else v for v in o["curves"]["train_loss"]], marker="o", label=o["label"])
            axes[1].plot(e, [np.nan if v is None else 100 * v for v in o["curves"]["val_acc"]], marker="o", label=o["label"])
        axes[0].set_ylabel("training loss (mean over batches and seeds)")
        axes[1].set_ylabel("validation accuracy (%), mean over seeds")
        for a in axes:
            a.set_xlabel("epoch")
            a.legend()
        fig.suptitle(f"{study} size {s['size']}: training curves")
        save_png(fig, root / f"curves_{tag}.png")
        plt.close(fig)
        figs[f"curves_{tag}.png"] = runs

        fig, ax = plt.subplots(figsize=(6.5, 4))
        for k, o in opts.items():
            w = o.get("weights")
            if not w:
                continue
            edges = np.array(w["edges"])
            h = np.array(w["histogram"], dtype=float)
            ax.step(0.5 * (edges[1:] + edges[:-1]), h / max(h.sum(), 1), where="mid", label=o["label"])
        ax.axvline(0.06, color="grey", ls=":", lw=1)
        ax.axvline(-0.06, color="grey", ls=":", lw=1, label="|w| = 0.06")
        ax.set_yscale("log")
        ax.set_xlabel("attention weight entry (q, k, v, o of all blocks; end bins hold values beyond +-0.3)")
        ax.set_ylabel("fraction of entries (all seeds)")
        ax.set_title(f"{study} size {s['size']}: attention weights")
        ax.legend()
        save_png(fig, root / f"weights_{tag}.png")
        plt.close(fig)
        figs[f"weights_{tag}.png"] = runs

        first = next(iter(opts.values()))
        if first.get("prune"):
            sets = list(first["prune"]["sets"])
            fig, axes = plt.subplots(1, len(sets), figsize=(5 * len(sets), 3.8), squeeze=False)
            for a, name in zip(axes[0], sets):
                for i, (k, o) in enumerate(opts.items()):
                    rows = o["prune"]["sets"][name]
                    sp = np.array([r["sparsity"] for r in rows]) * 100
                    for col, ls, what in (("acc_pruned", "-", "no retraining"), ("acc_finetuned", "--", "fine-tuned")):
                        m, e = zip(*[_err(r[col]) for r in rows])
                        a.errorbar(sp, 100 * np.array(m), yerr=100 * np.array(e), ls=ls, marker="o", capsize=3,
                                   color=f"C{i}", label=f"{o['label']}, {what}")
                a.set_xlabel(f"sparsity of {name} weight matrices (%)")
                a.set_ylabel("test accuracy (%), 95% t-interval")
                a.set_title(f"pruning: {name}")
            axes[0][0].legend(fontsize=7)
            fig.suptitle(f"{study} size {s['size']}: magnitude pruning")
            save_png(fig, root / f"prune_{tag}.png")
            plt.close(fig)
            figs[f"prune_{tag}.png"] = runs

        if first.get("causal"):
            rules = ["attention", "random", "gradxinput"]
            fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
            width = 0.8 / len(rules)
            for a, metric, ylab in ((axes[0], "drop", "drop of P(predicted class)"), (axes[1], "flip", "flip rate")):
                for j, rule in enumerate(rules):
                    m, e = zip(*[_err(o["causal"][rule][metric]) for o in opts.values()])
                    a.bar(np.arange(len(opts)) + j * width, m, width, yerr=e, capsize=3, label=f"remove {rule} token")
                a.set_xticks(np.arange(len(opts)) + width, [o["label"] for o in opts.values()])
                a.set_xlabel("optimizer")
                a.set_ylabel(f"{ylab}, mean over seeds, 95% t-interval")
                a.legend(fontsize=8)
            fig.suptitle(f"{study} size {s['size']}: removing one token from each test review")
            save_png(fig, root / f"causal_{tag}.png")
            plt.close(fig)
            figs[f"causal_{tag}.png"] = runs
    return figs
