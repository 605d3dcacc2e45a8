"""The outputs of ``mdcert study realdata``: summary.json, report.md and the figures (docs/formats.md).

Every number in report.md and the figures is read from the summary of the same run; every file is
written through a temporary name and renamed (`experiments.runtime.outputs.write_text_atomic`,
`experiments.runtime.figures.save_png`).
"""

from __future__ import annotations

import json
from pathlib import Path


from experiments.runtime.outputs import write_text_atomic
from experiments.paths.rates import clean_json
from experiments.paths.text import interval_text
from experiments.studies.realdata.figures import KINDS, mean_or_none, plot_frontier, plot_paths

__all__ = [
    "frontier_summary",
    "headline",
    "markdown",
    "plot_frontier",
    "plot_paths",
    "write_outputs",
    "FIGURES",
]

FIGURES = ("frontier.png", "paths_{name}.png")


def frontier_summary(fractions: list[dict]) -> dict:
    """Per token choice: the largest ``n(T-1)/d^2`` up to which every subset was certified feasible, the
    smallest from which every subset was proven infeasible, and the undecided count."""
    out: dict = {}
    for kind in KINDS:
        feas = [f["nominal_ratio"] for f in fractions if f[kind]["fractions"]["feasible"] == 1.0]
        infeas = [
            f["nominal_ratio"] for f in fractions if f[kind]["fractions"]["infeasible"] == 1.0
        ]
        below = [f["nominal_ratio"] for f in fractions if f[kind]["fractions"]["feasible"] < 1.0]
        out[kind] = {
            "all_feasible_up_to": max(
                [r for r in feas if not below or r < min(below)], default=None
            ),
            "all_infeasible_from": min(infeas, default=None),
            "undecided": sum(f[kind]["counts"]["undecided"] for f in fractions),
            "subsets": sum(f["subsets"] for f in fractions),
        }
    out["trained_locally_optimal"] = {
        v: sum(f.get("trained_locally_optimal", {}).get("counts", {}).get(v, 0) for f in fractions)
        for v in ("holds", "fails", "undecided")
    }
    return out


def headline(summary: dict) -> list[str]:
    """Two lines per source: the frontier and the paths, as ``mdcert study`` prints them."""
    out = []
    for name, e in summary["modalities"].items():
        spec, fs = e["spec"], e["frontier"]["summary"]
        o, t = fs["opt"], fs["trained"]
        feas_t = sum(f["trained"]["counts"]["feasible"] for f in e["frontier"]["fractions"])
        out.append(
            f"{name} (d={spec['d']}, T={spec['T']}): optimal tokens feasible for every subset up to "
            f"n(T-1)/d^2 = {_g(o['all_feasible_up_to'])}, infeasible for every subset from "
            f"{_g(o['all_infeasible_from'])}, {o['undecided']}/{o['subsets']} undecided; training-derived "
            f"tokens feasible in {feas_t}/{t['subsets']}, locally optimal (certified) in "
            f"{fs['trained_locally_optimal']['holds']}/{t['subsets']}"
        )
        parts = [
            f"p={p}: {r['locally_optimal']['holds']}/{r['trajectories']} locally optimal, "
            f"D(K) {_g(r['bregman']['final_stats']['mean'])}"
            for p, r in e["paths"]["per_p"].items()
        ]
        out.append(f"{name} paths (n={e['paths']['n']}): " + "; ".join(parts))
    return out


def _g(x, fmt: str = ".3g") -> str:
    return "-" if x is None else format(x, fmt)


def _counts(c: dict) -> str:
    return f"{c['feasible']} / {c['infeasible']} / {c['undecided']}"


def _rate_cell(fit: dict | None) -> str:
    if not fit or "error" in fit:
        return "not fitted" + (f" ({fit['error']})" if fit else "")
    return (
        f"{fit['verdict']} ({fit['state']}); b = {fit['power']['exponent']:.3g}{interval_text(fit['power']['ci'])}, "
        f"a = {fit['log']['exponent']:.3g}{interval_text(fit['log']['ci'])}"
    )


def _norm_cell(fit: dict | None) -> str:
    if not fit or "error" in fit:
        return "not fitted"
    return (
        f"e = {fit['coefficient']:.3g}{interval_text(fit['ci'])} (1/(p-1) = {fit['expected']:.3g})"
    )


