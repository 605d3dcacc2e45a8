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
from experiments.studies.report_text import CHANCE_MARGIN, headline_lines, markdown

__all__ = ["summarize", "write_report", "verdict", "markdown", "majority_baseline", "CHANCE_MARGIN"]

RATE, COUNT, DIFF = (0.0, 1.0), (0.0, math.inf), (-1.0, 1.0)


def _vals(recs, get):
    out = []
    for r in recs:
        try:
            v = get(r["result"])
        except (KeyError, TypeError, IndexError):
            v = None
        out.append(
            None if v is None or (isinstance(v, float) and not math.isfinite(v)) else float(v)
        )
    return out


def verdict(iv) -> str:
    """``beat`` / ``worse`` / ``no difference shown`` / ``no interval`` from a paired-difference interval."""
    if iv.low is None:
        return "no interval (fewer than 2 seeds)"
    return "beat" if iv.low > 0 else ("worse" if iv.high < 0 else "no difference shown")


def majority_baseline(setup) -> dict:
    """Accuracy of always predicting the training split's most frequent label (ties: the smaller label)."""
    labels = np.asarray(
        setup.task.labels.cpu().numpy() if hasattr(setup.task.labels, "cpu") else setup.task.labels
    )
    counts = np.bincount(labels[np.asarray(setup.train)])
    c = int(np.argmax(counts))
    share = lambda idx: float(np.mean(labels[np.asarray(idx)] == c)) if len(idx) else None  # noqa: E731
    test = labels[np.asarray(setup.test)]
    return {
        "rule": "always predict the training split's majority class",
        "class": c,
        "train_share": float(counts[c] / counts.sum()),
        "test_acc": share(setup.test),
        "val_acc": share(setup.val),
        "best_constant_test_acc": float(np.bincount(test).max() / test.size) if test.size else None,
        "margin": CHANCE_MARGIN,
    }


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
        o = {
            "label": spec.label,
            "lr": res["lr"][spec.key],
            "lr_at_grid_edge": res["edge"][spec.key],
            "runs": [r["key"] for r in recs],
            "test_acc": t_interval(acc, support=RATE).as_dict(),
            "test_acc_per_seed": acc,
            "at_baseline": all(a is None or a <= _chance(base) + CHANCE_MARGIN for a in acc),
            "diverged_seeds": sum(1 for r in recs if r["result"].get("diverged")),
            "tuning": [
                {
                    "lr": r["config"]["lr"],
                    "val_acc": r["result"]["val_acc"],
                    "diverged": r["result"]["diverged"],
                    "key": r["key"],
                }
                for r in res["tuning"][spec.key]
            ],
        }
        if gd is not None and spec.key != "p2":
            diff = paired_difference(acc, _vals(gd, lambda r: r["test_acc"]), support=DIFF)
            o["minus_gd"] = diff.as_dict()
            o["verdict_vs_gd"] = verdict(diff)
        curves = [r["result"]["curves"] for r in recs]
        o["curves"] = {k: _mean_curve([c[k] for c in curves]) for k in ("train_loss", "val_acc")}
        o["epoch_seconds"] = float(
            np.median([s for c in curves for s in c["epoch_seconds"]] or [math.nan])
        )
        o["weights"] = _weights(recs)
        if setup.causal:
            o["causal"] = _causal(recs)
        if setup.sparsities:
            o["prune"] = _prune(recs, setup)
        opts[spec.key] = o
    return {
        "size": setup.size,
        "config": setup.config,
        "optimizers": opts,
        "baseline": base,
        "all_at_baseline": all(o["at_baseline"] for o in opts.values()),
    }


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
    counts = {
        n: t_interval(
            [r["result"]["weights"]["threshold"][n]["count"] for r in ok], support=COUNT
        ).as_dict()
        for n in names
    }
    frac = t_interval(
        [r["result"]["weights"]["threshold"]["all"]["fraction"] for r in ok], support=RATE
    ).as_dict()
    hist = np.sum([r["result"]["weights"]["histogram"]["counts"] for r in ok], axis=0).tolist()
    hall = np.sum([r["result"]["weights"]["histogram_all"]["counts"] for r in ok], axis=0).tolist()
    return {
        "count_ge_threshold": counts,
        "fraction_ge_threshold": frac,
        "histogram": hist,
        "histogram_all": hall,
        "edges": ok[0]["result"]["weights"]["histogram"]["edges"],
        "mean_abs": t_interval(
            [r["result"]["weights"]["histogram"]["mean_abs"] for r in ok], support=COUNT
        ).as_dict(),
    }


