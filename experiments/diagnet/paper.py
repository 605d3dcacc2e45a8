"""``mdcert signdescent --preset paper``: the set-ups of arXiv 2410.14158 reproduced as measurements
with certified references (docs/theory.md section 8.5).

Parts (each a `Part`: a name, its JSON-ready config, and a function of that config):

- ``fig1``: gaussian N = 2, D = 5, alpha = 0.1, eps in {0.002, 0.01}: smoothed sign descent with a
  step small against eps, side by side with the SciPy ODE reference (`experiments.diagnet.ode`);
  measured: the largest |beta_discrete - beta_ode| at the recorded times;
- ``fig2``: block N = 1, D = 2: beta(t) for several eps;
- ``eps_block`` / ``eps_gaussian``: an eps grid for gd, sign and Adam on data inside (block,
  Assumptions 3.2 and 3.8) and outside (gaussian) the paper's assumptions: proven delta bounds,
  measured distances to the certified min-l_{3/2} / min-l2 interpolators, proven distance bounds to
  the minimizer of E (its Fig. 3 style);
- ``adam``: Adam with beta1 = 0.9, beta2 in {0.9, 0.999} and small eps against smoothed sign descent
  at the same eps (measured only: no theorem covers Adam with momentum).

A part's result is a JSON file ``parts/NAME.json`` holding its config; a rerun with the same config
reuses it (resumable: parts are kept in ``RUN.parts/`` until the run directory is complete).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from certify.regression import regression_problem
from experiments.diagnet.engine import Rule
from experiments.diagnet.study import SignConfig, run_signdescent

__all__ = ["Part", "config_key", "paper_parts", "part_problem", "run_part"]


@dataclass(frozen=True)
class Part:
    name: str
    config: dict
    run: Callable[[dict], dict]


#: the layout of a part's result; a record of another layout is never reused (2: references ``lp``,
#: ``l2``, ``psi`` and rows ``dist_lp`` / ``dist_psi`` instead of ``l32`` / ``dist_l32``)
RECORD_SCHEMA = 2


def config_key(config: dict) -> str:
    """The reuse key of a part: its config and `RECORD_SCHEMA`."""
    keyed = {"schema": RECORD_SCHEMA, **config}
    return hashlib.sha256(json.dumps(keyed, sort_keys=True).encode()).hexdigest()[:16]


def part_problem(cfg: dict):
    """The seeded regression data a part's config names (``data``, ``N``, ``D``, ``seed``)."""
    return regression_problem(cfg["data"], N=cfg["N"], D=cfg.get("D"), seed=cfg.get("seed", 0))


