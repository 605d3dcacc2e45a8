"""The run directory of ``mdcert signdescent --preset paper`` (docs/theory.md section 8.5,
docs/formats.md): ``summary.json``, ``report.md``, ``parts/NAME.json`` and the figures.

Parts run one after another; each finished part is kept in ``RUN.parts/`` (next to RUN) until the run
directory is complete, so an interrupted run resumes where it stopped, and a rerun of a complete run
(``--overwrite``) with the same config reuses ``RUN/parts/``.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import numpy as np

from experiments.diagnet.paper import paper_parts, part_problem, run_part

__all__ = ["PAPER_KIND", "report_lines", "run_paper"]

#: the run kind in the directory's marker (``--overwrite`` replaces only a run of this kind)
PAPER_KIND = "signdescent-paper"


def run_paper(out: str | Path, *, quick: bool, overwrite: bool, echo=print) -> Path:
    from certify.io.jsonenc import dumps
    from experiments.runtime.outputs import run_dir

    out = Path(out)
    cache = Path(f"{out}.parts")
    cache.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    records = []
    for part in paper_parts(quick=quick):
        rec, reused = run_part(part, [cache, out / "parts"])
        tmp = cache / f".{part.name}.json.tmp-{os.getpid()}"
        tmp.write_text(dumps(rec) + "\n")
        tmp.replace(cache / f"{part.name}.json")
        records.append(rec)
        echo(
            f"part {part.name}: {'reused (same config)' if reused else 'ran'} in {rec['seconds_wall']} s wall"
        )
    wall = round(time.perf_counter() - t0, 2)
    load = [round(x, 2) for x in os.getloadavg()]
    summary = {
        "kind": PAPER_KIND,
        "quick": quick,
        "parts": {
            r["name"]: {"config": r["config"], "key": r["key"], "seconds_wall": r["seconds_wall"]}
            for r in records
        },
        "seconds_wall_this_invocation": wall,
        "load_average_1_5_15": load,
    }
    with run_dir(out, kind=PAPER_KIND, overwrite=overwrite) as tmp:
        (tmp / "parts").mkdir()
        for r in records:
            (tmp / "parts" / f"{r['name']}.json").write_text(dumps(r) + "\n")
        figures = _figures(tmp, records)
        summary["figures"] = figures
        (tmp / "summary.json").write_text(dumps(summary, indent=1) + "\n")
        (tmp / "report.md").write_text("\n".join(report_lines(records, summary)) + "\n")
    shutil.rmtree(cache, ignore_errors=True)
    return out


def _figures(d: Path, records: list[dict]) -> list[str]:
    from experiments.diagnet.figures import have_matplotlib, plot_trajectories, plot_vs_eps

    if not have_matplotlib():
        return []
    out = []
    for r in records:
        cfg, res = r["config"], r["result"]
        shape = f"{cfg['data']} N = {cfg['N']}, D = {cfg.get('D') or 2 * cfg['N']}"
        if r["name"] in ("fig1", "fig2"):
            ode = None
            if "ode_beta" in res:
                ode = [(np.asarray(res["time"]), np.asarray(b)) for b in res["ode_beta"]]
            plot_trajectories(
                d / f"{r['name']}.png",
                time=np.asarray(res["time"]),
                beta=np.asarray(res["beta"]),
                eps=cfg["eps"],
                ode=ode,
                title=f"{r['name']}: smoothed sign descent, {shape}, "
                f"alpha = {cfg['alpha']}, lr = {cfg['lr']:g}" + (" (crosses: ODE)" if ode else ""),
            )
            out.append(f"{r['name']}.png")
        elif r["name"].startswith("eps_"):
            plot_vs_eps(
                d / f"{r['name']}.png",
                res["summary"]["trajectories"],
                title=f"{r['name']}: {shape}, alpha = {cfg['alpha']}, lr = {cfg['lr']:g}, {cfg['steps']} steps",
            )
            out.append(f"{r['name']}.png")
        elif r["name"] == "adam":
            rows = [dict(t, rule="sign") for t in res["sign"]["trajectories"]]
            plot_vs_eps(
                d / "adam.png",
                rows
                + [dict(t, rule="adam") for t in res["adam"]["0.999"]["summary"]["trajectories"]],
                title=f"adam (beta = (0.9, 0.999)) vs smoothed sign: {shape}, lr = {cfg['lr']:g} (measured)",
            )
            out.append("adam.png")
    return out


def _fmt(x) -> str:
    return "n/a" if x is None else f"{x:.3g}"


def assumption_line(cfg: dict) -> str:
    """Whether a part's data and grid are inside arXiv 2410.14158's setting, decided exactly
    (`theorems.signdescent`; docs/theory.md section 8.6): Assumptions 3.2 and 3.8 on the data, 3.3 on
    every (eps, alpha) pair of the part's grid."""
    from theorems.signdescent import assumption_3_2, assumption_3_3, assumption_3_8

    problem = part_problem(cfg)
    alphas = cfg["alpha"] if isinstance(cfg["alpha"], list) else [cfg["alpha"]]
    verdicts = {}
    for e in cfg["eps"]:
        for a in alphas:
            verdicts.setdefault(
                assumption_3_3(problem, eps=e, alpha=a).verdict.value.upper(), []
            ).append(f"eps = {e:g}" + (f", alpha = {a:g}" if len(alphas) > 1 else ""))
    grid = "; ".join(f"{v} at {', '.join(where)}" for v, where in verdicts.items())
    return (
        f"Inside the theorems' setting? (exact; docs/theory.md 8.6) Assumption 3.2: "
        f"{assumption_3_2(problem).verdict.value.upper()}; 3.8: {assumption_3_8(problem).verdict.value.upper()}; "
        f"3.3 (eqs. 18-19, alpha = {', '.join(f'{a:g}' for a in alphas)}): {grid}."
    )


