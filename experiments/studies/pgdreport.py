"""The report of ``mdcert study pgd``: summary.json, report.md and figures (docs/theory.md section 7.4).

One entry of ``sizes`` per task run (digits first, then text), each with its own chance baseline,
data and per-p results; report.md has one section per task.

Accuracies, sparsities and trained margins are means over the final seeds with Student-t 95%
intervals (`experiments.studies.stats`); differences to GD (p = 2) are paired by seed. A certified
margin is reported per seed as its exact enclosure (outward-rounded floats), or the Gordan verdict,
or "no verified result" with the certifier's reason. Step times are medians of interleaved wall
times (the machine's load at the time is in every record and in the report).
"""

from __future__ import annotations

import math
import os

import numpy as np

from experiments.studies.runner import dumps
from experiments.studies.pgdfigures import write_figures
from experiments.studies.stats import paired_difference, t_interval

__all__ = ["summarize", "write_report", "markdown", "write_figures", "outward_interval"]


def _get(rec: dict, *path):
    v = rec["result"]
    for k in path:
        if not isinstance(v, dict) or k not in v:
            return None
        v = v[k]
    return None if v is None or (isinstance(v, float) and not math.isfinite(v)) else v


def summarize(tc: dict, res: dict, chance: dict, data: dict | None = None) -> dict:
    """One task's entry: per p, step size and tuning, test accuracy, sparsity, margins, timing."""
    from experiments.studies.report import verdict

    opts: dict = {}
    gd = [_get(r, "test_acc") for r in res["final"].get("p2", [])]
    for k, recs in res["final"].items():
        acc = [_get(r, "test_acc") for r in recs]
        o: dict = {
            "label": "GD (p=2)" if k == "p2" else f"p={k[1:]}",
            "p": k[1:],
            "lr": res["lr"][k],
            "lr_at_grid_edge": res["edge"][k],
            "runs": [r["key"] for r in recs],
            "tuning": [
                {
                    "lr": r["config"]["lr"],
                    "val_acc": _get(r, "val_acc"),
                    "diverged": r["result"]["diverged"],
                    "key": r["key"],
                }
                for r in res["tuning"][k]
            ],
            "test_acc": t_interval(acc).as_dict(),
            "test_acc_per_seed": acc,
            "diverged_seeds": sum(1 for r in recs if r["result"]["diverged"]),
            "above_chance": {
                "interval": bool(
                    t_interval(acc).low is not None and t_interval(acc).low > chance["test_acc"]
                ),
                "every_seed": bool(
                    acc and all(a is not None and a > chance["test_acc"] for a in acc)
                ),
            },
        }
        if gd and k != "p2":
            diff = paired_difference(
                [a if a is not None else math.nan for a in acc],
                [a if a is not None else math.nan for a in gd],
            )
            o["minus_gd"], o["verdict_vs_gd"] = diff.as_dict(), verdict(diff)
        ok = [r for r in recs if _get(r, "weights")]
        if ok:
            w0 = ok[0]["result"]["weights"]
            o["sparsity"] = {
                r: t_interval([_get(x, "weights", "below_relative", r) for x in ok]).as_dict()
                for r in w0["below_relative"]
            }
            o["l1_mass"] = {
                q: t_interval(
                    [_get(x, "weights", "l1_mass_fraction_of_entries", q) for x in ok]
                ).as_dict()
                for q in w0["l1_mass_fraction_of_entries"]
            }
            o["histogram_relative"] = np.mean(
                [x["result"]["weights"]["histogram_relative"] for x in ok], axis=0
            ).tolist()
        margins = [
            dict(_get(r, "margin"), seed=r["config"]["seed"], key=r["key"])
            for r in recs
            if _get(r, "margin")
        ]
        o["margin"] = margins
        o["trained_margin"] = t_interval([m["trained_margin"] for m in margins]).as_dict()
        t = res["timing"][k]
        o["timing"] = {**t["result"], "load": t.get("load"), "key": t["key"]}
        opts[k] = o
    return {
        "task": tc.get("name", "digits"),
        "size": tc["width"],
        "epochs": tc["epochs"],
        "batch": tc["batch"],
        "chance": chance,
        "data": data or {},
        "optimizers": opts,
    }


