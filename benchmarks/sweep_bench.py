"""``mdcert sweep`` against one process, per-job overhead, driver memory (issue 14's targets).

Parts (each prints markdown rows with the 1-minute load average before and after):
  study     the synthetic study's 300 certified SVMs (the globally optimal tokens of 100 seeded
            problems x p in {1.75, 2, 3}, as ``mdcert paths`` certifies them) as a certify sweep on
            2 local workers and on a local 2-CPU Ray, against the same 300 ``mdcert certify``
            commands run one after another in one process (both after the same imports; Ray's and
            the workers' start-up reported separately); every certificate's direction error is
            checked below the study's 1e-12.
  overhead  1,000 trivial jobs (``mdcert synth --n 2 --T 2 --d 2``) on Ray and locally: per-job
            overhead = (workers x wall - sum of the commands' own seconds) / jobs.
  memory    a 10^4-job sweep (trivial synth jobs) in a fresh driver process, which reports its
            own peak RSS (VmHWM of /proc/self/status: the driver alone, workers excluded; not
            ru_maxrss, which keeps the parent's RSS from before exec) and its peak after the first
            10^3 results, to show that memory does not grow with the jobs.

Usage: python benchmarks/sweep_bench.py [study] [overhead] [memory] [--jobs 10000] [--repeats 1]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from experiments.sweep.kinds import get_kind  # noqa: E402
from experiments.sweep.runner import run_sweep  # noqa: E402
from experiments.sweep.spec import load_spec  # noqa: E402

STUDY_SPEC = """kind = "certify"
description = "the synthetic study's 300 certified SVMs: globally optimal tokens, 100 problems x 3 p"
[grid]
problem = ["data/*.npz"]
p = ["1.75", "2", "3"]
alpha = ["opt"]
digits = [30]
"""


def load() -> float:
    return os.getloadavg()[0]


def make_study(folder: Path, trials: int = 100) -> Path:
    """100 seeded problems as ``mdcert paths --seed 0`` draws them (seed 1_000_000*0 + t)."""
    from certify import synthetic_problem

    (folder / "data").mkdir(parents=True, exist_ok=True)
    for t in range(trials):
        synthetic_problem(n=6, T=8, d=10, seed=t).save(folder / "data" / f"t{t:03d}.npz")
    spec = folder / "study.toml"
    spec.write_text(STUDY_SPEC)
    return spec


def one_process(spec_path: Path, out: Path) -> float:
    """The same certifications as single ``mdcert certify`` commands, one after another, in this process."""
    import importlib

    from experiments.cli.main import main

    for module in get_kind("certify").preload:
        importlib.import_module(module)
    spec = load_spec(spec_path)
    out.mkdir()
    t0 = time.perf_counter()
    for i, (values, _) in enumerate(spec.points()):
        argv = get_kind("certify").argv(values, out / str(i))
        (out / str(i)).mkdir()
        with contextlib.redirect_stdout(io.StringIO()):
            code = main(argv)
        assert code in (0, 2, 3), argv
    return time.perf_counter() - t0


def check_study(out: Path) -> str:
    from fractions import Fraction

    statuses: dict[str, int] = {}
    worst = Fraction(0)
    for rec in out.glob("records/*/*/record.json"):
        r = json.loads(rec.read_text())
        statuses[r["verdict"] or "failed"] = statuses.get(r["verdict"] or "failed", 0) + 1
        if r["verdict"] == "optimal":
            cert = json.loads((rec.parent / "cert.json").read_text())
            worst = max(worst, Fraction(cert["direction_error_upper"]))
    return f"{statuses}, worst certified direction error {float(worst):.1e}"


def part_study(repeats: int) -> None:
    with tempfile.TemporaryDirectory(prefix="sweep-bench-") as tmp:
        folder = Path(tmp)
        spec_path = make_study(folder)
        spec = load_spec(spec_path)
        notes = []
        print(
            "| run | engine | start-up s | jobs wall s | ratio to one process | job wall s (sum) | job CPU s (sum) | load before/after |"
        )
        print("|---|---|---|---|---|---|---|---|")
        for r in range(repeats):
            l0 = load()
            c0 = time.process_time()
            base = one_process(spec_path, folder / f"single{r}")
            print(
                f"| {r} | one process (300 commands) | - | {base:.2f} | 1.00 | {base:.2f} | "
                f"{time.process_time() - c0:.2f} | {l0:.2f} / {load():.2f} |"
            )
            for engine in ("local", "ray"):
                l0 = load()
                out = folder / f"{engine}{r}"
                res = run_sweep(spec, out, engine=engine, workers=2, progress=False)
                assert res.done == 300 and res.failed == 0, res
                cpu = sum(
                    json.loads(t)["cpu_seconds"]
                    for t in (out / "index.jsonl").read_text().splitlines()
                )
                print(
                    f"| {r} | {engine}, 2 workers | {res.startup_s:.2f} | {res.run_s:.2f} | "
                    f"{res.run_s / base:.2f} (with start-up {(res.run_s + res.startup_s) / base:.2f}) | "
                    f"{res.job_s:.2f} | {cpu:.2f} | {l0:.2f} / {load():.2f} |"
                )
                notes.append(f"certificates ({engine}, run {r}): {check_study(out)}")
        print("\n".join(["", *notes]))


def trivial_spec(folder: Path, jobs: int) -> Path:
    spec = folder / f"trivial{jobs}.toml"
    spec.write_text(
        f'kind = "synth"\n[grid]\nseed = {{ start = 0, stop = {jobs} }}\nn = [2]\nT = [2]\nd = [2]\n'
    )
    return spec


def part_overhead(jobs: int = 1000) -> None:
    with tempfile.TemporaryDirectory(prefix="sweep-bench-") as tmp:
        spec = load_spec(trivial_spec(Path(tmp), jobs))
        print(
            "| engine | jobs | start-up s | wall s | wall per job ms | sum of command s | overhead per job ms | load before/after |"
        )
        print("|---|---|---|---|---|---|---|---|")
        for engine in ("ray", "local"):
            l0 = load()
            res = run_sweep(spec, Path(tmp) / engine, engine=engine, workers=2, progress=False)
            assert res.done == jobs, res
            over = (2 * res.run_s - res.job_s) / jobs * 1e3
            print(
                f"| {engine} | {jobs} | {res.startup_s:.2f} | {res.run_s:.2f} | {res.run_s / jobs * 1e3:.1f} | "
                f"{res.job_s:.2f} | {over:.1f} | {l0:.2f} / {load():.2f} |"
            )


def peak_rss_mib() -> float:
    """This process's peak resident set (VmHWM), MiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def memory_child(spec_path: str, out: str, engine: str) -> None:
    """Run one sweep in this process and print its own peak RSS (MiB), also after 10^3 results."""
    from experiments.sweep import runner

    marks: dict[str, float] = {}
    real = runner.Store.append_index
    count = [0]

    def counting(self, line):
        count[0] += 1
        if count[0] == 1000:
            marks["after_1000"] = peak_rss_mib()
        return real(self, line)

    runner.Store.append_index = counting
    t0 = time.perf_counter()
    res = run_sweep(load_spec(spec_path), out, engine=engine, workers=2, progress=False)
    peak = peak_rss_mib()
    print(
        json.dumps(
            {
                "done": res.done,
                "failed": res.failed,
                "wall_s": time.perf_counter() - t0,
                "run_s": res.run_s,
                "startup_s": res.startup_s,
                "peak_rss_mib": peak,
                **marks,
            }
        )
    )