def markdown(summary: dict) -> str:
    """report.md: the run's machine and timings, the frontier tables and the per-p paths tables."""
    mach, cfg = summary["machine"], summary["config"]
    la, lb = mach["load_average"], mach.get("load_average_end", [None] * 3)
    lines = [
        f"# mdcert study realdata ({'quick' if summary.get('quick') else 'default'} run)",
        "",
        f"Started {mach['started_utc']}, total wall time {summary['timings']['total_s']:.1f} s on {mach['cpus']} "
        f"CPUs, {mach['workers']} certification workers; load average {la[0]:.2f} / {la[1]:.2f} / {la[2]:.2f} "
        f"at the start, {_g(lb[0], '.2f')} / {_g(lb[1], '.2f')} / {_g(lb[2], '.2f')} at the end "
        f"({mach['note']}).",
        "",
        "Frontier verdicts count only certificates accepted by the independent checker (feasible: an optimal "
        "certificate; infeasible: an exact Gordan certificate); everything else is undecided. The paths' "
        "Bregman values, rate fits and weight statistics are float64 measurements; their reference "
        "directions and the local-optimality verdicts are certified (docs/theory.md section 6.6).",
        "",
    ]
    for name, e in summary["modalities"].items():
        spec, t = e["spec"], e["timings"]
        lines += [
            f"## {name}: d = {spec['d']}, T = {spec['T']}, {cfg['subsets']} subsets per n",
            "",
            f"Load {t['load_s']:.1f} s, frontier {t['frontier_s']:.1f} s, paths {t['paths_s']:.1f} s. "
            f"Training-derived tokens: argmax of the final attention after {cfg['train_steps']} normalized "
            f"steps of p = {cfg['train_p']} (lr {cfg['train_lr']}) from W(0) = 0. Certified at p = "
            f"{cfg['cert_p']} (feasibility does not depend on p).",
            "",
            "| n | n(T-1)/d^2 | mean N/d^2 | optimal tokens: feasible / infeasible / undecided | "
            "trained tokens: feasible / infeasible / undecided | trained tokens locally optimal: holds / fails "
            "/ undecided | trained = optimal |",
            "|---|---|---|---|---|---|---|",
        ]
        for f in e["frontier"]["fractions"]:
            lo = f["trained_locally_optimal"]["counts"]
            lines.append(
                f"| {f['n']} | {f['nominal_ratio']:.2f} | {f['ratio_mean']:.2f} | {_counts(f['opt']['counts'])} "
                f"| {_counts(f['trained']['counts'])} | {lo['holds']} / {lo['fails']} / {lo['undecided']} "
                f"| {f['trained_equals_opt']} / {f['subsets']} |"
            )
        fs = e["frontier"]["summary"]
        lines += [
            "",
            "; ".join(
                f"{KINDS[k]}: every subset feasible up to n(T-1)/d^2 = {_g(fs[k]['all_feasible_up_to'])}, "
                f"every subset infeasible from {_g(fs[k]['all_infeasible_from'])}, {fs[k]['undecided']} "
                f"of {fs[k]['subsets']} undecided"
                for k in KINDS
            )
            + ". The training-derived tokens "
            "are feasible by construction when the final attention has a strict argmax (W(K) is a feasible "
            "direction); their local optimality (TokensLocallyOptimal at p = "
            f"{cfg['cert_p']}, certified) is the informative column.",
            "",
        ]
        pa = e["paths"]
        lines += [
            f"Paths at n = {pa['n']} (N = {pa['rows']}, N/d^2 = {pa['ratio']:.2f}), {cfg['inits']} initializations "
            f"W(0) ~ N(0, {cfg['init_std']}^2), normalized steps, lr {cfg['path_lr']}; D = D_psi(Wbar_mm, Wbar(K)) "
            f"against the certified SVM of each trajectory's own final tokens; counts of |W_ij| >= "
            f"{cfg['threshold']} out of {spec['d'] ** 2} entries.",
            "",
            "| p | steps | distinct trained tokens (trajectories) | locally optimal: holds / fails / undecided | "
            "D(K) mean +- std | D(K) to optimal tokens | decay fit (verdict; k^-b, (log k)^-a) | norm growth C k^e "
            "| count, raw W(K) | count, W/\\|\\|W\\|\\|_F | top 10% l1 mass | count, W_mm/\\|\\|W_mm\\|\\|_F |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for p, r in pa["per_p"].items():
            lo, bf, bo, w = (
                r["locally_optimal"],
                r["bregman"]["final_stats"],
                r["bregman_opt"]["final_stats"],
                r["weights"],
            )
            wm = r["weights_W_mm"]
            lines.append(
                f"| {p} | {r['steps']} | {', '.join(str(a['trajectories']) for a in r['alphas'])} "
                f"| {lo['holds']} / {lo['fails']} / {lo['undecided']} | {_g(bf['mean'])} +- {_g(bf['std'])} "
                f"| {_g(bo['mean'])} | {_rate_cell(r['bregman']['rate_fit'])} | {_norm_cell(r['norm']['fit'])} "
                f"| {_g(mean_or_none(w['count_raw']), '.1f')} | {_g(mean_or_none(w['count_unit']), '.1f')} "
                f"| {_g(mean_or_none(w['top_mass']['0.1']), '.3f')} | {'-' if wm is None else wm['count_unit'][0]} |"
            )
        lines += ["", "Local-optimality messages (one per distinct token choice):", ""]
        for p, r in pa["per_p"].items():
            for a in r["alphas"]:
                lines.append(
                    f"- p = {p}, {a['trajectories']} trajectories, {a['differs_from_opt_in']} examples "
                    f"differ from the optimal tokens: {a['verdict'].upper()}: {a['message']}"
                )
        lines.append("")
    return "\n".join(lines) + "\n"


def write_outputs(summary: dict, root: Path) -> list[Path]:
    """summary.json, report.md and the figures into ``root`` (each atomically)."""
    root = Path(root)
    summary["headline"] = headline(summary)
    clean = clean_json(summary)
    out = [
        write_text_atomic(
            root / "summary.json", json.dumps(clean, indent=1, allow_nan=False) + "\n"
        ),
        write_text_atomic(root / "report.md", markdown(clean)),
        plot_frontier(clean, root / "frontier.png"),
    ]
    for name, entry in clean["modalities"].items():
        out.append(
            plot_paths(name, entry, clean["config"]["threshold"], root / f"paths_{name}.png")
        )
    return out
