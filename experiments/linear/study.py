"""p-GD paths against the certified l_p max-margin direction: run, result, summary (docs/theory.md section 7.5).

`run_pgd(problem, config)` certifies ``w_p`` for every p (`certify.certify_max_margin`, exported as a
float64 unit direction with its rigorous direction error), runs the batched engine
(`experiments.linear.engine`), and measures per (p, lr) group over the initializations: the directional
Bregman divergence ``D_psi(w_p/||w_p||_p, w(k)/||w(k)||_p)`` and its rate verdict with intervals
(`experiments.paths.rates.fit_rates`, floor from the certificate's direction error), the norm growth,
the normalized margin against the certified ``1/OPT``, and the relative-smoothness condition along the
path (`experiments.linear.smoothness`, measured in float64 only). Non-separable data (a Gordan
certificate) are run without a reference: nothing about a direction is claimed.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from certify import certify_max_margin
from certify.classification import ClassificationProblem
from certify.errors import MdcertError
from certify.export import certified_solution
from experiments.linear.engine import PgdConfig, PgdPaths, float_rows, run_pgd_paths
from experiments.linear.smoothness import TOLERANCE, smoothness_margins
from experiments.paths.rates import bregman_floor, clean_json, fit_rates

__all__ = ["PgdRun", "Reference", "references", "run_pgd"]


@dataclass(frozen=True)
class Reference:
    """The certificate behind one p: status, the float64 unit direction (None unless optimal), its
    rigorous direction error, ``1/OPT`` (the certified margin, float, upper end) when optimal, and the
    certificate itself."""

    p: float
    status: str
    direction: np.ndarray | None
    direction_error: float | None
    margin: float | None
    seconds: float
    certificate: object = None


def references(
    problem: ClassificationProblem, ps, *, digits: int = 30, time_limit: float | None = None
) -> dict[float, Reference]:
    """Certify ``w_p`` for each p (docs/theory.md section 7.2) and export its direction as float64."""
    out = {}
    for p in ps:
        t0 = time.perf_counter()
        cert = certify_max_margin(problem, repr(float(p)), digits=digits, time_limit=time_limit)
        if cert.status.value == "optimal":
            sol = certified_solution(cert, problem=problem)
            out[p] = Reference(
                p,
                "optimal",
                np.asarray(sol.direction, dtype=np.float64).ravel(),
                float(sol.direction_error_upper),
                1.0 / float(cert.opt_lower),
                time.perf_counter() - t0,
                cert,
            )
        else:
            out[p] = Reference(
                p, cert.status.value, None, None, None, time.perf_counter() - t0, cert
            )
    return out


def _slope(k: np.ndarray, v: np.ndarray) -> float | None:
    """Least-squares slope of log v against log k over the last decade of k (None if too few points)."""
    sel = (k >= k[-1] / 10) & (k > 0) & (v > 0)
    if sel.sum() < 3:
        return None
    return float(np.polyfit(np.log(k[sel]), np.log(v[sel]), 1)[0])


@dataclass(frozen=True, eq=False)
class PgdRun:
    """One `run_pgd` result: the problem's name and shape, the references, the paths, the group
    measurements (`groups`, JSON-able) and the wall times (certification, training, analysis)."""

    problem: str
    shape: dict
    refs: dict
    paths: PgdPaths
    groups: list
    seconds: dict

    def to_json(self) -> dict:
        cfg = self.paths.config
        return clean_json(
            {
                "kind": "pgd",
                "problem": self.problem,
                "shape": self.shape,
                "config": {
                    "p": list(cfg.ps),
                    "lr": list(cfg.lrs),
                    "inits": cfg.inits,
                    "init_scale": cfg.init_scale,
                    "loss": cfg.loss.value,
                    "normalize": cfg.normalize,
                    "steps": cfg.steps,
                    "seed": cfg.seed,
                },
                "references": {
                    repr(p): {
                        "status": r.status,
                        "direction_error_upper": r.direction_error,
                        "certified_margin": r.margin,
                        "seconds": round(r.seconds, 3),
                    }
                    for p, r in self.refs.items()
                },
                "groups": self.groups,
                "trajectories": [
                    {
                        "p": p,
                        "lr": lr,
                        "init": i,
                        "status": self.paths.status[b].value,
                        "stopped_at": self.paths.stopped_at[b],
                        "final_bregman": None
                        if self.paths.bregman is None
                        else float(self.paths.bregman[b, -1]),
                        "final_norm": float(self.paths.norms[b, -1]),
                        "final_margin": float(self.paths.margin[b, -1]),
                    }
                    for b, (p, lr, i) in enumerate(cfg.grid)
                ],
                "seconds": self.seconds,
                "notes": [
                    (
                        "D_psi and the margins are float64 measurements against a certified direction; the rate "
                        "verdict is a statistical model choice, the smoothness condition a float64 sample"
                    )
                ],
            }
        )

    def lines(self) -> list[str]:
        out = []
        for g in self.groups:
            rate = g["rate"]
            verdict = "no reference" if rate is None else f"{rate['verdict']} ({rate['reason']})"
            d = "-" if g["final_bregman_median"] is None else f"{g['final_bregman_median']:.3g}"
            out.append(
                f"p={g['p']:g} lr={g['lr']:g}: D_psi median {d}, ||w|| {g['final_norm_median']:.3g}, "
                f"statuses {g['statuses']}, rate: {verdict}"
            )
        return out

    def write(self, directory: str | Path) -> None:
        """summary.json, arrays.npz (records) and pgd.png into ``directory`` (an existing empty one)."""
        directory = Path(directory)
        (directory / "summary.json").write_text(
            json.dumps(self.to_json(), indent=1, allow_nan=False) + "\n"
        )
        arrays = {"steps": self.paths.steps, "norms": self.paths.norms, "margin": self.paths.margin}
        if self.paths.bregman is not None:
            arrays["bregman"] = self.paths.bregman
        with open(directory / "arrays.npz", "wb") as fh:
            np.savez(fh, **arrays)
        from experiments.linear.figure import pgd_figure

        pgd_figure(self).savefig(directory / "pgd.png", dpi=110)


def _groups(paths: PgdPaths, refs: dict, A: np.ndarray) -> list:
    cfg = paths.config
    smooth = smoothness_margins(paths, A)
    k = paths.steps
    out = []
    for p in cfg.ps:
        for lr in cfg.lrs:
            rows = [b for b, (pp, ll, _) in enumerate(cfg.grid) if pp == p and ll == lr]
            statuses = {
                s: sum(paths.status[b].value == s for b in rows)
                for s in sorted({paths.status[b].value for b in rows})
            }
            rate, dmed = None, None
            ref = refs[p]
            if paths.bregman is not None:
                D = paths.bregman[rows]
                dmed = float(np.median(D[:, -1]))
                floor = bregman_floor(p, A.shape[1], direction_error=ref.direction_error)
                try:
                    rate = fit_rates(k[1:].astype(float), D[:, 1:], floor=floor).to_json()
                except MdcertError as exc:
                    rate = {"verdict": "inconclusive", "reason": str(exc)}
            slopes = [_slope(k, paths.norms[b]) for b in rows]
            slopes = [s for s in slopes if s is not None]
            sm = None
            if smooth is not None:
                vals = smooth[rows]
                vals = vals[np.isfinite(vals)]
                sm = {
                    "samples": int(vals.size),
                    "violations": int((vals < -TOLERANCE).sum()),
                    "min_value": float(vals.min()) if vals.size else None,
                    "method": "float64 Hessian eigenvalues at the last recorded iterates (measured only)",
                }
            out.append(
                {
                    "p": p,
                    "lr": lr,
                    "statuses": statuses,
                    "final_bregman_median": dmed,
                    "final_norm_median": float(np.median(paths.norms[rows, -1])),
                    "norm_growth_loglog_slope_median": float(np.median(slopes)) if slopes else None,
                    "final_margin_median": float(np.median(paths.margin[rows, -1])),
                    "certified_margin": ref.margin,
                    "rate": rate,
                    "smoothness": sm,
                }
            )
    return out


def run_pgd(
    problem: ClassificationProblem,
    config: PgdConfig,
    *,
    name: str = "problem",
    digits: int = 30,
    time_limit: float | None = None,
) -> PgdRun:
    """Certify, train, measure (module docstring)."""
    t0 = time.perf_counter()
    refs = references(problem, config.ps, digits=digits, time_limit=time_limit)
    t1 = time.perf_counter()
    directions = {p: r.direction for p, r in refs.items()}
    ok = all(d is not None for d in directions.values())
    cpu = time.process_time()
    paths = run_pgd_paths(problem, config, references=directions if ok else None)
    cpu = time.process_time() - cpu
    t2 = time.perf_counter()
    groups = _groups(paths, refs, float_rows(problem))
    t3 = time.perf_counter()
    return PgdRun(
        problem=name,
        shape={
            "n": problem.n,
            "d": problem.d,
            "kind": problem.kind,
            "rows": problem.N,
            "variables": problem.m,
        },
        refs=refs,
        paths=paths,
        groups=groups,
        seconds={
            "certify_wall": round(t1 - t0, 3),
            "train_wall": round(t2 - t1, 3),
            "train_cpu": round(cpu, 3),
            "analysis_wall": round(t3 - t2, 3),
        },
    )