def part_memory(jobs: int, engines: list[str]) -> None:
    with tempfile.TemporaryDirectory(prefix="sweep-bench-") as tmp:
        spec = trivial_spec(Path(tmp), jobs)
        print(
            "| engine | jobs | driver peak RSS MiB | peak after 1,000 results MiB | wall s | load before/after |"
        )
        print("|---|---|---|---|---|---|")
        for engine in engines:
            l0 = load()
            env = {**os.environ, "PYTHONPATH": str(ROOT)}
            proc = subprocess.run(
                [
                    sys.executable,
                    __file__,
                    "memory-child",
                    str(spec),
                    str(Path(tmp) / engine),
                    engine,
                ],
                capture_output=True,
                text=True,
                env=env,
                check=True,
            )
            m = json.loads(proc.stdout.strip().splitlines()[-1])
            assert m["done"] == jobs, m
            print(
                f"| {engine} | {jobs} | {m['peak_rss_mib']:.0f} | {m.get('after_1000', float('nan')):.0f} | "
                f"{m['wall_s']:.1f} | {l0:.2f} / {load():.2f} |"
            )


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "memory-child":
        memory_child(*sys.argv[2:5])
        return
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("parts", nargs="*", default=["study", "overhead", "memory"])
    ap.add_argument(
        "--jobs", type=int, default=10_000, help="jobs of the memory sweep (default 10^4)"
    )
    ap.add_argument(
        "--repeats", type=int, default=1, help="repeats of the study comparison (default 1)"
    )
    ap.add_argument(
        "--memory-engines",
        default="local,ray",
        help="engines of the memory part (default local,ray)",
    )
    args = ap.parse_args()
    print(
        f"# sweep_bench {time.strftime('%Y-%m-%d %H:%M:%S %Z')}, {os.cpu_count()} CPUs, uptime: "
        f"{subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}"
    )
    if "study" in args.parts:
        part_study(args.repeats)
    if "overhead" in args.parts:
        part_overhead()
    if "memory" in args.parts:
        part_memory(args.jobs, args.memory_engines.split(","))


if __name__ == "__main__":
    main()
