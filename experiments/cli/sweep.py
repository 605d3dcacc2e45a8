"""``mdcert sweep SPEC -o SWEEP``: a grid of single-command jobs (certify, check, synth, paths) on local
worker processes or Ray, one content-keyed record per job, resumable (docs/scaling.md).

Exit codes: 0 every job of the SPEC finished (whatever its verdict), 4 some jobs are recorded failed
(their one-line errors are in SWEEP/index.jsonl and SWEEP/summary.md; rerunning retries them), 1 bad
input (checked before any job starts) or the engine stopped under the sweep (Ray's raylet died),
130 interrupted by SIGINT (Ctrl-C), 143 by SIGTERM (finished records kept, the workers and a local Ray
instance stopped; rerun to resume). A second signal while the sweep stops is ignored.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import signal
import sys
import threading

from certify.blas import usable_cpus

HELP = (
    "run a grid of mdcert jobs (TOML/YAML SPEC) on local workers or Ray; resumable, one record per job; "
    "exit 0 all finished, 4 some failed, 1 bad input, 130 interrupted"
)

__all__ = ["HELP", "configure", "run"]

_ADDRESS = re.compile(r"^(auto|ray://[^\s/:]+:\d{1,5}|[^\s/:]+:\d{1,5})$")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "spec",
        metavar="SPEC",
        help="sweep file (.toml, .yaml): kind and [grid]; see docs/formats.md",
    )
    parser.add_argument(
        "-o",
        "--out",
        required=True,
        metavar="SWEEP",
        help="sweep directory (created; rerunning into it skips finished jobs)",
    )
    parser.add_argument(
        "--engine",
        choices=("local", "ray"),
        default="local",
        help="local worker processes (default) or Ray",
    )
    parser.add_argument(
        "--address",
        default=None,
        help="Ray cluster: auto or ray://HOST:PORT (default: start a local Ray instance and stop it)",
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=None,
        help="local worker processes, or CPUs of a local Ray instance (default: the CPUs available)",
    )
    parser.add_argument(
        "--retries",
        type=int,
        default=2,
        help="extra attempts for a job whose worker process died (default 2)",
    )
    parser.add_argument(
        "--progress",
        choices=("auto", "on", "off"),
        default="auto",
        help="progress bar with ETA on stderr (auto: only on a terminal)",
    )


@contextlib.contextmanager
def stop_signals():
    """SIGINT and SIGTERM raise one KeyboardInterrupt (the first signal's number is in the yielded
    list) and are then ignored while the sweep stops its workers; the old handlers come back at the
    end. Outside the main thread (a library caller's thread) nothing changes."""
    caught: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield caught
        return

    def handler(signum, frame) -> None:
        caught.append(signum)
        if len(caught) == 1:
            raise KeyboardInterrupt

    old = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield caught
    finally:
        for sig, previous in old.items():
            signal.signal(sig, previous)


def _lost(message: str) -> None:
    """The local Ray instance died under the sweep (Ray is about to end this process): one line, exit 1."""
    print(f"mdcert sweep: error: {message}", file=sys.stderr, flush=True)
    sys.stdout.flush()
    os._exit(1)


def _exit_code(caught: list[int]) -> int:
    return 128 + (caught[0] if caught else signal.SIGINT)


def run(args: argparse.Namespace) -> int:
    with stop_signals() as caught:
        try:
            return _run(args, caught)
        except (
            KeyboardInterrupt
        ):  # before or after the jobs ran: nothing of the sweep's is half-done
            what = "terminated (SIGTERM)" if _exit_code(caught) == 143 else "interrupted"
            print(f"mdcert sweep: {what}; rerun the same command to resume", file=sys.stderr)
            return _exit_code(caught)


def _run(args: argparse.Namespace, caught: list[int]) -> int:
    from certify.errors import MdcertError
    from experiments.sweep.runner import run_sweep
    from experiments.sweep.spec import load_spec

    workers = usable_cpus() if args.workers is None else args.workers
    if not 1 <= workers <= 4096:
        raise MdcertError(
            f"invalid --workers {args.workers}; give a number of processes between 1 and 4096"
        )
    if not 0 <= args.retries <= 100:
        raise MdcertError(f"invalid --retries {args.retries}; give a number between 0 and 100")
    if args.address is not None:
        if args.engine != "ray":
            raise MdcertError("--address is for --engine ray; add --engine ray or drop --address")
        if not _ADDRESS.match(args.address.strip()):
            raise MdcertError(f"invalid --address {args.address!r}; give auto or ray://HOST:PORT")
    if not str(args.out).strip():
        raise MdcertError("-o is empty; give a sweep directory")
    spec = load_spec(args.spec)
    kind = spec.kind
    print(
        f"sweep {spec.path.name}: kind {kind}, {spec.size} grid point(s), engine {args.engine}"
        + (f" at {args.address}" if args.address else f" ({workers} worker(s))")
    )
    if args.engine == "ray":
        from experiments.cli.main import skip_interpreter_teardown

        skip_interpreter_teardown(
            "a Ray driver"
        )  # its native threads can crash the teardown after an interrupt
    res = run_sweep(
        spec,
        args.out,
        engine=args.engine,
        workers=workers,
        retries=args.retries,
        address=args.address.strip() if args.address else None,
        progress={"auto": None, "on": True, "off": False}[args.progress],
        on_engine_lost=_lost,
    )
    if res.interrupted:
        what = "terminated (SIGTERM)" if _exit_code(caught) == 143 else "interrupted"
        print(
            f"mdcert sweep: {what}: {res.skipped + res.done + res.failed} of {res.distinct} job(s) recorded "
            f"and kept in {args.out}, {res.pending} left; rerun the same command to resume",
            file=sys.stderr,
        )
        return _exit_code(caught)
    start = (
        (
            f"; engine start-up {res.startup_s:.2f} s wall before the jobs (starting {args.engine} and loading "
            f"mdcert into the workers)"
        )
        if res.done + res.failed
        else ""
    )
    print(
        f"{res.distinct} distinct job(s): {res.skipped} already finished, {res.done} done and {res.failed} failed "
        f"this run in {res.run_s:.2f} s wall (the jobs' own time summed over the workers: {res.job_s:.2f} s)"
        f"{start}"
    )
    print(
        f"index {os.path.join(args.out, 'index.jsonl')}; summary {os.path.join(args.out, 'summary.md')}"
    )
    return 4 if res.failed else 0
