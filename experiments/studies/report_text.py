"""The text of a study report (`experiments.studies.report`): the headline lines and report.md, with
intervals, percentages and the chance baseline each accuracy must beat (docs/theory.md section 6.5)."""

from __future__ import annotations

__all__ = [
    "CHANCE_MARGIN",
    "headline_lines",
    "interval_text",
    "keys_text",
    "markdown",
    "percent_text",
]


#: a run within this much test accuracy (1 point) of the majority-class baseline sits on it
CHANCE_MARGIN = 0.01


def headline_lines(sizes, *, smoke: bool = False) -> list[str]:
    lines = []
    if smoke:
        lines.append(
            "--quick is a smoke run (a small model, a subset, few epochs): it tests the pipeline; its "
            "accuracies and differences are not results about the optimizers"
        )
    for s in sizes:
        b = s["baseline"]
        if s["all_at_baseline"]:
            lines.append(
                f"WARNING size {s['size']}: every run of every optimizer sits on the majority-class baseline "
                f"(test accuracy {100 * b['test_acc']:.2f}%, always predicting label {b['class']}, within "
                f"{100 * CHANCE_MARGIN:g} point): no learning was measured; train longer (--epochs) or on "
                f"more data (--train-limit)"
            )
        o = s["optimizers"]
        for key in ("p1.1",):
            if key in o and "minus_gd" in o[key]:
                from experiments.studies.stats import Interval

                iv = Interval(**{k: v for k, v in o[key]["minus_gd"].items()})
                lines.append(
                    f"size {s['size']}: p=1.1 minus GD test accuracy {iv.text(100)} points "
                    f"({o[key]['minus_gd']['n']} paired seeds): {o[key]['verdict_vs_gd']}"
                )
    return lines


def interval_text(d, scale=100.0, digits=2) -> str:
    if d is None or d.get("mean") is None:
        return "n/a"
    m = f"{d['mean'] * scale:.{digits}f}"
    if d.get("low") is None:
        return f"{m} (n={d['n']}, no interval)"
    return f"{m} [{d['low'] * scale:.{digits}f}, {d['high'] * scale:.{digits}f}]"


def percent_text(x) -> str:
    return "n/a" if x is None else f"{100 * x:.2f}%"


def keys_text(keys) -> str:
    return ", ".join(k[:12] for k in keys)