def _sign_run(cfg: dict, rules: tuple[str, ...], betas=(0.9, 0.999)) -> tuple[dict, object]:
    problem = part_problem(cfg)
    sc = SignConfig(
        rules=tuple(Rule(r) for r in rules),
        eps=tuple(cfg["eps"]),
        alpha=(cfg["alpha"],),
        lr=(cfg["lr"],),
        steps=cfg["steps"],
        record_every=max(1, cfg["steps"] // 100),
        betas=tuple(betas),
    )
    res = run_signdescent(problem, sc)
    return res.to_json(), res


def _trajectories(cfg: dict) -> dict:
    """fig1 / fig2: sign paths (one per eps) with certified facts; fig1 adds the ODE reference."""
    from experiments.diagnet.ode import ode_reference

    summary, res = _sign_run(cfg, ("sign",))
    p = res.paths["sign"]
    t = np.asarray(p["steps"]) * cfg["lr"]
    out = {"summary": summary, "time": t.tolist(), "beta": np.asarray(p["beta"]).tolist()}
    if cfg.get("ode"):
        t1 = time.perf_counter()
        odes, gaps = [], []
        for j, e in enumerate(cfg["eps"]):
            _, b = ode_reference(
                part_problem(cfg), eps=e, alpha=cfg["alpha"], t_end=float(t[-1]), t_eval=t
            )
            odes.append(b.tolist())
            gaps.append(float(np.abs(np.asarray(p["beta"])[j] - b).max()))
        out.update(ode_beta=odes, ode_max_gap=gaps, ode_seconds=round(time.perf_counter() - t1, 2))
    return out


def _eps_grid(cfg: dict) -> dict:
    summary, _ = _sign_run(cfg, tuple(cfg["rules"]))
    return {"summary": summary}


def _adam(cfg: dict) -> dict:
    """Adam (beta1 = 0.9, each beta2) and sign at the same eps: measured distances between final betas."""
    sign_summary, sign = _sign_run(cfg, ("sign",))
    beta_sign = np.asarray(sign.paths["sign"]["beta"])[:, -1]
    out = {"sign": sign_summary, "adam": {}}
    for b2 in cfg["beta2"]:
        summary, res = _sign_run(cfg, ("adam",), betas=(0.9, b2))
        beta = np.asarray(res.paths["adam"]["beta"])[:, -1]
        out["adam"][str(b2)] = {
            "summary": summary,
            "dist_to_sign": [float(np.linalg.norm(a - s)) for a, s in zip(beta, beta_sign)],
        }
    return out


def paper_parts(*, quick: bool = False) -> list[Part]:
    """The preset's parts; ``quick`` shortens every horizon (the whole preset within about a minute)."""
    k = 5 if quick else 1  # quick: 5x larger steps over 5x fewer steps (same time horizons)
    grid = [1e-3, 3e-3, 1e-2, 3e-2, 0.1] if quick else [1e-3, 2e-3, 5e-3, 1e-2, 2e-2, 5e-2, 0.1]
    horizon = (
        {"lr": 1e-3, "steps": 10_000} if quick else {"lr": 4e-4, "steps": 100_000}
    )  # t = 10 / 40
    return [
        Part(
            "fig1",
            {
                "data": "gaussian",
                "N": 2,
                "D": 5,
                "seed": 0,
                "alpha": 0.1,
                "eps": [0.002, 0.01],
                "lr": 1e-4 * k,
                "steps": 80_000 // k,
                "ode": True,
            },
            _trajectories,
        ),
        Part(
            "fig2",
            {
                "data": "block",
                "N": 1,
                "seed": 0,
                "alpha": 0.1,
                "eps": [1e-3, 1e-2, 0.05, 0.2],
                "lr": 1e-4 * k,
                "steps": 50_000 // k,
            },
            _trajectories,
        ),
        Part(
            "eps_block",
            {
                "data": "block",
                "N": 5,
                "seed": 0,
                "alpha": 0.1,
                "eps": grid,
                "rules": ["gd", "sign", "adam"],
                **horizon,
            },
            _eps_grid,
        ),
        Part(
            "eps_gaussian",
            {
                "data": "gaussian",
                "N": 5,
                "D": 10,
                "seed": 0,
                "alpha": 0.1,
                "eps": grid,
                "rules": ["gd", "sign", "adam"],
                **horizon,
            },
            _eps_grid,
        ),
        Part(
            "adam",
            {
                "data": "block",
                "N": 5,
                "seed": 0,
                "alpha": 0.1,
                "eps": [1e-8, 1e-6, 1e-4, 1e-3, 1e-2],
                "beta2": [0.9, 0.999],
                **horizon,
            },
            _adam,
        ),
    ]


def run_part(part: Part, cache: list[Path]) -> tuple[dict, bool]:
    """(the part's record, whether it was reused): a record in one of ``cache`` (directories) with the
    same config is reused; else the part runs. The record holds config, key, result and wall seconds."""
    key = config_key(part.config)
    for d in cache:
        f = d / f"{part.name}.json"
        if f.is_file():
            try:
                rec = json.loads(f.read_text())
            except (OSError, ValueError):
                continue
            if isinstance(rec, dict) and rec.get("key") == key and rec.get("config") == part.config:
                return rec, True
    t0 = time.perf_counter()
    result = part.run(part.config)
    return {
        "name": part.name,
        "config": part.config,
        "key": key,
        "result": result,
        "seconds_wall": round(time.perf_counter() - t0, 2),
    }, False
