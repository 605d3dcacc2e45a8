"""Figures for a ``mdcert regpath`` run directory (matplotlib, Agg backend).

`plot_regpath_run(run_dir)` reads ``RUN/summary.json`` (``"kind": "regpath"``) and writes PNG files
next to it; ``mdcert plot RUN`` dispatches here for regpath runs.
"""

from __future__ import annotations

import math
from pathlib import Path

from certify.errors import MdcertError
from experiments.runtime.figures import read_summary, save_png, subplots

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


def _p_text(exact, approx) -> str:
    """p as a user reads it (``2``, ``1.75``) from the summary's exact ``"num/den"``."""
    from certify.exact import format_exact, parse_fraction

    try:
        return format_exact(parse_fraction(exact))
    except Exception:  # an edited summary: show what is there
        return str(approx if approx is not None else exact)


def _legend_below(fig, ax) -> None:
    """The legend of ``ax`` under the figure (constrained layout keeps it off the axes and labels)."""
    fig.legend(*ax.get_legend_handles_labels(), loc="outside lower center", fontsize=8)


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
    run = Path(run_dir)
    summary_path = run / "summary.json"
    summary = read_summary(run, create=f"mdcert regpath ... -o {run}")
    if (
        summary.get("kind") != "regpath"
        or not isinstance(summary.get("path"), list)
        or not summary["path"]
    ):
        raise MdcertError(
            f"{str(summary_path)!r} is not a regpath summary (kind {summary.get('kind')!r})"
        )
    path = summary["path"]
    R = _floats(r["R"] for r in path)
    joint = bool(summary.get("joint"))
    p = _p_text(summary.get("p"), summary.get("p_float"))
    outputs: list[Path] = []

    fig, ax = subplots(figsize=(5.8, 5.4 if joint else 4.8), constrained_layout=True)
    ax.loglog(
        R,
        _floats(r["bregman_to_svm"] for r in path),
        "o-",
        label=r"$D_\psi(\bar W_{mm}, W(R)/\|W(R)\|_p)$",
    )
    if joint:
        ax.loglog(
            R,
            _floats(r.get("bregman_v_to_svm") for r in path),
            "s--",
            label=r"$D_\psi(\bar v_{mm}, v(r)/\|v(r)\|_p)$",
        )
        sel_W = _floats(r.get("bregman_to_selected_svm") for r in path)
        sel_v = _floats(r.get("bregman_v_to_selected_svm") for r in path)
        if any(
            a != b
            for a, b in zip(sel_W, _floats(r["bregman_to_svm"] for r in path))
            if not math.isnan(a)
        ):
            ax.loglog(R, sel_W, "o:", label="W vs SVM of the selected tokens")
            ax.loglog(R, sel_v, "s:", label="v vs SVM of the selected tokens")
    alpha = summary.get("alpha") or []
    other = [
        (x, d)
        for x, d, r in zip(R, _floats(r["bregman_to_svm"] for r in path), path)
        if alpha
        and r.get("selected_tokens") is not None
        and list(r["selected_tokens"]) != list(alpha)
    ]
    if other:  # there D_W to alpha's SVM does not measure convergence (docs/theory.md section 6)
        ax.plot(
            *zip(*other),
            "o",
            ms=11,
            mfc="none",
            mec="k",
            mew=1.2,
            ls="",
            label=f"R where the path selects other tokens than alpha ({len(other)} of {len(R)})",
        )
    ax.set_xlabel(r"radius $R$ of the $\ell_p$ ball" + (r" ($W$); $r(R)$ for $v$" if joint else ""))
    ax.set_ylabel("directional Bregman divergence to the certified SVM")
    ax.set_title(
        f"regularization path, p = {p}" + (f", r = {summary.get('r_of_R')}" if joint else "")
    )
    ax.grid(True, which="both", alpha=0.3)
    _legend_below(fig, ax)
    outputs.append(save_png(fig, run / "regpath_bregman.png"))

    fig, ax = subplots(1, 2, figsize=(11, 4.2), constrained_layout=True)
    stat = _floats(r["stationarity"] for r in path)
    floor = 1e-17
    shown = [max(v, floor) if math.isfinite(v) else math.nan for v in stat]
    ax[0].loglog(
        R, shown, "o-", label=r"$(R\|g\|_q + \langle g, W\rangle)/(R\|g\|_q)$ of the winning start"
    )
    low = [(x, floor) for x, v in zip(R, stat) if math.isfinite(v) and v <= floor]
    if low:
        ax[0].plot(
            *zip(*low),
            "v",
            color="C3",
            ms=8,
            label=f"below {floor:.0e} (0 in float64): drawn at {floor:.0e}",
        )
    ax[0].set_xlabel(r"radius $R$")
    ax[0].set_ylabel("relative first-order gap on the ball")
    ax[0].set_title("stationarity (0 at a KKT point)", fontsize=10)
    ax[0].grid(True, which="both", alpha=0.3)
    _legend_below(fig, ax[0])
    key = "log_loss" if joint else "log_excess_loss"
    ax[1].semilogx(R, _floats(r.get(key) for r in path), "o-")
    ax[1].set_xlabel(r"radius $R$")
    ax[1].set_ylabel(r"$\log L(W, v)$" if joint else r"$\log(L(W(R)) - L_*)$")
    ax[1].set_title("loss (natural log)", fontsize=10)
    ax[1].grid(True, which="both", alpha=0.3)
    outputs.append(save_png(fig, run / "regpath_stationarity.png"))

    fig, (ax, ax_w) = subplots(
        2,
        1,
        figsize=(6, 5.2),
        sharex=True,
        constrained_layout=True,
        gridspec_kw={"height_ratios": (3, 1.4)},
    )
    if alpha:
        frac = [
            sum(int(a == b) for a, b in zip(r["selected_tokens"], alpha)) / len(alpha) for r in path
        ]
        ax.semilogx(
            R,
            frac,
            "o-",
            label=f"alpha = {list(alpha)}" if len(alpha) <= 8 else "the reference alpha",
        )
        ax.legend(fontsize=7, loc="best")
    ax.set_ylim(-0.05, 1.05)
    ax.set_ylabel("fraction of examples\nselecting alpha")
    ax.set_title("selected tokens (softmax argmax) along the path", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    winners = [str(r.get("winner", "")) for r in path]
    names = sorted(set(winners))
    ax_w.semilogx(R, [names.index(w) for w in winners], "s", color="0.3")
    ax_w.set_yticks(range(len(names)), names, fontsize=7)
    ax_w.set_ylim(-0.6, len(names) - 0.4)
    ax_w.set_ylabel("winning start", fontsize=8)
    ax_w.set_xlabel(r"radius $R$")
    ax_w.grid(True, which="both", alpha=0.3)
    outputs.append(save_png(fig, run / "regpath_tokens.png"))

    md = summary.get("joint_md")
    if md and md.get("records"):
        recs = md["records"]
        steps = _floats(r["step"] for r in recs)
        fig, ax = subplots(figsize=(6, 4.3))
        ax.loglog(
            steps,
            _floats(r.get("bregman_W") for r in recs),
            "o-",
            label=r"$D_\psi(\bar W_{mm}, \bar W(k))$, SVM of alpha",
        )
        ax.loglog(
            steps,
            _floats(r.get("bregman_v") for r in recs),
            "s--",
            label=r"$D_\psi(\bar v_{mm}, \bar v(k))$, SVM of alpha",
        )
        sel_W = _floats(r.get("bregman_W_to_selected_svm") for r in recs)
        if alpha and any(r.get("selected_tokens") not in (None, list(alpha)) for r in recs):
            ax.loglog(steps, sel_W, "o:", color="C2", label="W vs the SVM of the selected tokens")
            ax.loglog(
                steps,
                _floats(r.get("bregman_v_to_selected_svm") for r in recs),
                "s:",
                color="C4",
                label="v vs the SVM of the selected tokens",
            )
        ax.set_xlabel("mirror-descent step k")
        ax.set_ylabel("directional Bregman divergence")
        ax.set_title(
            f"joint mirror descent (normalized steps), p = {_p_text(md.get('p'), md.get('p_float'))}, "
            f"lr = {md.get('lr'):g}",
            fontsize=10,
        )
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
        outputs.append(save_png(fig, run / "regpath_joint_md.png", tight=True))
    return outputs
