"""Per-step time of LpMirrorDescent vs torch.optim.SGD and Adam, side by side in one process.

Usage:
    python benchmarks/optimizer_step.py            # 10M float32 parameters
    python benchmarks/optimizer_step.py --quick    # 1M parameters, fewer repeats
    python benchmarks/optimizer_step.py --nocache  # also the fast path without the dual cache
    python benchmarks/optimizer_step.py --no-fused # skip the fused (compiled) rows
    python benchmarks/optimizer_step.py --lean --lr 0.01 --repeats 31
                                                   # SGD, Adam fused, fused LpMD rows, p = 2 only
    python benchmarks/optimizer_step.py --lean --lr 0.01 --repeats 31 --runs 5
                                                   # five fresh processes, then each row's ratios
                                                   # (min / median / max over the processes)
    python benchmarks/optimizer_step.py --device cuda --lean --lr 0.01 --repeats 31
                                                   # on a GPU: SGD, Adam fused, each p's default
                                                   # (foreach) LpMD path and fused=True (Triton)
    python benchmarks/optimizer_step.py --step-threads auto,1,2 --busy 2
                                                   # LpMD rows per write-phase thread count, beside
                                                   # two busy-loop processes (a loaded machine)

The fused rows (``LpMirrorDescent(fused=True)``, p != 2) compile their kernel before timing; the
compile time is printed (about 30 s per exponent the first time on 2 cores, seconds from inductor's
on-disk cache) and is not part of the step times.

Each optimizer gets its own parameter (same size, same random gradient), a warm-up of a few steps,
then the median wall time of ``--repeats`` steps (interleaved rounds, so background load hits every
row alike); beside them the mean process CPU time per step (all threads, spin-waits included) and
its ratios, the comparable figure on a loaded machine. Threads: torch's default (printed). The lr (``--lr``, default 1e-6) is the same for all
optimizers; it is small so that no step overflows. ``--step-threads`` gives each LpMD row one
variant per write-phase thread count (``LpMirrorDescent(threads=...)``; ``auto`` is the default
automatic choice, see experiments/optim/threads.py). ``--busy K`` starts K busy-loop processes for
the duration of the run (stopped at the end). Printed beside the wall times: the 1-minute load
before and after, and the process CPU time of the timed rounds.

``--shuffle`` times the rows in a new (seeded) order each round: under busy loops the step times
fall into scheduler slices, and a row that always follows the same neighbour can keep landing on
the same side of one. ``--runs K`` repeats the whole measurement in K fresh processes, one after the other, and ends with
each row's ratios to SGD and to fused Adam over them (min / median / max). On the 2-core VM the
spread between processes (where the tensors' memory landed) was wider than within one: fused Adam
took 9.1-13.0 ms in four processes a minute apart, each a median of 31 steps (benchmarks/README.md),
so a "<= 1.0x" is judged on the K processes, not on one.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import time

import torch

from experiments.optim.buffers import huge_bytes
from experiments.optim.optimizer import LpMirrorDescent


def _make(kind: str, param: torch.nn.Parameter, lr: float = 1e-6):
    if kind == "SGD":
        return torch.optim.SGD([param], lr=lr)
    if kind == "SGD foreach":
        return torch.optim.SGD([param], lr=lr, foreach=True)
    if kind == "Adam foreach":
        return torch.optim.Adam([param], lr=lr, foreach=True)
    if kind == "Adam fused":
        return torch.optim.Adam([param], lr=lr, fused=True)
    name, p, path, *rest = kind.split()
    p = p.split("=")[1]
    threads = None
    if rest and rest[0] != "t=auto":
        threads = int(rest[0].split("=")[1])
    if path == "default":  # what a user gets: foreach on CUDA, the cached-dual path on CPU
        return LpMirrorDescent([param], lr=lr, p=p, threads=threads)
    if path == "simple":
        opt = LpMirrorDescent([param], lr=lr, p=p, differentiable=False, foreach=False)
        opt._single = _simple_only(opt)  # force the reference path
        return opt
    return LpMirrorDescent(
        [param],
        lr=lr,
        p=p,
        foreach=(path == "foreach"),
        cache_dual=(path != "nocache"),
        fused=(path == "fused"),
        threads=threads,
    )


def _simple_only(opt: LpMirrorDescent):
    from experiments.optim.optimizer import simple_update

    def single(job):
        gi, pi, group, param, lr, exact = job
        opt._check_grad(gi, pi, param.grad, exact, lr)
        new = simple_update(
            param.detach(), param.grad, lr, exact, group["maximize"], group["normalize_gradient"]
        )
        opt._check_result(gi, pi, param, new, exact, lr)
        return lambda: param.detach().copy_(new)

    return single


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="1M parameters and fewer repeats")
    ap.add_argument(
        "--size", type=int, default=None, help="number of float32 parameters (default 10M)"
    )
    ap.add_argument("--repeats", type=int, default=None)
    ap.add_argument("--simple", action="store_true", help="also time the simple (reference) path")
    ap.add_argument(
        "--nocache", action="store_true", help="also time the fast path with cache_dual=False"
    )
    ap.add_argument(
        "--threads", type=int, default=None, help="torch.set_num_threads (default: torch's choice)"
    )
    ap.add_argument(
        "--no-fused", dest="fused", action="store_false", help="skip the fused (compiled) rows"
    )
    ap.add_argument(
        "--lr",
        type=float,
        default=1e-6,
        help="step size of every optimizer (default 1e-6; from about 1e-3 on, float32 LpMD steps "
        "check the gradient with G.G instead of the cheaper G.sum())",
    )
    ap.add_argument(
        "--step-threads",
        default=None,
        help="comma list of LpMD write-phase thread counts, e.g. auto,1,2 (default: auto only)",
    )
    ap.add_argument("--busy", type=int, default=0, help="busy-loop processes beside the run")
    ap.add_argument(
        "--lean",
        action="store_true",
        help="only SGD, Adam fused, the fused LpMD rows and p = 2 (no foreach, no eager p != 2)",
    )
    ap.add_argument("--ps", default="1.1,1.75,2,3", help="comma list of LpMD exponents")
    ap.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    ap.add_argument(
        "--device", default="cpu", help="where the parameters live (cuda: synchronized timings)"
    )
    ap.add_argument(
        "--shuffle", action="store_true", help="a new (seeded) row order in every timed round"
    )
    ap.add_argument(
        "--runs", type=int, default=1, help="fresh processes to repeat the run in (ratio spread)"
    )
    args = ap.parse_args(argv)
    if args.runs < 1:
        ap.error("--runs must be at least 1")
    if args.runs > 1:
        return _spread(list(sys.argv[1:] if argv is None else argv), args.runs)
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.busy)]
    try:
        return _run(args)
    finally:
        for proc in busy:
            proc.kill()
            proc.wait()


def _run(args) -> int:
    if args.threads:
        torch.set_num_threads(args.threads)
    n = args.size or (1_000_000 if args.quick else 10_000_000)
    repeats = args.repeats or (5 if args.quick else 11)
    kinds = (
        ["SGD", "Adam fused"] if args.lean else ["SGD", "SGD foreach", "Adam foreach", "Adam fused"]
    )
    cuda = args.device.startswith("cuda")
    if cuda:
        print(
            "on CUDA: 'default' rows are LpMirrorDescent's default path (foreach), 'fused' rows "
            "fused=True (the compiled Triton step of experiments.optim.cudastep; p != 2)"
        )
    suffixes = [""]
    if args.step_threads:
        suffixes = [f" t={t.strip()}" for t in args.step_threads.split(",")]
    for p in args.ps.split(","):
        for suffix in suffixes:
            if cuda:
                kinds.append(f"LpMD p={p} default{suffix}")
                if args.fused and p != "2":
                    kinds.append(f"LpMD p={p} fused{suffix}")
                continue
            if not (args.lean and p != "2"):
                kinds.append(f"LpMD p={p} fast{suffix}")
            if args.fused:
                # the C kernel follows the thread choice; inductor's loop keeps torch's count
                kinds.append(f"LpMD p={p} fused{suffix}")
            if args.nocache and p != "2":
                kinds.append(f"LpMD p={p} nocache{suffix}")
        if args.simple and not cuda:
            kinds.append(f"LpMD p={p} simple")
    gen = torch.Generator().manual_seed(0)
    dtype = getattr(torch, args.dtype)
    grad = torch.randn(n, generator=gen, dtype=dtype).to(args.device)
    sync = torch.cuda.synchronize if args.device.startswith("cuda") else (lambda: None)
    runs = {}
    for kind in kinds:
        param = torch.nn.Parameter(torch.randn(n, generator=gen, dtype=dtype).to(args.device))
        param.grad = grad.clone()
        runs[kind] = (param, _make(kind, param, args.lr))
    for kind, (_, opt) in runs.items():  # warm-up (the fused rows compile here)
        t0 = time.perf_counter()
        opt.step()
        if "fused" in kind:
            print(
                f"{kind}: first step (compiles the kernel) {time.perf_counter() - t0:.1f} s",
                flush=True,
            )
        opt.step()
    _print_pages(runs)
    times: dict[str, list[float]] = {k: [] for k in kinds}
    cpu: dict[str, float] = {k: 0.0 for k in kinds}
    load0, cpu0, wall0 = os.getloadavg()[0], time.process_time(), time.perf_counter()
    order = list(runs.items())
    for r in range(repeats):
        if args.shuffle:  # a new row order each round: no row keeps one place in a periodic load
            random.Random(r).shuffle(order)
        for kind, (_, opt) in order:
            sync()
            c0, t0 = time.process_time(), time.perf_counter()
            opt.step()
            sync()
            times[kind].append(time.perf_counter() - t0)
            cpu[kind] += time.process_time() - c0
    med = {k: statistics.median(v) * 1e3 for k, v in times.items()}
    cpu = {k: v / repeats * 1e3 for k, v in cpu.items()}
    best = {k: min(v) * 1e3 for k, v in times.items()}
    print(
        f"torch {torch.__version__}, threads {torch.get_num_threads()}, {n:,} {args.dtype} parameters "
        f"on {args.device}, "
        f"lr {args.lr:g}, median of {repeats} steps; 1-minute load {load0:.2f} -> "
        f"{os.getloadavg()[0]:.2f}, timed rounds {time.perf_counter() - wall0:.1f} s wall, "
        f"{time.process_time() - cpu0:.1f} s CPU, {args.busy} busy loops"
        + (", rows shuffled each round" if args.shuffle else "")
    )
    width = max(22, max(len(k) for k in kinds) + 2)
    print(
        f"{'optimizer':<{width}}{'median ms':>10}{'min ms':>9}{'x SGD':>8}{'x Adam fused':>14}"
        f"{'CPU ms':>9}{'CPU x SGD':>11}{'CPU x Adam':>12}   (ratios of medians; CPU: mean per step)"
    )
    for kind in kinds:
        print(
            f"{kind:<{width}}{med[kind]:>10.2f}{best[kind]:>9.2f}{med[kind] / med['SGD']:>8.2f}"
            f"{med[kind] / med['Adam fused']:>14.2f}{cpu[kind]:>9.2f}{cpu[kind] / cpu['SGD']:>11.2f}"
            f"{cpu[kind] / cpu['Adam fused']:>12.2f}"
        )
    return 0


def _print_pages(runs) -> None:
    """One line: how much of each row's state tensors sits on transparent huge pages (the fused
    LpMD dual and its spare are advised onto them, `experiments.optim.buffers`; torch's are not)."""
    parts = []
    for kind, (param, opt) in runs.items():
        state = [
            t for t in opt.state.get(param, {}).values() if torch.is_tensor(t) and t.numel() > 1
        ]
        state += [t for t in getattr(opt, "_spares", {}).values() if torch.is_tensor(t)]
        if not state or param.device.type != "cpu":
            continue
        huge = [huge_bytes(t) for t in state]
        if None in huge:
            return
        total = sum(t.nbytes for t in state)
        parts.append(f"{kind} {sum(huge) / 2**20:.0f}/{total / 2**20:.0f}")
    if parts:
        print("state tensors on huge pages (MiB): " + ", ".join(parts), flush=True)


