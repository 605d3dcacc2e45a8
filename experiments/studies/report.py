"""The report of a study: ``summary.json``, figures and ``report.md`` from its run records (docs/theory.md section 6.5).

Every number is an aggregate over the final runs (one per seed) with a Student-t 95% interval over
seeds (`experiments.studies.stats`), clipped to the quantity's range (counts >= 0, accuracies and
rates in [0, 1]); differences to GD (p = 2) are paired by seed. Every figure and table names the runs
(record keys) it comes from. Whether p = 1.1 beat GD is stated from the interval of the paired
difference: "beat" only when it lies above 0, "worse" when below, else "no difference shown".

Chance: the majority-class baseline (always predict the training split's most frequent label, scored
on the test and validation splits) is in summary.json, report.md and every accuracy figure. A final
run "sits on the baseline" when its test accuracy is at most `CHANCE_MARGIN` above it or above the
best constant prediction on the test split (a model that learned nothing may settle on the test
split's majority class instead); when every run of every optimizer does, the headline says so in a
warning line: such a study measured no learning.
"""

from __future__ import annotations

import math

import numpy as np

from experiments.studies.runner import dumps
from experiments.studies.stats import paired_difference, t_interval

__all__ = ["summarize", "write_report", "verdict", "markdown", "majority_baseline", "CHANCE_MARGIN"]

#: a run within this much test accuracy (1 point) of the majority-class baseline sits on it
CHANCE_MARGIN = 0.01
RATE, COUNT, DIFF = (0.0, 1.0), (0.0, math.inf), (-1.0, 1.0)


def _vals(recs, get):
    out = []
    for r in recs:
        try:
            v = get(r["result"])
        except (KeyError, TypeError, IndexError):
            v = None
        out.append(None if v is None or (isinstance(v, float) and not math.isfinite(v)) else float(v))
    return out


def verdict(iv) -> str:
    """``beat`` / ``worse`` / ``no difference shown`` / ``no interval`` from a paired-difference interval."""
    if iv.low is None:
        return "no interval (fewer than 2 seeds)"
    return "beat" if iv.low > 0 else ("worse" if iv.high < 0 else "no difference shown")


def majority_baseline(setup) -> dict:
    """Accuracy of always predicting the training split's most frequent label (ties: the smaller label)."""
    labels = np.asarray(setup.task.labels.cpu().numpy() if hasattr(setup.task.labels, "cpu") else setup.task.labels)
    counts = np.bincount(labels[np.asarray(setup.train)])
    c = int(np.argmax(counts))
    share = lambda idx: float(np.mean(labels[np.asarray(idx)] == c)) if len(idx) else None  # noqa: E731
    test = labels[np.asarray(setup.test)]
    return {"rule": "always predict the training split's majority class", "class": c,
            "train_share": float(counts[c] / counts.sum()), "test_acc": share(setup.test), "val_acc": share(setup.val),
            "best_constant_test_acc": float(np.bincount(test).max() / test.size) if test.size else None,
            "margin": CHANCE_MARGIN}


def _chance(base: dict) -> float:
    """What a model that learned nothing scores on the test split: the better of the baseline and the
    best constant prediction (a model may settle on the test split's majority class instead)."""
    return max(x for x in (base["test_acc"], base["best_constant_test_acc"], 0.0) if x is not None)


def summarize(setup, res: dict) -> dict:
    """The summary of one size: per optimizer accuracy, tuning, causal, weights and pruning aggregates,
    and the majority-class baseline (``at_baseline`` per optimizer and for the whole size)."""
    opts: dict = {}
    base = majority_baseline(setup)
    gd = res["final"].get("p2")
    for spec in setup.specs:
        recs = res["final"][spec.key]
        acc = _vals(recs, lambda r: r["test_acc"])
        o = {"label": spec.label, "lr": res["lr"][spec.key], "lr_at_grid_edge": res["edge"][spec.key],
             "runs": [r["key"] for r in recs], "test_acc": t_interval(acc, support=RATE).as_dict(),
             "test_acc_per_seed": acc,
             "at_baseline": all(a is None or a <= _chance(base) + CHANCE_MARGIN for a in acc),
             "diverged_seeds": sum(1 for r in recs if r["result"].get("diverged")),
             "tuning": [{"lr": r["config"]["lr"], "val_acc": r["result"]["val_acc"], "diverged": r["result"]["diverged"],
                         "key": r["key"]} for r in res["tuning"][spec.key]]}
        if gd is not None and spec.key != "p2":
            diff = paired_difference(acc, _vals(gd, lambda r: r["test_acc"]), support=DIFF)
            o["minus_gd"] = diff.as_dict()
            o["verdict_vs_gd"] = verdict(diff)
        curves = [r["result"]["curves"] for r in recs]
        o["curves"] = {k: _mean_curve([c[k] for c in curves]) for k in ("train_loss", "val_acc")}
        o["epoch_seconds"] = float(np.median([s for c in curves for s in c["epoch_seconds"]] or [math.nan]))
        o["weights"] = _weights(recs)
        if setup.causal:
            o["causal"] = _causal(recs)
        if setup.sparsities:
            o["prune"] = _prune(recs, setup)
        opts[spec.key] = o
    return {"size": setup.size, "config": setup.config, "optimizers": opts, "baseline": base,
            "all_at_baseline": all(o["at_baseline"] for o in opts.values())}


