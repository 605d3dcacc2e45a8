"""The outputs of ``mdcert study realdata``: summary.json, report.md and the figures (docs/formats.md).

Every number in report.md and the figures is read from the summary of the same run; every file is
written through a temporary name and renamed (`experiments.runtime.outputs.write_text_atomic`,
`experiments.runtime.figures.save_png`).
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np

from experiments.runtime.outputs import write_text_atomic
from experiments.paths.rates import clean_json
from experiments.paths.text import interval_text

__all__ = ["frontier_summary", "headline", "markdown", "plot_frontier", "plot_paths", "write_outputs", "FIGURES"]

KINDS = {"opt": "globally optimal tokens", "trained": "training-derived tokens"}
COLORS = {"feasible": "tab:blue", "infeasible": "tab:red", "undecided": "tab:gray"}
P_COLORS = ("tab:purple", "tab:blue", "tab:green", "tab:orange", "tab:red", "tab:brown")
FIGURES = ("frontier.png", "paths_{name}.png")


def frontier_summary(fractions: list[dict]) -> dict:
    """Per token choice: the largest ``n(T-1)/d^2`` up to which every subset was certified feasible, the
    smallest from which every subset was proven infeasible, and the undecided count."""
    out: dict = {}
    for kind in KINDS:
        feas = [f["nominal_ratio"] for f in fractions if f[kind]["fractions"]["feasible"] == 1.0]
        infeas = [f["nominal_ratio"] for f in fractions if f[kind]["fractions"]["infeasible"] == 1.0]
        below = [f["nominal_ratio"] for f in fractions if f[kind]["fractions"]["feasible"] < 1.0]
        out[kind] = {"all_feasible_up_to": max([r for r in feas if not below or r < min(below)], default=None),
                     "all_infeasible_from": min(infeas, default=None),
                     "undecided": sum(f[kind]["counts"]["undecided"] for f in fractions),
                     "subsets": sum(f["subsets"] for f in fractions)}
    out["trained_locally_optimal"] = {v: sum(f.get("trained_locally_optimal", {}).get("counts", {}).get(v, 0)
                                             for f in fractions) for v in ("holds", "fails", "undecided")}
    return out


def headline(summary: dict) -> list[str]:
    """Two lines per source: the frontier and the paths, as ``mdcert study`` prints them."""
    out = []
    for name, e in summary["modalities"].items():
        spec, fs = e["spec"], e["frontier"]["summary"]
        o, t = fs["opt"], fs["trained"]
        feas_t = sum(f["trained"]["counts"]["feasible"] for f in e["frontier"]["fractions"])
        out.append(f"{name} (d={spec['d']}, T={spec['T']}): optimal tokens feasible for every subset up to "
                   f"n(T-1)/d^2 = {_g(o['all_feasible_up_to'])}, infeasible for every subset from "
                   f"{_g(o['all_infeasible_from'])}, {o['undecided']}/{o['subsets']} undecided; training-derived "
                   f"tokens feasible in {feas_t}/{t['subsets']}, locally optimal (certified) in "
                   f"{fs['trained_locally_optimal']['holds']}/{t['subsets']}")
        parts = [f"p={p}: {r['locally_optimal']['holds']}/{r['trajectories']} locally optimal, "
                 f"D(K) {_g(r['bregman']['final_stats']['mean'])}" for p, r in e["paths"]["per_p"].items()]
        out.append(f"{name} paths (n={e['paths']['n']}): " + "; ".join(parts))
    return out


def _g(x, fmt: str = ".3g") -> str:
    return "-" if x is None else format(x, fmt)


def _counts(c: dict) -> str:
    return f"{c['feasible']} / {c['infeasible']} / {c['undecided']}"


def _mean(xs) -> float | None:
    xs = [x for x in xs if x is not None]
    return float(np.mean(xs)) if xs else None


def _rate_cell(fit: dict | None) -> str:
    if not fit or "error" in fit:
        return "not fitted" + (f" ({fit['error']})" if fit else "")
    return (f"{fit['verdict']} ({fit['state']}); b = {fit['power']['exponent']:.3g}{interval_text(fit['power']['ci'])}, "
            f"a = {fit['log']['exponent']:.3g}{interval_text(fit['log']['ci'])}")


def _norm_cell(fit: dict | None) -> str:
    if not fit or "error" in fit:
        return "not fitted"
    return f"e = {fit['coefficient']:.3g}{interval_text(fit['ci'])} (1/(p-1) = {fit['expected']:.3g})"


def markdown(summary: dict) -> str:
    """report.md: the run's machine and timings, the frontier tables and the per-p paths tables."""
    mach, cfg = summary["machine"], summary["config"]
    la, lb = mach["load_average"], mach.get("load_average_end", [None] * 3)
    lines = [f"# mdcert study realdata ({'quick' if summary.get('quick') else 'default'} run)", "",
             f"Started {mach['started_utc']}, total wall time {summary['timings']['total_s']:.1f} s on {mach['cpus']} "
             f"CPUs, {mach['workers']} certification workers; load average {la[0]:.2f} / {la[1]:.2f} / {la[2]:.2f} "
             f"at the start, {_g(lb[0], '.2f')} / {_g(lb[1], '.2f')} / {_g(lb[2], '.2f')} at the end "
             f"({mach['note']}).", "",
             "Frontier verdicts count only certificates accepted by the independent checker (feasible: an optimal "
             "certificate; infeasible: an exact Gordan certificate); everything else is undecided. The paths' "
             "Bregman values, rate fits and weight statistics are float64 measurements; their reference "
             "directions and the local-optimality verdicts are certified (docs/theory.md section 6.6).", ""]
    for name, e in summary["modalities"].items():
        spec, t = e["spec"], e["timings"]
        lines += [f"## {name}: d = {spec['d']}, T = {spec['T']}, {cfg['subsets']} subsets per n", "",
                  f"Load {t['load_s']:.1f} s, frontier {t['frontier_s']:.1f} s, paths {t['paths_s']:.1f} s. "
                  f"Training-derived tokens: argmax of the final attention after {cfg['train_steps']} normalized "
                  f"steps of p = {cfg['train_p']} (lr {cfg['train_lr']}) from W(0) = 0. Certified at p = "
                  f"{cfg['cert_p']} (feasibility does not depend on p).", "",
                  "| n | n(T-1)/d^2 | mean N/d^2 | optimal tokens: feasible / infeasible / undecided | "
                  "trained tokens: feasible / infeasible / undecided | trained tokens locally optimal: holds / fails "
                  "/ undecided | trained = optimal |",
                  "|---|---|---|---|---|---|---|"]
        for f in e["frontier"]["fractions"]:
            lo = f["trained_locally_optimal"]["counts"]
            lines.append(f"| {f['n']} | {f['nominal_ratio']:.2f} | {f['ratio_mean']:.2f} | {_counts(f['opt']['counts'])} "
                         f"| {_counts(f['trained']['counts'])} | {lo['holds']} / {lo['fails']} / {lo['undecided']} "
                         f"| {f['trained_equals_opt']} / {f['subsets']} |")
        fs = e["frontier"]["summary"]
        lines += ["", "; ".join(f"{KINDS[k]}: every subset feasible up to n(T-1)/d^2 = {_g(fs[k]['all_feasible_up_to'])}, "
                                f"every subset infeasible from {_g(fs[k]['all_infeasible_from'])}, {fs[k]['undecided']} "
                                f"of {fs[k]['subsets']} undecided" for k in KINDS) + ". The training-derived tokens "
                  "are feasible by construction when the final attention has a strict argmax (W(K) is a feasible "
                  "direction); their local optimality (TokensLocallyOptimal at p = "
                  f"{cfg['cert_p']}, certified) is the informative column.", ""]
        pa = e["paths"]
        lines += [f"Paths at n = {pa['n']} (N = {pa['rows']}, N/d^2 = {pa['ratio']:.2f}), {cfg['inits']} initializations "
                  f"W(0) ~ N(0, {cfg['init_std']}^2), normalized steps, lr {cfg['path_lr']}; D = D_psi(Wbar_mm, Wbar(K)) "
                  f"against the certified SVM of each trajectory's own final tokens; counts of |W_ij| >= "
                  f"{cfg['threshold']} out of {spec['d'] ** 2} entries.", "",
                  "| p | steps | distinct trained tokens (trajectories) | locally optimal: holds / fails / undecided | "
                  "D(K) mean +- std | D(K) to optimal tokens | decay fit (verdict; k^-b, (log k)^-a) | norm growth C k^e "
                  "| count, raw W(K) | count, W/\\|\\|W\\|\\|_F | top 10% l1 mass | count, W_mm/\\|\\|W_mm\\|\\|_F |",
                  "|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for p, r in pa["per_p"].items():
            lo, bf, bo, w = r["locally_optimal"], r["bregman"]["final_stats"], r["bregman_opt"]["final_stats"], r["weights"]
            wm = r["weights_W_mm"]
            lines.append(
                f"| {p} | {r['steps']} | {', '.join(str(a['trajectories']) for a in r['alphas'])} "
                f"| {lo['holds']} / {lo['fails']} / {lo['undecided']} | {_g(bf['mean'])} +- {_g(bf['std'])} "
                f"| {_g(bo['mean'])} | {_rate_cell(r['bregman']['rate_fit'])} | {_norm_cell(r['norm']['fit'])} "
                f"| {_g(_mean(w['count_raw']), '.1f')} | {_g(_mean(w['count_unit']), '.1f')} "
                f"| {_g(_mean(w['top_mass']['0.1']), '.3f')} | {'-' if wm is None else wm['count_unit'][0]} |")
        lines += ["", "Local-optimality messages (one per distinct token choice):", ""]
        for p, r in pa["per_p"].items():
            for a in r["alphas"]:
                lines.append(f"- p = {p}, {a['trajectories']} trajectories, {a['differs_from_opt_in']} examples "
                             f"differ from the optimal tokens: {a['verdict'].upper()}: {a['message']}")
        lines.append("")
    return "\n".join(lines) + "\n"


def _log_ticks(axis, values) -> None:
    """Log-axis ticks in one plain format: 1, 2, 5 per decade labelled ``%g`` over less than three
    decades (never ``2x10^0`` beside ``10^0``), else powers of ten only, minor ticks unlabelled."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    v = np.asarray([x for x in values if x is not None and np.isfinite(x) and x > 0], dtype=float)
    narrow = v.size == 0 or v.max() / v.min() < 1e3
    axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0) if narrow else (1.0,)))
    axis.set_major_formatter(FuncFormatter(lambda x, _: f"{x:g}" if narrow else f"$10^{{{np.log10(x):.0f}}}$"))
    axis.set_minor_formatter(NullFormatter())


def plot_frontier(summary: dict, path: Path) -> Path:
    """Fractions of subsets per verdict against ``n(T-1)/d^2``, one panel per modality; the two token
    choices are drawn with small opposite offsets along x so coinciding curves both stay visible, and
    the legend (verdict by colour, token choice by line style) sits below the panels."""
    from matplotlib.lines import Line2D

    from experiments.runtime.figures import save_png
    from experiments.studies.plots import figure

    mods = summary["modalities"]
    fig = figure(5.8 * len(mods), 5.2)
    axes = np.atleast_1d(fig.subplots(1, len(mods), squeeze=False)[0])
    for ax, (name, e) in zip(axes, mods.items()):
        fr = e["frontier"]["fractions"]
        x = np.array([f["nominal_ratio"] for f in fr], dtype=float)
        for kind, style, marker, shift in (("opt", "-", "o", 0.97), ("trained", "--", "^", 1.03)):
            for v in ("feasible", "infeasible", "undecided"):
                ax.plot(x * shift, [f[kind]["fractions"][v] for f in fr], style, marker=marker, color=COLORS[v],
                        alpha=0.85)
        ax.plot(x, [f["trained_locally_optimal"]["fractions"]["holds"] for f in fr], "-.", marker="s",
                color="tab:green")
        ax.set_xscale("log")
        _log_ticks(ax.xaxis, x)
        ax.set_ylim(-0.05, 1.05)
        ax.set_xlabel("n(T-1)/d^2 (constraints per variable, before padding)")
        ax.set_ylabel(f"fraction of the {summary['config']['subsets']} random subsets per n")
        spec = e["spec"]
        ax.set_title(f"{name}: d = {spec['d']}, T = {spec['T']}")
    handles = [Line2D([], [], color=COLORS[v], lw=6, label=v) for v in ("feasible", "infeasible", "undecided")]
    handles += [Line2D([], [], color="black", ls="-", marker="o", label=KINDS["opt"]),
                Line2D([], [], color="black", ls="--", marker="^", label=KINDS["trained"]),
                Line2D([], [], color="tab:green", ls="-.", marker="s",
                       label="training-derived tokens certified locally optimal")]
    fig.legend(handles=handles, loc="outside lower center", ncol=3, fontsize=8)
    return save_png(fig, path)


def _curve(ax, k, y, style, color, label=None) -> None:
    """A curve over the steps k > 0; a single finite point is a marker, not a line."""
    k, y = np.asarray(k, dtype=float), np.asarray(y, dtype=float)
    keep = (k > 0) & np.isfinite(y)
    if keep.sum() == 1:
        ax.plot(k[keep], y[keep], marker="o", ls="none", color=color, label=label)
    elif keep.any():
        ax.plot(k[keep], y[keep], style, color=color, label=label)


def plot_paths(name: str, entry: dict, threshold: float, path: Path) -> Path:
    """Decay, norm growth, sorted weight profile and weight counts against p for one modality. The
    decay panel's reference to the optimal tokens is drawn only where it differs from the trajectory's
    own final tokens (else the two curves coincide); the legends sit beside the panels."""
    from matplotlib.lines import Line2D
    from matplotlib.ticker import MaxNLocator

    from experiments.runtime.figures import save_png
    from experiments.studies.plots import figure

    per_p = entry["paths"]["per_p"]
    fig = figure(14.0, 8.6)
    (a1, a2), (a3, a4) = fig.subplots(2, 2)
    same, ks, ds, norms = [], [], [], []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for (p, r), color in zip(per_p.items(), P_COLORS):
            k = np.asarray(r["record_steps"], dtype=float)
            ks += list(k[k > 0])
            curves = {key: None if r[key]["mean_curve"] is None else
                      np.array([np.nan if c is None else c for c in r[key]["mean_curve"]], dtype=float)
                      for key in ("bregman", "bregman_opt")}
            own, opt = curves["bregman"], curves["bregman_opt"]
            if own is not None:
                _curve(a1, k, own, "-", color)
                ds += list(own[np.isfinite(own) & (own > 0)])
            if opt is not None and (own is None or not np.allclose(own, opt, rtol=1e-6, equal_nan=True)):
                _curve(a1, k, opt, ":", color)
            elif opt is not None:
                same.append(p)
            norm = np.asarray(r["norm"]["mean_curve"], dtype=float)
            _curve(a2, k, norm, "-", color, f"p = {p}")
            norms += list(norm[(k > 0) & np.isfinite(norm)])
            prof = np.asarray(r["weights"]["profile_mean"])
            a3.plot(np.arange(1, prof.size + 1), prof, "-", color=color)
            if r["weights_W_mm"] is not None:
                pm = np.asarray(r["weights_W_mm"]["profile_mean"])
                a3.plot(np.arange(1, pm.size + 1), pm, "--", color=color)
    a1.set(xscale="log", yscale="log", xlabel="step k (iterations)", ylabel="D_psi(Wbar_mm, Wbar(k)) (dimensionless)",
           title=f"{name}: directional Bregman divergence, mean over inits")
    a2.set(xscale="log", yscale="log", xlabel="step k (iterations)", ylabel="||W(k)||_p (dimensionless)",
           title="norm growth, mean over inits")
    for ax, ys in ((a1, ds), (a2, norms)):
        _log_ticks(ax.xaxis, ks)
        _log_ticks(ax.yaxis, ys)
    p_handles = [Line2D([], [], color=c, label=f"p = {p}") for p, c in zip(per_p, P_COLORS)]
    ref = [Line2D([], [], color="black", ls="-", label="SVM of each trajectory's own final tokens"),
           Line2D([], [], color="black", ls=":", label="SVM of the optimal tokens"
                  + (f" (same curve for p = {', '.join(same)})" if same else ""))]
    a1.legend(handles=p_handles + ref, fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    a2.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    a3.axhline(threshold, color="black", linewidth=0.8)
    a3.set(yscale="log", xlabel="entry rank (1 = largest |W_ij|)", ylabel="|W_ij| / ||W||_F (dimensionless)",
           title="sparsity profile")
    a3.xaxis.set_major_locator(MaxNLocator(integer=True))
    _log_ticks(a3.yaxis, [v for r in per_p.values() for v in r["weights"]["profile_mean"]])
    a3.legend(handles=p_handles + [Line2D([], [], color="black", ls="-", label="W(K)/||W(K)||_F, mean over inits"),
                                   Line2D([], [], color="black", ls="--", label="certified W_mm/||W_mm||_F"),
                                   Line2D([], [], color="black", lw=0.8, label=f"threshold {threshold}")],
              fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ps = list(per_p)
    xs = np.arange(len(ps))
    unit = [_mean(per_p[p]["weights"]["count_unit"]) or 0 for p in ps]
    mm = [per_p[p]["weights_W_mm"]["count_unit"][0] if per_p[p]["weights_W_mm"] else 0 for p in ps]
    raw = [_mean(per_p[p]["weights"]["count_raw"]) or 0 for p in ps]
    a4.bar(xs - 0.27, raw, 0.27, color="tab:gray", label="raw W(K) (horizon-dependent), mean over inits")
    a4.bar(xs, unit, 0.27, color="tab:blue", label="W(K)/||W(K)||_F, mean over inits")
    a4.bar(xs + 0.27, mm, 0.27, color="tab:orange", label="certified W_mm/||W_mm||_F")
    a4.set_xticks(xs, [f"p = {p}" for p in ps])
    a4.yaxis.set_major_locator(MaxNLocator(integer=True))
    total = len(per_p[ps[0]]["weights"]["profile_mean"])
    a4.set(xlabel="mirror-descent exponent", ylabel=f"entries with |W_ij| >= {threshold} (count, of {total})",
           title="weight counts against p")
    a4.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return save_png(fig, path)


def write_outputs(summary: dict, root: Path) -> list[Path]:
    """summary.json, report.md and the figures into ``root`` (each atomically)."""
    root = Path(root)
    summary["headline"] = headline(summary)
    clean = clean_json(summary)
    out = [write_text_atomic(root / "summary.json", json.dumps(clean, indent=1, allow_nan=False) + "\n"),
           write_text_atomic(root / "report.md", markdown(clean)),
           plot_frontier(clean, root / "frontier.png")]
    for name, entry in clean["modalities"].items():
        out.append(plot_paths(name, entry, clean["config"]["threshold"], root / f"paths_{name}.png"))
    return out
