"""The markdown of a study report (docs/theory.md section 6.5): accuracy, causal, weight and pruning
tables, each naming its runs; the figures with the runs they come from."""

from __future__ import annotations

__all__ = ["markdown"]


def _iv(d, scale=100.0, digits=2) -> str:
    if d is None or d.get("mean") is None:
        return "n/a"
    m = f"{d['mean'] * scale:.{digits}f}"
    if d.get("low") is None:
        return f"{m} (n={d['n']}, no interval)"
    return f"{m} [{d['low'] * scale:.{digits}f}, {d['high'] * scale:.{digits}f}]"


def _keys(keys) -> str:
    return ", ".join(k[:12] for k in keys)


def markdown(study: str, summary: dict) -> str:
    lines = [f"# mdcert study {study}", "",
             "Intervals: 95% Student-t intervals over seeds (the seed is the unit of replication); differences "
             "to GD (p = 2) are paired by seed (same initialization, batch order and dropout). Run keys name "
             "the records in runs/KEY.json (first 12 hex digits shown).", ""]
    lines += ["## Headline", ""] + [f"- {h}" for h in summary["headline"]] + [""]
    for s in summary["sizes"]:
        opts = s["optimizers"]
        cfg = s["config"]
        lines += [f"## Size {s['size']} (blocks = heads = {s['size']})", "",
                  f"Model {cfg['model']}; {cfg['train']} training, {cfg['val']} validation, {cfg['test']} test "
                  f"items; {cfg['epochs']} epochs, batch {cfg['batch']}.", "",
                  "| optimizer | step size (grid) | test accuracy % | minus GD, points | verdict | |w|>=0.06 share of attention entries % | diverged seeds | s/epoch | runs |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for k, o in opts.items():
            grid = ", ".join(f"{t['lr']:g}" + ("*" if t["lr"] == o["lr"] else "") for t in o["tuning"]) or "fixed by --lr"
            edge = " (grid edge)" if o["lr_at_grid_edge"] else ""
            frac = _iv(o["weights"].get("fraction_ge_threshold")) if o.get("weights") else "n/a"
            lines.append(f"| {o['label']} | {o['lr']:g}{edge} ({grid}) | {_iv(o['test_acc'])} | "
                         f"{_iv(o.get('minus_gd')) if 'minus_gd' in o else '-'} | {o.get('verdict_vs_gd', '-')} | {frac} | "
                         f"{o['diverged_seeds']} | {o['epoch_seconds']:.1f} | {_keys(o['runs'])} |")
        lines += ["", "Tuning (validation accuracy after the last epoch, seed 0; * = kept):", ""]
        for k, o in opts.items():
            if not o["tuning"]:
                lines.append(f"- {o['label']}: not tuned (--lr {o['lr']:g})")
                continue
            lines.append(f"- {o['label']}: " + "; ".join(
                f"lr {t['lr']:g}: " + ("diverged" if t["diverged"] else f"{100 * (t['val_acc'] or 0):.2f}%")
                + f" ({t['key'][:12]})" for t in o["tuning"]))
        first = next(iter(opts.values()))
        if first.get("causal"):
            lines += ["", f"### Causal token tests ({first['causal']['reviews']} test reviews per run)", "",
                      "Drop of P(predicted class) and flip rate when one content token is removed; most-attended = "
                      "largest pooled last-block attention (mean over heads and real query positions).", "",
                      "| optimizer | drop: attention | drop: random | drop: grad x input | flips: attention | "
                      "flips: random | flips: grad x input | attention minus random (drop) | runs |",
                      "|---|---|---|---|---|---|---|---|---|"]
            for k, o in opts.items():
                c = o["causal"]
                lines.append(f"| {o['label']} | " + " | ".join(_iv(c[r]["drop"]) for r in ("attention", "random", "gradxinput"))
                             + " | " + " | ".join(_iv(c[r]["flip"]) for r in ("attention", "random", "gradxinput"))
                             + f" | {_iv(c['attention_minus_random']['drop'])} | {_keys(o['runs'])} |")
            lines.append("\n(drops and flip rates in %.)")
        if first.get("weights"):
            names = [n for n in first["weights"]["count_ge_threshold"] if n != "all"]
            lines += ["", "### Attention entries with |w| >= 0.06 (mean count over seeds)", "",
                      "| matrix | " + " | ".join(o["label"] for o in opts.values()) + " |",
                      "|---|" + "---|" * len(opts)]
            for n in names + ["all"]:
                lines.append(f"| {n} | " + " | ".join(_iv(o["weights"]["count_ge_threshold"][n], 1.0, 1) for o in opts.values()) + " |")
        if first.get("prune"):
            lines += ["", "### Magnitude pruning (accuracy %, stored size, forward time over the timing set)", "",
                      "| optimizer | set | sparsity | zeros reached | acc pruned | acc fine-tuned | set CSR bytes "
                      "(dense) | model stored bytes | forward s, CSR (dense model) |",
                      "|---|---|---|---|---|---|---|---|---|"]
            for k, o in opts.items():
                for name, rows in o["prune"]["sets"].items():
                    for r in rows:
                        lines.append(f"| {o['label']} | {name} | {100 * r['sparsity']:.0f}% | {100 * r['zero_fraction']:.2f}% | "
                                     f"{_iv(r['acc_pruned'])} | {_iv(r['acc_finetuned'])} | {r['set_csr_bytes']} "
                                     f"({r['set_dense_bytes']}) | {r['model_stored_bytes']} ({r['model_dense_bytes']}) | "
                                     f"{r['sparse_seconds']:.3f} ({o['prune']['dense_seconds']:.3f}) |")
        lines.append("")
    lines += ["## Figures", ""]
    for name, keys in summary["figures"].items():
        lines += [f"![{name}]({name})", "", f"{name}: from runs {_keys(keys)}.", ""]
    return "\n".join(lines) + "\n"