def _mean_curve(curves):
    n = max((len(c) for c in curves), default=0)
    out = []
    for i in range(n):
        xs = [c[i] for c in curves if i < len(c) and c[i] is not None]
        out.append(float(np.mean(xs)) if xs else None)
    return out


def _weights(recs) -> dict:
    ok = [r for r in recs if "weights" in r["result"]]
    if not ok:
        return {}
    names = list(ok[0]["result"]["weights"]["threshold"])
    counts = {n: t_interval([r["result"]["weights"]["threshold"][n]["count"] for r in ok], support=COUNT).as_dict()
              for n in names}
    frac = t_interval([r["result"]["weights"]["threshold"]["all"]["fraction"] for r in ok], support=RATE).as_dict()
    hist = np.sum([r["result"]["weights"]["histogram"]["counts"] for r in ok], axis=0).tolist()
    hall = np.sum([r["result"]["weights"]["histogram_all"]["counts"] for r in ok], axis=0).tolist()
    return {"count_ge_threshold": counts, "fraction_ge_threshold": frac, "histogram": hist, "histogram_all": hall,
            "edges": ok[0]["result"]["weights"]["histogram"]["edges"],
            "mean_abs": t_interval([r["result"]["weights"]["histogram"]["mean_abs"] for r in ok], support=COUNT).as_dict()}


def _causal(recs) -> dict:
    ok = [r for r in recs if "causal" in r["result"]]
    if not ok:
        return {}
    rules = list(ok[0]["result"]["causal"]["rules"])
    get = lambda rule, m: [r["result"]["causal"]["rules"][rule][m] for r in ok]  # noqa: E731
    out = {rule: {"drop": t_interval(get(rule, "mean_drop"), support=DIFF).as_dict(),
                  "flip": t_interval(get(rule, "flip_rate"), support=RATE).as_dict()} for rule in rules}
    out["attention_minus_random"] = {m: paired_difference(get("attention", k), get("random", k), support=sup).as_dict()
                                     for m, k, sup in (("drop", "mean_drop", (-2.0, 2.0)), ("flip", "flip_rate", DIFF))}
    out["reviews"] = ok[0]["result"]["causal"]["reviews"]
    out["attention_equals_gradxinput"] = float(np.mean([r["result"]["causal"]["attention_equals_gradxinput"] for r in ok]))
    return out


def _prune(recs, setup) -> dict:
    ok = [r for r in recs if "prune" in r["result"]]
    if not ok:
        return {}
    out = {"dense_seconds": float(np.median([r["result"]["prune"]["dense_seconds"] for r in ok])), "sets": {}}
    for name in ok[0]["result"]["prune"]["sets"]:
        rows = []
        for i, s in enumerate(setup.sparsities):
            get = lambda k: [r["result"]["prune"]["sets"][name][i].get(k) for r in ok]  # noqa: E731
            rows.append({"sparsity": s, "acc_pruned": t_interval(_num(get("acc_pruned")), support=RATE).as_dict(),
                         "acc_finetuned": t_interval(_num(get("acc_finetuned")), support=RATE).as_dict(),
                         "zero_fraction": float(np.mean(get("zero_fraction"))),
                         "zero_fraction_after_finetune": float(np.mean(get("zero_fraction_after_finetune"))),
                         "set_dense_bytes": int(np.mean(get("set_dense_bytes"))),
                         "set_csr_bytes": int(np.mean(get("set_csr_bytes"))),
                         "model_dense_bytes": int(np.mean(get("model_dense_bytes"))),
                         "model_stored_bytes": int(np.mean(get("model_stored_bytes"))),
                         "sparse_seconds": float(np.median(get("sparse_seconds")))})
        out["sets"][name] = rows
    return out


def _num(xs):
    return [x for x in xs if x is not None and math.isfinite(x)]


def write_report(ctx, study: str, setups, results: dict) -> dict:
    """Write summary.json, the figures and report.md into ``ctx.root``; returns the summary."""
    from experiments.studies.plots import write_figures

    import time

    sizes = [summarize(s, results[s.size]) for s in setups]
    smoke = bool(getattr(ctx.config, "quick", False))
    summary = {"study": study, "sizes": sizes, "smoke_run": smoke,
               "interval": "95% Student-t interval over seeds, clipped to the quantity's range; differences paired "
                           "by seed",
               "runs_trained_now": ctx.trained, "runs_reused": ctx.reused,
               "timings": {"wall_s": time.perf_counter() - ctx.t_start, "runs_wall_summed_s": ctx.seconds,
                           "runs_cpu_summed_s": ctx.cpu_seconds, "workers": ctx.workers,
                           "note": "wall_s: this invocation from the study directory's opening to the report "
                                   "(figures excluded); runs_*_summed_s: each run's own time in the process that "
                                   "ran it, summed over runs (exceeds wall_s with several workers)"}}
    summary["figures"] = write_figures(ctx.root, study, sizes)
    summary["headline"] = _headline(sizes, smoke=smoke)
    ctx.write("summary.json", dumps(summary))
    ctx.write("report.md", markdown(study, summary))
    return summary


