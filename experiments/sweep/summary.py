"""The summary of a sweep: a markdown table of outcomes per swept setting and, for kinds with verdicts
(certify: docs/theory.md section 4; check: section 5), a PNG of verdict counts against the swept
parameters. Built by streaming the index (the latest line of each of the SPEC's keys)."""

from __future__ import annotations

import itertools
from collections import Counter
from pathlib import Path

from certify.io.atomic import atomic_file, write_text_atomic
from experiments.sweep.spec import SweepSpec
from experiments.sweep.store import FIGURE, SUMMARY, JobStatus, Store

__all__ = ["collect", "format_summary", "write_summary", "plot_verdicts", "FAILED"]

FAILED = "failed"
COLORS = {
    "optimal": "#2e7d32",
    "holds": "#2e7d32",
    "done": "#2e7d32",
    "infeasible": "#c62828",
    "fails": "#c62828",
    "no_verified_result": "#9e9e9e",
    "undecided": "#9e9e9e",
    FAILED: "#212121",
}
MAX_FAILED_LISTED = 20


def group_axes(spec: SweepSpec) -> list[str]:
    """The swept settings a summary row stands for: non-file axes with more than one value."""
    return [a.name for a in spec.axes if not a.is_file and len(a.values) > 1]


def collect(store: Store, spec: SweepSpec, keys: set[str]) -> tuple[list[tuple], dict, list[dict]]:
    """(group order, group -> {"counts": Counter, "seconds": [sum, max]}, first failed lines)."""
    names = group_axes(spec)
    labels = {a.name: a.labels for a in spec.axes}
    order = list(itertools.product(*(labels[n] for n in names)))
    latest: dict[str, tuple] = {}
    for line in store.iter_index():
        key = line["key"]
        if key in keys:
            lab = line.get("labels") or {}
            group = tuple(str(lab.get(n)) for n in names)
            outcome = line.get("verdict") if line.get("status") == JobStatus.DONE.value else FAILED
            latest[key] = (
                group,
                str(outcome),
                float(line.get("seconds") or 0.0),
                None if outcome != FAILED else (lab, line.get("error")),
            )
    groups: dict[tuple, dict] = {g: {"counts": Counter(), "seconds": [0.0, 0.0]} for g in order}
    failed: list[dict] = []
    for key, (group, outcome, sec, fail) in latest.items():
        g = groups.setdefault(group, {"counts": Counter(), "seconds": [0.0, 0.0]})
        g["counts"][outcome] += 1
        g["seconds"][0] += sec
        g["seconds"][1] = max(g["seconds"][1], sec)
        if fail is not None and len(failed) < MAX_FAILED_LISTED:
            failed.append({"key": key, "labels": fail[0], "error": fail[1]})
    return order, groups, failed


def _outcomes(spec: SweepSpec, groups: dict) -> list[str]:
    seen = Counter()
    for g in groups.values():
        seen.update(g["counts"])
    known = list(spec.job_kind().verdicts) or ["done"]
    extra = sorted(o for o in seen if o not in known and o != FAILED)
    return known + extra + [FAILED]


