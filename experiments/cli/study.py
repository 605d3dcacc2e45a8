"""``mdcert study KIND -o DIR``: the paper's transformer experiments (sentiment encoder, small ViT),
offline, with step sizes tuned on validation, several seeds, intervals, causal token tests and pruning
(docs/theory.md section 6.5; the directory: docs/formats.md).

Kinds come from the registry `experiments.studies.kinds.KINDS`. Resumable: rerunning into the same
DIR reuses every finished run (keyed by its configuration) and redoes only what is missing.

Before the first run the study's wall time is estimated (one line on stderr); off a terminal a
progress line follows at least once a minute (`experiments.studies.monitor`). Ctrl-C kills the
worker processes at once, keeps every finished run, prints one line and exits 130; ``study.json``
``status`` ends ``finished``, ``interrupted`` or ``failed``.
"""

from __future__ import annotations

import argparse
import sys
import time

from certify.blas import usable_cpus
from experiments.runtime.progress import show_progress

HELP = "the paper's transformer studies (sentiment, vision): tuned optimizers, seeds, intervals, causal tests, pruning"

__all__ = ["HELP", "configure", "run"]


def configure(parser: argparse.ArgumentParser) -> None:
    from experiments.studies.kinds import get_kind, kind_names

    sub = parser.add_subparsers(dest="kind", metavar="KIND", parser_class=type(parser))
    for name in kind_names():
        kind = get_kind(name)
        p = sub.add_parser(name, help=kind.help, description=kind.help)
        kind.configure(p)
        p.add_argument("-o", "--out", required=True, metavar="DIR",
                       help="study directory (created; rerunning into it reuses finished runs)")
        p.add_argument("--seeds", type=int, default=None, help="final seeds per optimizer (default 5; --quick 2)")
        p.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"),
                       help="auto (CUDA when available), cpu or cuda")
        p.add_argument("--quick", action="store_true", help="a small, fast version of the study (a smoke run)")
        p.add_argument("--lr", type=float, default=None,
                       help="skip tuning: train every optimizer with this step size (one point of a sweep grid)")
        p.add_argument("--seed-start", type=int, default=0, help="final seeds are SEED_START .. SEED_START+SEEDS-1 (default 0)")
        p.add_argument("--threads", type=int, default=1,
                       help="torch intra-op threads per process (default 1: fastest for these small models on a busy CPU)")
        p.add_argument("--workers", type=int, default=None,
                       help="processes running independent runs at once (default: 2 on a CPU with 2 or more cores, 1 on CUDA)")
        p.add_argument("--progress", choices=("auto", "on", "off"), default="auto",
                       help="progress bars with ETA on stderr (auto: only on a terminal; on: always; off: never)")


def run(args: argparse.Namespace) -> int:
    from certify.errors import MdcertError

    if not getattr(args, "kind", None):
        from experiments.studies.kinds import kind_names

        raise MdcertError(f"give a study: mdcert study {{{','.join(kind_names())}}} -o DIR")
    if args.seeds is None:
        args.seeds = 2 if args.quick else 5
    if not 1 <= args.seeds <= 1000:
        raise MdcertError(f"--seeds {args.seeds}: give a number between 1 and 1000")
    if args.lr is not None and not (args.lr > 0 and args.lr < float("inf")):
        raise MdcertError(f"--lr {args.lr}: give a positive finite step size")
    if not 0 <= args.seed_start <= 2 ** 31:
        raise MdcertError(f"--seed-start {args.seed_start}: give an integer between 0 and 2147483648")
    if not 1 <= args.threads <= 1024:
        raise MdcertError(f"--threads {args.threads}: give a number between 1 and 1024")
    from experiments.studies.kinds import get_kind
    from experiments.studies.monitor import Monitor
    from experiments.studies.runner import StudyStatus, check_study_dir, open_study
    from experiments.studies.train import resolve_device, set_determinism

    kind = get_kind(args.kind)
    check_study_dir(args.out, kind=args.kind)
    device = resolve_device(args.device)
    workers = args.workers if args.workers is not None else (1 if device.type == "cuda" else min(2, usable_cpus()))
    if not 1 <= workers <= 256:
        raise MdcertError(f"--workers {args.workers}: give a number of processes between 1 and 256")
    set_determinism(args.threads)
    t0 = time.perf_counter()
    kind.setups(args)           # validate every option (and load the data) before the directory is made
    load_s = time.perf_counter() - t0
    options = {k: v for k, v in sorted(vars(args).items()) if k not in ("out", "progress", "command")}
    progress = {"auto": None, "on": True, "off": False}[args.progress]
    ctx = open_study(args.out, kind=args.kind, options=options, device=device, progress=progress,
                     args=args, workers=workers, threads=args.threads)
    try:
        estimate = kind.predict(args, ctx, startup_s=load_s)
        if estimate is not None and progress is not False:
            print(estimate.line(args.kind), file=sys.stderr, flush=True)
        lines = progress is None and not show_progress(None)        # auto, stderr not a terminal
        with Monitor(args.kind, enabled=lines, estimate=estimate) as ctx.monitor:
            summary = kind.execute(args, ctx)
    except KeyboardInterrupt:
        ctx.set_status(StudyStatus.INTERRUPTED)
        kept = (f"{ctx.trained} run(s) finished now and stored" if kind.unit == "run" else
                f"every {kind.unit} made so far is stored")
        print(f"mdcert study: interrupted; {kept} in {ctx.root / 'runs'} (rerun the same command to resume)",
              file=sys.stderr, flush=True)
        # the interpreter's final collections would traverse the loaded corpus (2.8 s of a loaded
        # machine's exit at load 14; 0.7 s frozen): Ctrl-C must end within seconds
        import gc

        gc.freeze()
        return 130
    except BaseException:
        ctx.set_status(StudyStatus.FAILED)
        raise
    ctx.set_status(StudyStatus.FINISHED)
    print(_timing_line(kind, ctx, summary, time.perf_counter() - t0 - load_s))
    for line in summary.get("headline", []):
        print(line)
    return 0


def _timing_line(kind, ctx, summary: dict, total_s: float) -> str:
    """What ran and how long: the study's wall time as its report states it, the time spent writing
    the report after it, and (when runs ran in workers) the runs' own times summed over workers."""
    wall = (summary.get("timings") or {}).get("wall_s", total_s)
    done = "trained" if kind.unit == "run" else "made"
    text = (f"study {kind.name}: {ctx.trained} {kind.unit}(s) {done} now, {ctx.reused} reused; {wall:.1f} s wall "
            f"(as in report.md) + {max(total_s - wall, 0.0):.1f} s writing the report and figures")
    if ctx.seconds > 0:
        text += (f"; the runs' own times summed over {ctx.workers} worker(s): {ctx.seconds:.1f} s wall, "
                 f"{ctx.cpu_seconds:.1f} s CPU")
    return text + f"; report {ctx.root / 'report.md'}"