def _headline(sizes, *, smoke: bool = False) -> list[str]:
    lines = []
    if smoke:
        lines.append("--quick is a smoke run (a small model, a subset, few epochs): it tests the pipeline; its "
                     "accuracies and differences are not results about the optimizers")
    for s in sizes:
        b = s["baseline"]
        if s["all_at_baseline"]:
            lines.append(f"WARNING size {s['size']}: every run of every optimizer sits on the majority-class baseline "
                         f"(test accuracy {100 * b['test_acc']:.2f}%, always predicting label {b['class']}, within "
                         f"{100 * CHANCE_MARGIN:g} point): no learning was measured; train longer (--epochs) or on "
                         f"more data (--train-limit)")
        o = s["optimizers"]
        for key in ("p1.1",):
            if key in o and "minus_gd" in o[key]:
                from experiments.studies.stats import Interval

                iv = Interval(**{k: v for k, v in o[key]["minus_gd"].items()})
                lines.append(f"size {s['size']}: p=1.1 minus GD test accuracy {iv.text(100)} points "
                             f"({o[key]['minus_gd']['n']} paired seeds): {o[key]['verdict_vs_gd']}")
    return lines

def _iv(d, scale=100.0, digits=2) -> str:
    if d is None or d.get("mean") is None:
        return "n/a"
    m = f"{d['mean'] * scale:.{digits}f}"
    if d.get("low") is None:
        return f"{m} (n={d['n']}, no interval)"
    return f"{m} [{d['low'] * scale:.{digits}f}, {d['high'] * scale:.{digits}f}]"


def _pct(x) -> str:
    return "n/a" if x is None else f"{100 * x:.2f}%"


def _keys(keys) -> str:
    return ", ".join(k[:12] for k in keys)


def markdown(study: str, summary: dict) -> str:
    lines = [f"# mdcert study {study}", "",
             "Intervals: 95% Student-t intervals over seeds (the seed is the unit of replication), clipped to the "
             "quantity's range (counts >= 0, accuracies and rates in [0, 100]%); differences to GD (p = 2) are paired "
             "by seed (same initialization, batch order and dropout). Run keys name the records in runs/KEY.json "
             "(first 12 hex digits shown).", ""]
    t = summary.get("timings")
    if t:
        lines += [f"Time of this invocation: {t['wall_s']:.1f} s wall until this report (figures excluded); the runs' "
                  f"own times summed over {t['workers']} worker process(es): {t['runs_wall_summed_s']:.1f} s wall, "
                  f"{t['runs_cpu_summed_s']:.1f} s CPU ({summary['runs_trained_now']} run(s) trained now, "
                  f"{summary['runs_reused']} reused).", ""]
    lines += ["## Headline", ""] + [f"- {h}" for h in summary["headline"]] + [""]
    for s in summary["sizes"]:
        opts = s["optimizers"]
        cfg = s["config"]
        b = s["baseline"]
        lines += [f"## Size {s['size']} (blocks = heads = {s['size']})", "",
                  f"Model {cfg['model']}; {cfg['train']} training, {cfg['val']} validation, {cfg['test']} test "
                  f"items; {cfg['epochs']} epochs, batch {cfg['batch']}.", "",
                  f"Majority-class baseline (chance): always predicting label {b['class']} (the training split's "
                  f"majority, {100 * b['train_share']:.2f}% of it) scores {_pct(b['test_acc'])} on the test split and "
                  f"{_pct(b['val_acc'])} on the validation split. A run within {100 * b['margin']:g} point of it sits on "
                  f"the baseline.", ""]
        if s["all_at_baseline"]:
            lines += ["**Warning: every run of every optimizer sits on the majority-class baseline: this size measured "
                      "no learning, and its comparisons below say nothing about the optimizers.**", ""]
        lines += ["| optimizer | step size (grid) | test accuracy % | minus baseline, points | minus GD, points | verdict "
                  "| |w|>=0.06 share of attention entries % | diverged seeds | s/epoch | runs |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
        for k, o in opts.items():
            grid = ", ".join(f"{t['lr']:g}" + ("*" if t["lr"] == o["lr"] else "") for t in o["tuning"]) or "fixed by --lr"
            edge = " (grid edge)" if o["lr_at_grid_edge"] else ""
            frac = _iv(o["weights"].get("fraction_ge_threshold")) if o.get("weights") else "n/a"
            above = ("n/a" if o["test_acc"]["mean"] is None else
                     f"{100 * (o['test_acc']['mean'] - b['test_acc']):+.2f}" + (" (on it)" if o["at_baseline"] else ""))
            lines.append(f"| {o['label']} | {o['lr']:g}{edge} ({grid}) | {_iv(o['test_acc'])} | {above} | "
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