def _causal(recs) -> dict:
    ok = [r for r in recs if "causal" in r["result"]]
    if not ok:
        return {}
    rules = list(ok[0]["result"]["causal"]["rules"])
    get = lambda rule, m: [r["result"]["causal"]["rules"][rule][m] for r in ok]  # noqa: E731
    out = {
        rule: {
            "drop": t_interval(get(rule, "mean_drop"), support=DIFF).as_dict(),
            "flip": t_interval(get(rule, "flip_rate"), support=RATE).as_dict(),
        }
        for rule in rules
    }
    out["attention_minus_random"] = {
        m: paired_difference(get("attention", k), get("random", k), support=sup).as_dict()
        for m, k, sup in (("drop", "mean_drop", (-2.0, 2.0)), ("flip", "flip_rate", DIFF))
    }
    out["reviews"] = ok[0]["result"]["causal"]["reviews"]
    out["attention_equals_gradxinput"] = float(
        np.mean([r["result"]["causal"]["attention_equals_gradxinput"] for r in ok])
    )
    return out


def _prune(recs, setup) -> dict:
    ok = [r for r in recs if "prune" in r["result"]]
    if not ok:
        return {}
    out = {
        "dense_seconds": float(np.median([r["result"]["prune"]["dense_seconds"] for r in ok])),
        "sets": {},
    }
    for name in ok[0]["result"]["prune"]["sets"]:
        rows = []
        for i, s in enumerate(setup.sparsities):
            get = lambda k: [r["result"]["prune"]["sets"][name][i].get(k) for r in ok]  # noqa: E731
            rows.append(
                {
                    "sparsity": s,
                    "acc_pruned": t_interval(_num(get("acc_pruned")), support=RATE).as_dict(),
                    "acc_finetuned": t_interval(_num(get("acc_finetuned")), support=RATE).as_dict(),
                    "zero_fraction": float(np.mean(get("zero_fraction"))),
                    "zero_fraction_after_finetune": float(
                        np.mean(get("zero_fraction_after_finetune"))
                    ),
                    "set_dense_bytes": int(np.mean(get("set_dense_bytes"))),
                    "set_csr_bytes": int(np.mean(get("set_csr_bytes"))),
                    "model_dense_bytes": int(np.mean(get("model_dense_bytes"))),
                    "model_stored_bytes": int(np.mean(get("model_stored_bytes"))),
                    "sparse_seconds": float(np.median(get("sparse_seconds"))),
                }
            )
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
    summary = {
        "study": study,
        "sizes": sizes,
        "smoke_run": smoke,
        "interval": "95% Student-t interval over seeds, clipped to the quantity's range; differences paired "
        "by seed",
        "runs_trained_now": ctx.trained,
        "runs_reused": ctx.reused,
        "timings": {
            "wall_s": time.perf_counter() - ctx.t_start,
            "runs_wall_summed_s": ctx.seconds,
            "runs_cpu_summed_s": ctx.cpu_seconds,
            "workers": ctx.workers,
            "note": "wall_s: this invocation from the study directory's opening to the report "
            "(figures excluded); runs_*_summed_s: each run's own time in the process that "
            "ran it, summed over runs (exceeds wall_s with several workers)",
        },
    }
    summary["figures"] = write_figures(ctx.root, study, sizes)
    summary["headline"] = headline_lines(sizes, smoke=smoke)
    ctx.write("summary.json", dumps(summary))
    ctx.write("report.md", markdown(study, summary))
    return summary
