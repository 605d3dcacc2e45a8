"""At which horizon does the rate verdict stop being inconclusive? (docs/theory.md section 6.3)

Reads a ``mdcert paths`` run directory and refits the decay curves of every (p, lr) group on the
records ``k <= H`` for each horizon H (`experiments.paths.rates.rates_by_horizon`, the same floor as
the run's summary): verdict, curve state, both exponents with their intervals and the held-out margin.
The reference SVM of each trajectory is the one of its final attention at the run's last step (a
horizon H < K uses the direction the path converges to, not the SVM of its attention at step H).

Usage: ``python benchmarks/paths_horizons.py RUN [--horizons 1e3,1e4,1e5,1e6] [--tail 0.01 | --start K]
[--average geometric|arithmetic] [--json OUT]``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from experiments.paths.plots import load_run  # noqa: E402
from experiments.paths.rates import bregman_floor, clean_json, rates_by_horizon  # noqa: E402
from experiments.paths.text import interval_text  # noqa: E402


def horizon_rows(
    run_dir: str | Path,
    horizons,
    *,
    tail: float = 0.01,
    start: int = 3,
    bootstrap: int = 1000,
    average: str = "geometric",
) -> list:
    """One dict per (p, lr, horizon): verdict, state, exponents with intervals, held-out errors."""
    summary, arrays = load_run(run_dir)
    if "bregman" not in arrays:
        raise SystemExit(f"{run_dir}: no Bregman curves (run without --no-certify)")
    rows = []
    d = arrays["W"].shape[-1]
    for e in summary["per_p"]:
        sel = np.flatnonzero(
            (arrays["p_exact"] == e["p_exact"]) & np.isclose(arrays["lr"], e["lr"])
        )
        steps = arrays["record_steps"][sel[0]]
        valid = steps >= 0
        err = arrays["direction_error_upper"][sel]
        worst = float(np.nanmax(err)) if np.any(np.isfinite(err)) else None
        floor = bregman_floor(float(e["p"]), d * d, direction_error=worst)
        table = rates_by_horizon(
            steps[valid],
            arrays["bregman"][sel][:, valid],
            horizons,
            tail_fraction=tail,
            start=start,
            floor=floor,
            bootstrap=bootstrap,
            average=average,
        )
        for H, fit in table.items():
            row = {"p": e["p_text"], "lr": e["lr"], "horizon": H, "trajectories": int(sel.size)}
            if isinstance(fit, str):
                row.update(verdict="not fitted", reason=fit)
            else:
                s = fit.selection
                row.update(
                    verdict=fit.verdict.value,
                    state=fit.state.value,
                    reason=s.reason,
                    window_from=fit.tail_from,
                    a=fit.fits["log"].exponent,
                    a_ci=fit.fits["log"].ci,
                    b=fit.fits["power"].exponent,
                    b_ci=fit.fits["power"].ci,
                    error_log=s.error_log,
                    error_power=s.error_power,
                    difference=s.difference,
                    difference_ci=s.difference_ci,
                    trials=fit.trials,
                )
            rows.append(row)
    return rows


def markdown(rows: list) -> str:
    """The rows as a markdown table."""
    out = [
        "| p | horizon | window from | verdict | state | (log k)^-a: a | k^-b: b | held-out error log / power "
        "(difference [95%]) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        if r["verdict"] == "not fitted":
            out.append(f"| {r['p']} | {r['horizon']:.0e} | | not fitted | | | | {r['reason']} |")
            continue
        dci = interval_text(r["difference_ci"])
        out.append(
            f"| {r['p']} | {r['horizon']:.0e} | {r['window_from']} | **{r['verdict']}** | {r['state']} | "
            f"{r['a']:.3g}{interval_text(r['a_ci'])} | {r['b']:.3g}{interval_text(r['b_ci'])} | "
            f"{r['error_log']:.3g} / {r['error_power']:.3g} ({r['difference']:.3g}{dci}) |"
        )
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run")
    ap.add_argument("--horizons", default="1e3,1e4,1e5,1e6")
    ap.add_argument("--tail", type=float, default=0.01, help="window k >= TAIL * H (default 0.01)")
    ap.add_argument(
        "--start", type=int, default=3, help="and k >= START (a fixed start: --tail 0 --start 100)"
    )
    ap.add_argument("--bootstrap", type=int, default=1000)
    ap.add_argument("--average", choices=["geometric", "arithmetic"], default="geometric")
    ap.add_argument("--json", default=None, help="also write the rows as JSON")
    args = ap.parse_args(argv)
    horizons = [int(float(h)) for h in args.horizons.split(",")]
    rows = horizon_rows(
        args.run,
        horizons,
        tail=args.tail,
        start=args.start,
        bootstrap=args.bootstrap,
        average=args.average,
    )
    print(markdown(rows))
    if args.json:
        Path(args.json).write_text(json.dumps(clean_json(rows), indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