def markdown(study: str, summary: dict) -> str:
    lines = [
        f"# mdcert study {study}",
        "",
        "Intervals: 95% Student-t intervals over seeds (the seed is the unit of replication), clipped to the "
        "quantity's range (counts >= 0, accuracies and rates in [0, 100]%); differences to GD (p = 2) are paired "
        "by seed (same initialization, batch order and dropout). Run keys name the records in runs/KEY.json "
        "(first 12 hex digits shown).",
        "",
    ]
    t = summary.get("timings")
    if t:
        lines += [
            f"Time of this invocation: {t['wall_s']:.1f} s wall until this report (figures excluded); the runs' "
            f"own times summed over {t['workers']} worker process(es): {t['runs_wall_summed_s']:.1f} s wall, "
            f"{t['runs_cpu_summed_s']:.1f} s CPU ({summary['runs_trained_now']} run(s) trained now, "
            f"{summary['runs_reused']} reused).",
            "",
        ]
    lines += ["## Headline", ""] + [f"- {h}" for h in summary["headline"]] + [""]
    for s in summary["sizes"]:
        opts = s["optimizers"]
        cfg = s["config"]
        b = s["baseline"]
        lines += [
            f"## Size {s['size']} (blocks = heads = {s['size']})",
            "",
            f"Model {cfg['model']}; {cfg['train']} training, {cfg['val']} validation, {cfg['test']} test "
            f"items; {cfg['epochs']} epochs, batch {cfg['batch']}.",
            "",
            f"Majority-class baseline (chance): always predicting label {b['class']} (the training split's "
            f"majority, {100 * b['train_share']:.2f}% of it) scores {percent_text(b['test_acc'])} on the test split and "
            f"{percent_text(b['val_acc'])} on the validation split. A run within {100 * b['margin']:g} point of it sits on "
            f"the baseline.",
            "",
        ]
        if s["all_at_baseline"]:
            lines += [
                "**Warning: every run of every optimizer sits on the majority-class baseline: this size measured "
                "no learning, and its comparisons below say nothing about the optimizers.**",
                "",
            ]
        lines += [
            "| optimizer | step size (grid) | test accuracy % | minus baseline, points | minus GD, points | verdict "
            "| |w|>=0.06 share of attention entries % | diverged seeds | s/epoch | runs |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for k, o in opts.items():
            grid = (
                ", ".join(f"{t['lr']:g}" + ("*" if t["lr"] == o["lr"] else "") for t in o["tuning"])
                or "fixed by --lr"
            )
            edge = " (grid edge)" if o["lr_at_grid_edge"] else ""
            frac = (
                interval_text(o["weights"].get("fraction_ge_threshold"))
                if o.get("weights")
                else "n/a"
            )
            above = (
                "n/a"
                if o["test_acc"]["mean"] is None
                else f"{100 * (o['test_acc']['mean'] - b['test_acc']):+.2f}"
                + (" (on it)" if o["at_baseline"] else "")
            )
            lines.append(
                f"| {o['label']} | {o['lr']:g}{edge} ({grid}) | {interval_text(o['test_acc'])} | {above} | "
                f"{interval_text(o.get('minus_gd')) if 'minus_gd' in o else '-'} | {o.get('verdict_vs_gd', '-')} | {frac} | "
                f"{o['diverged_seeds']} | {o['epoch_seconds']:.1f} | {keys_text(o['runs'])} |"
            )
        lines += ["", "Tuning (validation accuracy after the last epoch, seed 0; * = kept):", ""]
        for k, o in opts.items():
            if not o["tuning"]:
                lines.append(f"- {o['label']}: not tuned (--lr {o['lr']:g})")
                continue
            lines.append(
                f"- {o['label']}: "
                + "; ".join(
                    f"lr {t['lr']:g}: "
                    + ("diverged" if t["diverged"] else f"{100 * (t['val_acc'] or 0):.2f}%")
                    + f" ({t['key'][:12]})"
                    for t in o["tuning"]
                )
            )
        first = next(iter(opts.values()))
        if first.get("causal"):
            lines += [
                "",
                f"### Causal token tests ({first['causal']['reviews']} test reviews per run)",
                "",
                "Drop of P(predicted class) and flip rate when one content token is removed; most-attended = "
                "largest pooled last-block attention (mean over heads and real query positions).",
                "",
                "| optimizer | drop: attention | drop: random | drop: grad x input | flips: attention | "
                "flips: random | flips: grad x input | attention minus random (drop) | runs |",
                "|---|---|---|---|---|---|---|---|---|",
            ]
            for k, o in opts.items():
                c = o["causal"]
                lines.append(
                    f"| {o['label']} | "
                    + " | ".join(
                        interval_text(c[r]["drop"]) for r in ("attention", "random", "gradxinput")
                    )
                    + " | "
                    + " | ".join(
                        interval_text(c[r]["flip"]) for r in ("attention", "random", "gradxinput")
                    )
                    + f" | {interval_text(c['attention_minus_random']['drop'])} | {keys_text(o['runs'])} |"
                )
            lines.append("\n(drops and flip rates in %.)")
        if first.get("weights"):
            names = [n for n in first["weights"]["count_ge_threshold"] if n != "all"]
            lines += [
                "",
                "### Attention entries with |w| >= 0.06 (mean count over seeds)",
                "",
                "| matrix | " + " | ".join(o["label"] for o in opts.values()) + " |",
                "|---|" + "---|" * len(opts),
            ]
            for n in names + ["all"]:
                lines.append(
                    f"| {n} | "
                    + " | ".join(
                        interval_text(o["weights"]["count_ge_threshold"][n], 1.0, 1)
                        for o in opts.values()
                    )
                    + " |"
                )
        if first.get("prune"):
            lines += [
                "",
                "### Magnitude pruning (accuracy %, stored size, forward time over the timing set)",
                "",
                "| optimizer | set | sparsity | zeros reached | acc pruned | acc fine-tuned | set CSR bytes "
                "(dense) | model stored bytes | forward s, CSR (dense model) |",
                "|---|---|---|---|---|---|---|---|---|",
            ]
            for k, o in opts.items():
                for name, rows in o["prune"]["sets"].items():
                    for r in rows:
                        lines.append(
                            f"| {o['label']} | {name} | {100 * r['sparsity']:.0f}% | {100 * r['zero_fraction']:.2f}% | "
                            f"{interval_text(r['acc_pruned'])} | {interval_text(r['acc_finetuned'])} | {r['set_csr_bytes']} "
                            f"({r['set_dense_bytes']}) | {r['model_stored_bytes']} ({r['model_dense_bytes']}) | "
                            f"{r['sparse_seconds']:.3f} ({o['prune']['dense_seconds']:.3f}) |"
                        )
        lines.append("")
    lines += ["## Figures", ""]
    for name, keys in summary["figures"].items():
        lines += [f"![{name}]({name})", "", f"{name}: from runs {keys_text(keys)}.", ""]
    return "\n".join(lines) + "\n"