def outward_interval(lo: float, hi: float, digits: int = 6) -> str:
    """``[lo, hi]`` printed to ``digits`` significant digits, rounded outward (the lower end down,
    the upper up), so the printed interval still encloses the certified one."""
    from decimal import ROUND_CEILING, ROUND_FLOOR, Context, Decimal

    def cut(x: float, rounding: str) -> str:
        return format(Context(prec=digits, rounding=rounding).plus(Decimal(x)), "g")

    return f"[{cut(lo, ROUND_FLOOR)}, {cut(hi, ROUND_CEILING)}]"


def _cert_text(m: dict) -> str:
    if m["status"] == "optimal" and "margin_lower" in m:
        return (
            f"OPT in {outward_interval(m['opt_lower'], m['opt_upper'])}, margin 1/OPT in "
            f"{outward_interval(m['margin_lower'], m['margin_upper'])}"
        )
    if m["status"] == "infeasible":
        return "not separable (exact Gordan certificate)"
    return f"{m['status']}: {m.get('reason') or m.get('feasibility') or ''}".strip()


def _above(a: dict) -> str:
    return ", ".join(k.replace("_", " ") for k in ("interval", "every_seed") if a[k]) or "not shown"


def _model_text(e: dict) -> str:
    w = e["size"]
    if e["task"] == "digits":
        return f"DigitsMLP width {w} (64 -> {w} -> {max(w // 2, 1)} ReLU -> 10) on scikit-learn's digits"
    d = e["data"]
    cache = d.get("cache", {})
    return (
        f"TextMLP width {w} (384 -> {w} ReLU -> 2) on MiniLM sentence embeddings of "
        f"{d.get('snippets')} Rotten Tomatoes snippets (fresh {d.get('fresh')}; train {d.get('train')}, "
        f"validation {d.get('val')}, test {d.get('test')}); embeddings: {cache.get('reused', 0)} of "
        f"{cache.get('chunks', 0)} cache chunks reused, loading took {d.get('load_seconds', 0):.1f} s "
        f"wall, {d.get('load_cpu_seconds', 0):.1f} s CPU"
    )


def markdown(summary: dict) -> str:
    """report.md: the setting, then one section per task."""
    cfg = summary["config"]
    L = [
        "# mdcert study pgd",
        "",
        f"Tasks: {', '.join(e['task'] for e in summary['sizes'])}; seeds {cfg['seed_start']}.."
        f"{cfg['seed_start'] + cfg['seeds'] - 1}; "
        f"{'--quick: step sizes not tuned (one per p)' if cfg['quick'] else 'step size tuned per p and task on validation (seed 0)'}. "
        f"Machine: {os.cpu_count()} CPUs, load average {summary['load'][0]:.1f} / {summary['load'][1]:.1f} at the report; "
        "each run's load is in its record.",
        "",
    ]
    for e in summary["sizes"]:
        L += _task_markdown(e, cfg)
    L += ["", "## Figures", ""] + [
        f"- {f}: runs {', '.join(k[:8] for k in keys)}" for f, keys in summary["figures"].items()
    ]
    return "\n".join(L) + "\n"


