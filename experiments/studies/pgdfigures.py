"""The figures of ``mdcert study pgd`` (accuracy, sparsity, weights, margin, timing; docs/theory.md
section 7.4), drawn with matplotlib's object API and written through the one atomic writer. One set
per task: ``accuracy.png`` ... for digits, ``text-accuracy.png`` ... for text."""

from __future__ import annotations

from pathlib import Path

import numpy as np

__all__ = ["write_figures"]


def _save(fig, path: Path) -> None:
    from experiments.runtime.figures import (
        save_png,  # the one atomic writer (unique temporary names)
    )

    save_png(fig, path)


def _bars(d: dict):
    m = np.nan if d["mean"] is None else d["mean"]
    return m, (0.0 if d.get("low") is None else (d["high"] - d["low"]) / 2)


def write_figures(root: Path, summary: dict) -> dict:
    """Every task's figures (`task_figures`); returns file -> record keys."""
    figs: dict = {}
    for entry in summary["sizes"]:
        figs.update(task_figures(root, entry))
    return figs


def task_figures(root: Path, entry: dict) -> dict:
    """PREFIX accuracy.png, sparsity.png, weights.png, margin.png, timing.png of one task's summary
    entry (prefix ``text-`` for text, none for digits); returns file -> record keys."""
    from matplotlib.figure import Figure

    task = entry.get("task", "digits")
    pre = "" if task == "digits" else f"{task}-"
    s = entry["optimizers"]
    keys = list(s)
    x = np.arange(len(keys))
    names = [s[k]["p"] for k in keys]
    runs = [r for o in s.values() for r in o["runs"]]
    figs: dict = {}

    fig = Figure(figsize=(7.5, 4), layout="constrained")
    ax = fig.add_subplot()
    m, e = zip(*[_bars(s[k]["test_acc"]) for k in keys])
    ax.errorbar(
        x,
        100 * np.array(m),
        yerr=100 * np.array(e),
        fmt="o",
        capsize=4,
        label="p-GD, mean and 95% t-interval",
    )
    ax.axhline(
        100 * entry["chance"]["test_acc"], color="grey", ls="--", label="chance (majority class)"
    )
    ax.set(
        xticks=x,
        xticklabels=names,
        xlabel="p (step size tuned per p)",
        ylabel="test accuracy (%)",
        title=f"{task} MLP: test accuracy against p",
    )
    fig.legend(loc="outside right upper")
    _save(fig, root / f"{pre}accuracy.png")
    figs[f"{pre}accuracy.png"] = runs

    if all("sparsity" in s[k] for k in keys):
        fig = Figure(figsize=(10, 4), layout="constrained")
        a1, a2 = fig.subplots(1, 2)
        for r in s[keys[0]]["sparsity"]:
            m, e = zip(*[_bars(s[k]["sparsity"][r]) for k in keys])
            a1.errorbar(
                x,
                100 * np.array(m),
                yerr=100 * np.array(e),
                marker="o",
                capsize=3,
                label=f"|w| < {r} max|w|",
            )
        for q in s[keys[0]]["l1_mass"]:
            m, e = zip(*[_bars(s[k]["l1_mass"][q]) for k in keys])
            a2.errorbar(
                x,
                100 * np.array(m),
                yerr=100 * np.array(e),
                marker="s",
                capsize=3,
                label=f"{q}% of l1 mass",
            )
        a1.set(
            xticks=x,
            xticklabels=names,
            xlabel="p",
            ylabel="entries below threshold (%)",
            title=f"{task}: near-zero weights",
        )
        a2.set(
            xticks=x,
            xticklabels=names,
            xlabel="p",
            ylabel="entries carrying the mass (%)",
            title=f"{task}: l1-mass concentration",
        )
        fig.legend(loc="outside right upper")
        _save(fig, root / f"{pre}sparsity.png")
        figs[f"{pre}sparsity.png"] = runs

        from experiments.studies.pgdnet import HIST_EDGES

        fig = Figure(figsize=(8, 4), layout="constrained")
        ax = fig.add_subplot()
        mids = (HIST_EDGES[1:] + HIST_EDGES[:-1]) / 2
        for k in keys:
            h = np.asarray(s[k]["histogram_relative"], dtype=float)
            ax.step(mids, h / max(h.sum(), 1), where="mid", label=s[k]["label"])
        ax.set(
            yscale="log",
            xlabel="w / max|w| of its matrix",
            ylabel="fraction of entries (mean over seeds)",
            title=f"{task}: weight distribution against p",
        )
        fig.legend(loc="outside right upper")
        _save(fig, root / f"{pre}weights.png")
        figs[f"{pre}weights.png"] = runs

    fig = Figure(figsize=(8, 4), layout="constrained")
    ax = fig.add_subplot()
    mk = []
    for i, k in enumerate(keys):
        for m in s[k]["margin"]:
            mk.append(m["key"])
            if "margin_lower" in m:
                ax.errorbar(
                    [i],
                    [(m["margin_lower"] + m["margin_upper"]) / 2],
                    fmt="o",
                    color="C0",
                    label="certified max-margin 1/OPT",
                )
            elif m["status"] == "infeasible":
                ax.plot(
                    [i - 0.1],
                    [0.0],
                    "s",
                    color="grey",
                    mfc="none",
                    label="not separable (exact Gordan certificate), drawn at 0",
                )
            ax.plot(
                [i + 0.1],
                [m["trained_margin"]],
                "x",
                color="C1",
                label="trained head's margin (float)",
            )
    ax.set(
        xticks=x,
        xticklabels=names,
        xlabel="p (margin in the l_p norm of that p)",
        ylabel="normalized margin",
        title=f"{task}: last-layer feature margins",
    )
    hl = dict(zip(*reversed(ax.get_legend_handles_labels())))
    if hl:
        fig.legend(list(hl.values()), list(hl), loc="outside right upper")
    _save(fig, root / f"{pre}margin.png")
    figs[f"{pre}margin.png"] = mk

    fig = Figure(figsize=(8, 4), layout="constrained")
    ax = fig.add_subplot()
    for j, (name, lab) in enumerate(
        (
            ("pgd_step", "p-GD step"),
            ("sgd_step", "SGD step"),
            ("pgd_update", "p-GD .step() only"),
            ("sgd_update", "SGD .step() only"),
        )
    ):
        t = [s[k]["timing"][name] for k in keys]
        med = 1e3 * np.array([d["median"] for d in t])
        err = 1e3 * np.array(
            [[d["median"] - d["q1"] for d in t], [d["q3"] - d["median"] for d in t]]
        )
        ax.errorbar(x + 0.08 * (j - 1.5), med, yerr=err, fmt="o^sv"[j], capsize=3, label=lab)
    ax.set(
        xticks=x,
        xticklabels=names,
        xlabel="p",
        ylabel="wall ms per step (median, quartiles)",
        title=f"{task}: time per training step, interleaved",
    )
    fig.legend(loc="outside right upper")
    _save(fig, root / f"{pre}timing.png")
    figs[f"{pre}timing.png"] = [s[k]["timing"]["key"] for k in keys]
    return figs