def _spread(argv: list[str], runs: int) -> int:
    """Run this script ``runs`` times in fresh processes (``--runs`` dropped), echo each table, then
    print each row's ratios to SGD and to fused Adam over the processes."""
    inner, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg == "--runs":
            skip = True
        elif not arg.startswith("--runs="):
            inner.append(arg)
    ratios: dict[str, list[tuple[float, float, float]]] = {}
    for k in range(runs):
        done = subprocess.run(
            [sys.executable, os.path.abspath(__file__), *inner], capture_output=True, text=True
        )
        print(f"# process {k + 1} of {runs} (exit {done.returncode})\n{done.stdout}", flush=True)
        if done.returncode != 0:
            print(done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "no message")
            return done.returncode
        for line in done.stdout.splitlines():
            fields = line.split()
            if len(fields) < 8:
                continue
            try:
                nums = [float(x) for x in fields[-7:]]
            except ValueError:
                continue
            kind = line[: line.index(fields[-7])].strip()
            ratios.setdefault(kind, []).append((nums[0], nums[2], nums[3]))
    print(
        f"# over {runs} fresh processes: each row's median ms and its ratios to SGD and to fused "
        "Adam (min / median / max; each process a median of its interleaved steps)"
    )
    print(f"{'optimizer':<24}{'median ms':>22}{'x SGD':>22}{'x Adam fused':>22}")
    for kind, rows in ratios.items():
        cols = []
        for i in range(3):
            vals = sorted(r[i] for r in rows)
            cols.append(f"{vals[0]:.2f} / {statistics.median(vals):.2f} / {vals[-1]:.2f}")
        print(f"{kind:<24}" + "".join(f"{c:>22}" for c in cols))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