def _task_markdown(e: dict, cfg: dict) -> list[str]:
    ch, s, t = e["chance"], e["optimizers"], e["task"]
    L = [
        f"## Task {t}",
        "",
        f"{_model_text(e)}; {e['epochs']} epochs, batch {e['batch']}.",
        "",
        f"Chance baseline ({ch['rule']}, class {ch['class']}): test accuracy {100 * ch['test_acc']:.2f}%.",
        "",
        f"### {t}: test accuracy (%, mean and 95% t-interval over seeds)",
        "",
        "Above chance: 'interval' when the interval's lower end is above the baseline (with 2 seeds the "
        "t-interval is wide), 'every seed' when each seed's accuracy is.",
        "",
        "| p | step size | test acc | above chance | minus GD (paired) | vs GD | diverged seeds |",
        "|---|---|---|---|---|---|---|",
    ]
    from experiments.studies.stats import Interval

    def iv(d, scale=100.0, digits=2):
        return (
            Interval(
                **{k: d[k] for k in ("mean", "low", "high", "n", "sd", "level", "method")}
            ).text(scale, digits)
            if d["mean"] is not None
            else "n/a"
        )

    for o in s.values():
        edge = " (grid edge)" if o["lr_at_grid_edge"] else ""
        L.append(
            f"| {o['p']} | {o['lr']:g}{edge} | {iv(o['test_acc'])} | {_above(o['above_chance'])} | "
            f"{iv(o['minus_gd']) if 'minus_gd' in o else '-'} | {o.get('verdict_vs_gd', '-')} | {o['diverged_seeds']} |"
        )
    L += [
        "",
        f"### {t}: weights against p (all weight matrices, biases excluded; float measurements)",
        "",
        "Fraction of entries with |w| < r max|w| (max per matrix), and the fraction of entries (largest first) "
        "carrying 50% / 90% of the l1 mass (smaller = more concentrated). Histograms: "
        f"{'' if t == 'digits' else t + '-'}weights.png.",
        "",
        "| p | r=0.01 | r=0.05 | r=0.1 | l1 50% | l1 90% |",
        "|---|---|---|---|---|---|",
    ]
    for o in s.values():
        if "sparsity" in o:
            L.append(
                f"| {o['p']} | "
                + " | ".join(iv(o["sparsity"][r], 100, 1) for r in ("0.01", "0.05", "0.1"))
                + " | "
                + " | ".join(iv(o["l1_mass"][q], 100, 1) for q in ("50", "90"))
                + " |"
            )
    L += [
        "",
        f"### {t}: certified l_p margin of the last-layer features ({cfg['cert_points']} training points, a fixed "
        "subsample (numpy seed 0) of the training split; features plus a constant 1 for the head's bias; "
        "Crammer-Singer, at the optimizer's p; docs/theory.md section 7)",
        "",
        "The trained head's own normalized margin min (W_y - W_k)^T [h, 1] / ||[W, b]||_p is a float measurement "
        "on the same points; it can only be below the certified max-margin.",
        "",
        "| p | seed | certified | trained head's margin | seconds |",
        "|---|---|---|---|---|",
    ]
    for o in s.values():
        for m in o["margin"]:
            L.append(
                f"| {o['p']} | {m['seed']} | {_cert_text(m)} | {m['trained_margin']:.4g} | {m['seconds']:.1f} |"
            )
    L += [
        "",
        f"### {t}: time per training step, p-GD against torch.optim.SGD (wall ms, median [quartiles] of interleaved "
        "steps; same model, same batch)",
        "",
        "| p | repeats | p-GD step | SGD step | ratio | p-GD update only | SGD update only | ratio | load |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for o in s.values():
        tm = o["timing"]

        def ms(d):
            return f"{1e3 * d['median']:.3f} [{1e3 * d['q1']:.3f}, {1e3 * d['q3']:.3f}]"

        L.append(
            f"| {o['p']} | {tm['repeats']} | {ms(tm['pgd_step'])} | {ms(tm['sgd_step'])} | {tm['ratio_step']:.2f} | "
            f"{ms(tm['pgd_update'])} | {ms(tm['sgd_update'])} | {tm['ratio_update']:.2f} | {tm['load'] or 0:.1f} |"
        )
    return L + [""]


def write_report(ctx, cfg: dict, res: dict, chance: dict, data: dict) -> dict:
    """Write summary.json, the figures and report.md into ``ctx.root``; returns the summary.
    ``res``, ``chance``, ``data``: per task name, in the order of ``cfg["tasks"]``."""
    sizes = [
        summarize(tc, res[tc["name"]], chance[tc["name"]], data[tc["name"]]) for tc in cfg["tasks"]
    ]
    summary = {
        "kind": "pgd",
        "config": cfg,
        "tasks": [e["task"] for e in sizes],
        "chance": sizes[0]["chance"],
        "sizes": sizes,
        "load": list(os.getloadavg()),
        "cpus": os.cpu_count(),
        "trained": ctx.trained,
        "reused": ctx.reused,
        "seconds": ctx.seconds,
        "cpu_seconds": ctx.cpu_seconds,
    }
    summary["figures"] = write_figures(ctx.root, summary)
    summary["headline"] = [
        f"{e['task']} {v['label']}: test accuracy {100 * (v['test_acc']['mean'] or math.nan):.2f}% "
        f"(chance {100 * e['chance']['test_acc']:.2f}%), step time {v['timing']['ratio_step']:.2f}x SGD"
        for e in sizes
        for v in e["optimizers"].values()
    ]
    ctx.write("summary.json", dumps(summary))
    ctx.write("report.md", markdown(summary))
    return summary
