"""Figures for a ``mdcert regpath`` run directory (matplotlib, Agg backend).

`plot_regpath_run(run_dir)` reads ``RUN/summary.json`` (``"kind": "regpath"``) and writes PNG files
next to it; ``mdcert plot RUN`` dispatches here for regpath runs.
"""

from __future__ import annotations

import math
from pathlib import Path

from certify.errors import MdcertError
from experiments.figures import pyplot, read_summary, save_png

__all__ = ["plot_regpath_run"]


def _floats(values) -> list[float]:
    out = []
    for v in values:
        if v is None:
            out.append(math.nan)
        elif isinstance(v, str):
            out.append({"inf": math.inf, "-inf": -math.inf}.get(v, math.nan))
        else:
            out.append(float(v))
    return out


def plot_regpath_run(run_dir: str | Path) -> list[Path]:
    """Write the regpath figures of a run directory and return their paths.

    Figures: ``regpath_bregman.png`` (directional Bregman divergence to the certified SVM against R,
    log-log; v as well for joint runs), ``regpath_stationarity.png`` (relative l_p-ball gap and the
    log excess loss against R), ``regpath_tokens.png`` (fraction of examples whose selected token is
    the reference token, per R, and the winning start), and for joint runs with a mirror-descent path
    ``regpath_joint_md.png``.

    Raises:
        MdcertError: the directory has no readable regpath summary.
    """
    plt = pyplot()
    run = Path(run_dir)
    summary_path = run / "summary.json"
    summary = read_summary(run, create=f"mdcert regpath ... -o {run}")
    if summary.get("kind") != "regpath" or not isinstance(summary.get("path"), list) or not summary["path"]:
        raise MdcertError(f"{str(summary_path)!r} is not a regpath summary (kind {summary.get('kind')!r})")
    path = summary["path"]
    R = _floats(r["R"] for r in path)
    joint = bool(summary.get("joint"))
    p = summary.get("p_float", summary.get("p"))
    outputs: list[Path] = []

    fig, ax = plt.subplots(figsize=(5.5, 4))
    ax.loglog(R, _floats(r["bregman_to_svm"] for r in path), "o-", label=r"$D_\psi(\bar W_{mm}, W(R)/\|W(R)\|_p)$")
    if joint:
        ax.loglog(R, _floats(r.get("bregman_v_to_svm") for r in path), "s--", label=r"$D_\psi(\bar v_{mm}, v(r)/\|v(r)\|_p)$")
        sel_W = _floats(r.get("bregman_to_selected_svm") for r in path)
        sel_v = _floats(r.get("bregman_v_to_selected_svm") for r in path)
        if any(a != b for a, b in zip(sel_W, _floats(r["bregman_to_svm"] for r in path)) if not math.isnan(a)):
            ax.loglog(R, sel_W, "o:", label="W vs SVM of the selected tokens")
            ax.loglog(R, sel_v, "s:", label="v vs SVM of the selected tokens")
    ax.set_xlabel("R")
    ax.set_ylabel("directional Bregman divergence")
    ax.set_title(f"regularization path, p = {p}" + (f", r = {summary.get('r_of_R')}" if joint else ""))
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    outputs.append(save_png(fig, run / "regpath_bregman.png", tight=True))

    fig, ax = plt.subplots(1, 2, figsize=(10, 4))
    stat = [max(s, 1e-17) for s in _floats(r["stationarity"] for r in path)]
    ax[0].loglog(R, stat, "o-")
    ax[0].set_xlabel("R")
    ax[0].set_ylabel("relative l_p-ball gap (floored at 1e-17)")
    ax[0].set_title("stationarity of the winner")
    ax[0].grid(True, which="both", alpha=0.3)
    key = "log_loss" if joint else "log_excess_loss"
    ax[1].semilogx(R, _floats(r.get(key) for r in path), "o-")
    ax[1].set_xlabel("R")
    ax[1].set_ylabel("log L" if joint else r"$\log(L - L_*)$")
    ax[1].set_title("loss (log domain)")
    ax[1].grid(True, which="both", alpha=0.3)
    outputs.append(save_png(fig, run / "regpath_stationarity.png", tight=True))

    alpha = summary.get("alpha") or []
    fig, ax = plt.subplots(figsize=(5.5, 4))
    if alpha:
        frac = [sum(int(a == b) for a, b in zip(r["selected_tokens"], alpha)) / len(alpha) for r in path]
        ax.semilogx(R, frac, "o-")
    for x, r in zip(R, path):
        ax.annotate(str(r.get("winner", "")), (x, 0.02), rotation=90, fontsize=7, ha="center")
    ax.set_ylim(-0.05, 1.05)
    ax.set_xlabel("R")
    ax.set_ylabel("fraction of examples selecting alpha")
    ax.set_title("selected tokens (softmax argmax); winner start")
    ax.grid(True, which="both", alpha=0.3)
    outputs.append(save_png(fig, run / "regpath_tokens.png", tight=True))

    md = summary.get("joint_md")
    if md and md.get("records"):
        recs = md["records"]
        steps = _floats(r["step"] for r in recs)
        fig, ax = plt.subplots(figsize=(5.5, 4))
        ax.loglog(steps, _floats(r.get("bregman_W") for r in recs), "o-", label="W")
        ax.loglog(steps, _floats(r.get("bregman_v") for r in recs), "s--", label="v")
        ax.set_xlabel("mirror-descent step")
        ax.set_ylabel("directional Bregman divergence to the SVM")
        ax.set_title(f"joint mirror descent, p = {md.get('p_float')}, lr = {md.get('lr')}")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
        outputs.append(save_png(fig, run / "regpath_joint_md.png", tight=True))
    return outputs
