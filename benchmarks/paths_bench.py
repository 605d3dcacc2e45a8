"""Side by side: the batched path engine vs the looped one-trajectory-at-a-time baseline.

Measures, in one process (CPU, float64, the paper's setup n=6, T=8, d=10, normalized steps, lr 0.1,
p = 1.75 / 2 / 3 for 1,500 / 2,000 / 20,000 steps):

1. the looped baseline (`benchmarks/looped_baseline.py`, autograd + a host sync per step) on a
   subset of ``--subset`` trials per p, at the full step counts; its time for all ``--trials`` trials
   is EXTRAPOLATED linearly from the subset (trajectories are independent and equally long);
   ``--module-subset M`` also times the same loop written with the project's AttentionModel +
   LpMirrorDescent optimizer (extrapolated the same way);
2. the batched engine on the same subset (like for like) and on all trials (the real workload);
3. optionally (``--study``) the whole ``mdcert paths`` study, with and without ``--cross``.

Both sides run with one torch intra-op thread (each side's fastest setting on a shared 2-core
machine). Wall time and process CPU time are reported; on a busy machine trust CPU time more.
Usage: ``python benchmarks/paths_bench.py [--trials 100] [--subset 3] [--study]``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

HERE = Path(__file__).resolve().parent
PS = ("1.75", "2", "3")
STEPS = (1500, 2000, 20000)


def _baseline():
    spec = importlib.util.spec_from_file_location("looped_baseline", HERE / "looped_baseline.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _timed(fn):
    w0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - w0, time.process_time() - c0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=100)
    ap.add_argument("--subset", type=int, default=3, help="baseline trials per p (default 3)")
    ap.add_argument(
        "--module-subset",
        type=int,
        default=0,
        help="also time the AttentionModel + LpMirrorDescent loop on this many trials per p",
    )
    ap.add_argument(
        "--study", action="store_true", help="also time the whole 'mdcert paths' study (+ --cross)"
    )
    ap.add_argument("--json", default=None, help="write the numbers to this JSON file")
    args = ap.parse_args()

    from certify import synthetic_problem
    from experiments.paths.engine import run_paths

    torch.set_num_threads(1)
    lb = _baseline()
    problems = [synthetic_problem(seed=t) for t in range(args.trials)]
    W0 = torch.randn(
        (args.trials, 10, 10), generator=torch.Generator().manual_seed(0), dtype=torch.float64
    ).numpy()
    res: dict = {
        "machine": f"{os.cpu_count()} CPUs",
        "torch": torch.__version__,
        "trials": args.trials,
        "subset": args.subset,
        "load_before": os.getloadavg(),
    }

    # 1. looped baseline on the subset
    base = {}
    for p, K in zip(PS, STEPS):
        _, wall, cpu = _timed(
            lambda: lb.train_many(
                problems[: args.subset],
                W0[: args.subset],
                [p] * args.subset,
                [0.1] * args.subset,
                [K] * args.subset,
                normalize=True,
            )
        )
        base[p] = {
            "steps": K,
            "wall_s": wall,
            "cpu_s": cpu,
            "us_per_step_wall": wall / (K * args.subset) * 1e6,
        }
        print(
            f"baseline p={p}: {args.subset} x {K} steps in {wall:.2f}s wall / {cpu:.2f}s CPU "
            f"({base[p]['us_per_step_wall']:.0f} us/step)"
        )
    if args.module_subset > 0:
        mod = {}
        for p, K in zip(PS, STEPS):
            m = args.module_subset
            _, wall, cpu = _timed(
                lambda: lb.train_many(
                    problems[:m], W0[:m], [p] * m, [0.1] * m, [K] * m, normalize=True, impl="module"
                )
            )
            mod[p] = {
                "steps": K,
                "trials": m,
                "wall_s": wall,
                "cpu_s": cpu,
                "us_per_step_cpu": cpu / (K * m) * 1e6,
            }
            print(
                f"module baseline (AttentionModel + LpMirrorDescent) p={p}: {m} x {K} steps in {wall:.2f}s wall / "
                f"{cpu:.2f}s CPU ({mod[p]['us_per_step_cpu']:.0f} us/step CPU)"
            )
        res["module_baseline_extrapolated_all"] = {
            "per_p": mod,
            "cpu_s": sum(v["cpu_s"] * args.trials / v["trials"] for v in mod.values()),
            "wall_s": sum(v["wall_s"] * args.trials / v["trials"] for v in mod.values()),
        }
    sub_wall = sum(b["wall_s"] for b in base.values())
    sub_cpu = sum(b["cpu_s"] for b in base.values())
    scale = args.trials / args.subset
    res["baseline_subset"] = {"per_p": base, "wall_s": sub_wall, "cpu_s": sub_cpu}
    res["baseline_extrapolated_all"] = {
        "wall_s": sub_wall * scale,
        "cpu_s": sub_cpu * scale,
        "note": f"linear extrapolation from {args.subset} to {args.trials} trials per p",
    }

    def engine(ntr: int):
        di = np.tile(np.arange(ntr), len(PS))
        ps = [p for p in PS for _ in range(ntr)]
        st = [K for K in STEPS for _ in range(ntr)]
        return run_paths(
            problems,
            data_index=di,
            p=ps,
            lr=[0.1] * len(ps),
            steps=st,
            W0=W0[di],
            normalize=True,
            records=64,
        )

    # 2. the engine on the same subset, and on everything
    _, wall, cpu = _timed(lambda: engine(args.subset))
    res["engine_subset"] = {"wall_s": wall, "cpu_s": cpu}
    print(
        f"engine  subset ({len(PS) * args.subset} trajectories): {wall:.2f}s wall / {cpu:.2f}s CPU "
        f"-> {sub_wall / wall:.1f}x (wall), {sub_cpu / cpu:.1f}x (CPU) vs the baseline on the same subset"
    )
    _, wall, cpu = _timed(lambda: engine(args.trials))
    res["engine_all"] = {"wall_s": wall, "cpu_s": cpu}
    ex_w, ex_c = (
        res["baseline_extrapolated_all"]["wall_s"],
        res["baseline_extrapolated_all"]["cpu_s"],
    )
    res["speedup_all_wall"] = ex_w / wall
    res["speedup_all_cpu"] = ex_c / cpu
    print(
        f"engine  all ({len(PS) * args.trials} trajectories): {wall:.2f}s wall / {cpu:.2f}s CPU; baseline "
        f"extrapolated {ex_w:.0f}s wall / {ex_c:.0f}s CPU -> {ex_w / wall:.0f}x (wall), {ex_c / cpu:.0f}x (CPU)"
    )

    if "module_baseline_extrapolated_all" in res:
        mb = res["module_baseline_extrapolated_all"]
        res["speedup_all_vs_module_cpu"] = mb["cpu_s"] / cpu
        print(
            f"module baseline extrapolated {mb['wall_s']:.0f}s wall / {mb['cpu_s']:.0f}s CPU -> "
            f"{mb['wall_s'] / wall:.0f}x (wall), {mb['cpu_s'] / cpu:.0f}x (CPU)"
        )

    # 3. the whole study through the CLI (training + certified SVMs + analysis + files)
    if args.study:
        for extra in ([], ["--cross"]):
            with tempfile.TemporaryDirectory() as tmp:
                cmd = [
                    sys.executable,
                    "-m",
                    "experiments.cli.main",
                    "paths",
                    "--trials",
                    str(args.trials),
                    "--p",
                    ",".join(PS),
                    "--steps",
                    ",".join(map(str, STEPS)),
                    "--lr",
                    "0.1",
                    "--normalize",
                    "--device",
                    "cpu",
                    "--progress",
                    "off",
                    "-o",
                    str(Path(tmp) / "run"),
                ] + extra
                t0 = time.perf_counter()
                subprocess.run(cmd, check=True, cwd=HERE.parent)
                wall = time.perf_counter() - t0
                s = json.loads((Path(tmp) / "run" / "summary.json").read_text())
                key = "study_cross" if extra else "study"
                res[key] = {
                    "wall_s": wall,
                    "elapsed_s": s["elapsed_s"],
                    "timings_s": s["timings_s"],
                    "certificates": s["certificates"],
                    "per_p": [
                        {
                            k: e.get(k)
                            for k in ("p", "steps", "bregman_final_mean", "bregman_final_std")
                        }
                        | {
                            "verdict": (e.get("rate_fit") or {}).get("verdict"),
                            "reason": (e.get("rate_fit") or {}).get("reason"),
                            "log_a": ((e.get("rate_fit") or {}).get("log") or {}).get("exponent"),
                            "log_a_ci95": ((e.get("rate_fit") or {}).get("log") or {}).get("ci"),
                            "power_b": ((e.get("rate_fit") or {}).get("power") or {}).get(
                                "exponent"
                            ),
                            "power_b_ci95": ((e.get("rate_fit") or {}).get("power") or {}).get(
                                "ci"
                            ),
                        }
                        for e in s["per_p"]
                    ],
                }
                print(
                    f"study{' --cross' if extra else ''}: {wall:.1f}s wall (summary elapsed {s['elapsed_s']:.1f}s, "
                    f"training {s['timings_s']['train']:.1f}s, {s['certificates']['unique']} certified SVMs)"
                )
    res["load_after"] = os.getloadavg()
    print(json.dumps(res, indent=1, default=float))
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=1, default=float))


if __name__ == "__main__":
    main()