def report_lines(records: list[dict], summary: dict) -> list[str]:
    """report.md: every number names its rule, eps, whether it is proven or measured, and wall times."""
    L = [
        "# Smoothed sign descent: the paper's set-ups (mdcert signdescent --preset paper)",
        "",
        (
            "Measured: float64 training runs (beta, loss, stage steps, distances in l2 between float vectors, "
            "wall seconds). Proven: `delta <=` (section 8.4, outward-rounded balls from the exact final weights), "
            "`||beta_f - argmin E|| <=` (section 8.4), the reference optima (section 8.3; the distance of each "
            "certified point to the true optimizer is bounded in summary.json as `distance_upper`). No theorem "
            "covers Adam with momentum: its rows are measurements only."
        ),
        "",
        (
            f"Wall time of this invocation: {summary['seconds_wall_this_invocation']} s (reused parts count 0); "
            f"load average (1, 5, 15 min) at the end: {summary['load_average_1_5_15']}."
        ),
        "",
    ]
    for r in records:
        cfg, res = r["config"], r["result"]
        L += [
            f"## {r['name']}",
            "",
            f"config: `{json.dumps(cfg)}`; part wall time {r['seconds_wall']} s.",
            "",
            assumption_line(cfg),
            "",
        ]
        if r["name"] in ("fig1", "fig2"):
            L += _traj_table(res["summary"]["trajectories"])
            if "ode_max_gap" in res:
                L += [
                    "",
                    "ODE reference (SciPy LSODA, rtol 1e-9), measured max_t,i |beta_discrete - beta_ode| at the "
                    "recorded times: "
                    + ", ".join(
                        f"eps {e:g}: {g:.2e}" for e, g in zip(cfg["eps"], res["ode_max_gap"])
                    )
                    + f" (ODE wall {res['ode_seconds']} s).",
                ]
        elif r["name"].startswith("eps_"):
            L += _refs(res["summary"]) + [""] + _traj_table(res["summary"]["trajectories"])
        else:
            L += (
                _refs(res["sign"])
                + [""]
                + ["sign (smoothed sign descent, same eps):", ""]
                + _traj_table(res["sign"]["trajectories"])
            )
            for b2, a in res["adam"].items():
                L += [
                    "",
                    f"Adam beta = (0.9, {b2}); `to sign` = measured ||beta_adam - beta_sign||_2 at the same eps:",
                    "",
                ]
                L += _traj_table(a["summary"]["trajectories"], extra=a["dist_to_sign"])
        L.append("")
    return L


def _refs(summary: dict) -> list[str]:
    ref = summary["references"]
    return [
        (
            f"certified references: min ||beta||_{ref['lp']['p']} = {ref['lp']['opt']} (distance of the "
            f"certified point <= {float(_frac(ref['lp']['distance_upper'])):.1e}), min ||beta||_2 = "
            f"{ref['l2']['opt']}"
            + "".join(
                f", min Q_alpha at alpha = {a} (the gradient-descent limit) = {v['opt']}"
                for a, v in ref.get("psi", {}).items()
                if isinstance(v, dict) and "opt" in v
            )
            + "."
        )
    ]


def _frac(text: str):
    from certify.exact import parse_fraction

    return parse_fraction(text)


def _traj_table(rows: list[dict], extra: list[float] | None = None) -> list[str]:
    head = (
        "| rule | eps | lr | status | final loss (measured) | delta <= (proven) | to min-l3/2 (measured) | "
        "to min-l2 (measured) | to gd limit (measured) | to argmin E <= (proven) | "
        "T0, T (steps, measured) | lr > eps |"
    )
    if extra is not None:
        head += " to sign (measured) |"
    L = [head, "|" + "---|" * (head.count("|") - 1)]
    for j, t in enumerate(rows):
        cells = [
            t["rule"],
            f"{t['eps']:g}",
            f"{t['lr']:g}",
            t["status"],
            f"{t['final_loss']:.2e}",
            _fmt(t.get("delta_upper_float")),
            _fmt(t.get("dist_lp")),
            _fmt(t.get("dist_l2")),
            _fmt(t.get("dist_psi")),
            _fmt(t.get("distance_to_E_opt_upper_float")),
            f"{t['t0_step']}, {t['t_step']}",
            "yes" if t["lr_vs_eps"] else "no",
        ]
        if extra is not None:
            cells.append(f"{extra[j]:.3g}")
        L.append("| " + " | ".join(cells) + " |")
    return L