def format_summary(
    spec: SweepSpec,
    order: list[tuple],
    groups: dict,
    failed: list[dict],
    *,
    elapsed_s: float | None = None,
    startup_s: float | None = None,
) -> str:
    """The markdown summary: one row per swept setting, outcome counts and the jobs' wall seconds in
    their workers (summed over the jobs, and the longest); the driver's wall time, start-up apart."""
    names = group_axes(spec)
    outcomes = _outcomes(spec, groups)
    total = sum(sum(g["counts"].values()) for g in groups.values())
    head = [f"# Sweep summary: {spec.path.name} (kind {spec.kind})", ""]
    if spec.description:
        head += [spec.description, ""]
    fixed = [f"{a.name} = {a.labels[0]}" for a in spec.axes if len(a.values) == 1 and not a.is_file]
    files = [f"{a.name}: {len(a.values)} file(s)" for a in spec.axes if a.is_file]
    head += [
        f"{total} recorded job(s) of {spec.size} grid point(s)"
        + (f"; {', '.join(files)}" if files else "")
        + (f"; fixed {', '.join(fixed)}" if fixed else "")
        + ".",
        "",
    ]
    cols = (
        (names or ["setting"])
        + ["jobs"]
        + outcomes
        + ["job wall s in workers (sum)", "job wall s (max)"]
    )
    rows = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for g in order + [g for g in groups if g not in order]:
        info = groups.get(g)
        if info is None or not info["counts"]:
            continue
        c = info["counts"]
        cells = list(g) if names else ["all"]
        cells += [str(sum(c.values()))] + [str(c.get(o, 0)) for o in outcomes]
        cells += [f"{info['seconds'][0]:.2f}", f"{info['seconds'][1]:.2f}"]
        rows.append("| " + " | ".join(cells) + " |")
    text = head + rows
    if failed:
        text += ["", f"## Failed jobs (first {len(failed)})", ""]
        text += [
            f"- `{f['key'][:12]}` {', '.join(f'{k}={v}' for k, v in f['labels'].items())}: {f['error']}"
            for f in failed
        ]
    if elapsed_s is not None:
        start = f", of which engine start-up {startup_s:.2f} s" if startup_s else ""
        text += ["", f"Driver wall time of the last run: {elapsed_s:.2f} s{start}."]
    return "\n".join(text) + "\n"


def plot_verdicts(spec: SweepSpec, order: list[tuple], groups: dict, path: Path) -> Path | None:
    """Stacked bars of verdict counts per swept setting (None when nothing was recorded)."""
    shown = [
        g
        for g in order + [g for g in groups if g not in order]
        if g in groups and groups[g]["counts"]
    ]
    if not shown:
        return None
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    names = group_axes(spec)
    outcomes = _outcomes(spec, groups)
    labels = [
        ", ".join(f"{n}={v}" for n, v in zip(names, g)) if names else "all jobs" for g in shown
    ]
    # horizontal bars: one row per setting, its label on the left, so long labels never run together
    fig = Figure(
        figsize=(7.5 + 0.06 * max(len(t) for t in labels), 1.6 + 0.32 * len(shown)),
        layout="constrained",
    )
    ax = fig.add_subplot()
    left = [0] * len(shown)
    rows = list(range(len(shown)))[::-1]  # the first setting on top
    for o in outcomes:
        h = [groups[g]["counts"].get(o, 0) for g in shown]
        if any(h):
            ax.barh(
                rows, h, left=left, label=o, color=COLORS.get(o), edgecolor="white", linewidth=0.5
            )
            left = [b + x for b, x in zip(left, h)]
    ax.set_yticks(rows, labels)
    ax.set_ylabel(" x ".join(names) if names else "setting")
    ax.set_xlabel("jobs (count)")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlim(0, max(left) * 1.02 or 1)
    ax.set_title(f"{spec.kind} sweep {spec.path.name}: verdicts per setting")
    fig.legend(
        *ax.get_legend_handles_labels(),
        title="verdict",
        fontsize="small",
        loc="outside right upper",
    )
    with atomic_file(path) as fh:
        fig.savefig(fh, format="png", dpi=120)
    return path


def write_summary(
    store: Store,
    spec: SweepSpec,
    keys: set[str],
    *,
    elapsed_s: float | None = None,
    startup_s: float | None = None,
) -> dict:
    """Write SWEEP/summary.md and (kinds with verdicts) SWEEP/verdicts.png; returns the paths written."""
    order, groups, failed = collect(store, spec, keys)
    written = {
        "summary": write_text_atomic(
            store.root / SUMMARY,
            format_summary(spec, order, groups, failed, elapsed_s=elapsed_s, startup_s=startup_s),
        )
    }
    if spec.job_kind().verdicts:
        fig = plot_verdicts(spec, order, groups, store.root / FIGURE)
        if fig is not None:
            written["figure"] = fig
    return written
