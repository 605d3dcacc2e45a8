"""``mdcert study KIND -o DIR`` in the application layer's shape (`experiments.commands`).

The paper's transformer experiments and the real-data study (docs/theory.md sections 6.5 and 6.6; the
directory: docs/formats.md). `add_arguments` builds one sub-parser per kind of
`experiments.studies.kinds.KINDS` (the kind's own options and the common ones); `Config` is the
frozen, picklable configuration (the common options as fields, the kind's own in ``kind_options``,
read as attributes: ``config.size``) that the kinds and the worker processes receive; `run` opens or
resumes the study directory, runs the kind and returns a `Result`.

Resumable: rerunning into the same DIR reuses every finished run (keyed by its configuration,
`experiments.runtime.store`). Before the first run the wall time is estimated (one line on stderr);
off a terminal a progress line follows at least once a minute (`experiments.studies.monitor`).
Ctrl-C kills the worker processes at once and keeps every finished run: the `Result` is then
``interrupted`` (exit code 130); ``study.json`` ``status`` ends ``finished``, ``interrupted`` or
``failed``.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from certify.errors import MdcertError

__all__ = ["COMMON", "Config", "Result", "add_arguments", "run"]

#: the options every kind takes (the fields of `Config`); argparse's ``command`` is not one
COMMON = (
    "kind",
    "out",
    "seeds",
    "device",
    "quick",
    "lr",
    "seed_start",
    "threads",
    "workers",
    "progress",
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """One sub-parser per study kind: the kind's own options, then ``-o`` and the common ones."""
    from experiments.studies.kinds import get_kind, kind_names

    sub = parser.add_subparsers(dest="kind", metavar="KIND", parser_class=type(parser))
    for name in kind_names():
        kind = get_kind(name)
        p = sub.add_parser(name, help=kind.help, description=kind.help)
        kind.configure(p)
        p.add_argument(
            "-o",
            "--out",
            required=True,
            metavar="DIR",
            help="study directory (created; rerunning into it reuses finished runs)",
        )
        p.add_argument(
            "--seeds",
            type=int,
            default=None,
            help="final seeds per optimizer (default 5; --quick 2)",
        )
        p.add_argument(
            "--device",
            default="auto",
            choices=("auto", "cpu", "cuda"),
            help="auto (CUDA when available), cpu or cuda",
        )
        p.add_argument(
            "--quick", action="store_true", help="a small, fast version of the study (a smoke run)"
        )
        p.add_argument(
            "--lr",
            type=float,
            default=None,
            help="skip tuning: train every optimizer with this step size (one point of a sweep grid)",
        )
        p.add_argument(
            "--seed-start",
            type=int,
            default=0,
            help="final seeds are SEED_START .. SEED_START+SEEDS-1 (default 0)",
        )
        p.add_argument(
            "--threads",
            type=int,
            default=1,
            help="torch intra-op threads per process (default 1: fastest for these small models on a busy CPU)",
        )
        p.add_argument(
            "--workers",
            type=int,
            default=None,
            help="processes running independent runs at once (default: 2 on a CPU with 2 or more cores, 1 on CUDA)",
        )
        p.add_argument(
            "--progress",
            choices=("auto", "on", "off"),
            default="auto",
            help="progress bars with ETA on stderr (auto: only on a terminal; on: always; off: never)",
        )
    # the sign-descent paper's set-ups are a command of their own (`mdcert signdescent --preset
    # paper`, experiments.diagnet.paper); listed here too, where a user looks for a study
    sd = sub.add_parser(
        "signdescent",
        help="arXiv 2410.14158's set-ups with certified references: the same as 'mdcert "
        "signdescent --preset paper'",
        description="arXiv 2410.14158's set-ups (Figs. 1-3, eps grids, Adam) with certified "
        "references and delta-KKT bounds; runs 'mdcert signdescent --preset paper'",
    )
    sd.add_argument("-o", "--out", required=True, metavar="DIR", help="study directory")
    sd.add_argument("--quick", action="store_true", help="short horizons (about a minute)")
    sd.add_argument("--no-figures", action="store_true", help="write no PNG files")
    sd.add_argument("--threads", type=int, default=None, help="torch threads (default: automatic)")
    sd.add_argument(
        "--overwrite", action="store_true", help="rewrite a finished run (its parts are reused)"
    )


@dataclass(frozen=True, kw_only=True)
class Config:
    """A validated ``mdcert study`` invocation (frozen, hashable, picklable: it travels to workers).

    Attributes:
        kind: the study kind; out: the study directory.
        seeds: final seeds (default 5, ``quick`` 2); seed_start: the first one.
        device: ``auto``, ``cpu`` or ``cuda``; quick: the small preset.
        lr: one step size for every optimizer (no tuning), or None.
        threads: torch threads per process; workers: processes (None: the default of the device).
        progress: ``auto``, ``on`` or ``off``.
        kind_options: the kind's own options as sorted ``(name, value)`` pairs, read as attributes
            (``config.size``; an absent one raises AttributeError, so ``getattr(config, NAME, default)``
            works as on an argparse namespace).
    """

    kind: str
    out: str
    seeds: int = 5
    device: str = "auto"
    quick: bool = False
    lr: float | None = None
    seed_start: int = 0
    threads: int = 1
    workers: int | None = None
    progress: str = "auto"
    kind_options: tuple[tuple[str, Any], ...] = field(default=())

    def __getattr__(self, name: str) -> Any:
        # only reached for names that are not fields (and never during unpickling of the fields)
        if name.startswith("_") or name == "kind_options":
            raise AttributeError(name)
        for key, value in self.__dict__.get("kind_options", ()):
            if key == name:
                return value
        raise AttributeError(f"study {self.__dict__.get('kind')!r} has no option {name!r}")

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> "Config":
        """Validate the parsed options (``vars(args)``); bad input is one `MdcertError` line."""
        kind = options.get("kind")
        if not kind:
            from experiments.studies.kinds import kind_names

            raise MdcertError(f"give a study: mdcert study {{{','.join(kind_names())}}} -o DIR")
        quick = bool(options.get("quick", False))
        seeds = options.get("seeds")
        seeds = (2 if quick else 5) if seeds is None else seeds
        if not 1 <= seeds <= 1000:
            raise MdcertError(f"--seeds {seeds}: give a number between 1 and 1000")
        lr = options.get("lr")
        if lr is not None and not (lr > 0 and lr < float("inf")):
            raise MdcertError(f"--lr {lr}: give a positive finite step size")
        seed_start = options.get("seed_start", 0)
        if not 0 <= seed_start <= 2**31:
            raise MdcertError(
                f"--seed-start {seed_start}: give an integer between 0 and 2147483648"
            )
        threads = options.get("threads", 1)
        if not 1 <= threads <= 1024:
            raise MdcertError(f"--threads {threads}: give a number between 1 and 1024")
        workers = options.get("workers")
        if workers is not None and not 1 <= workers <= 256:
            raise MdcertError(f"--workers {workers}: give a number of processes between 1 and 256")
        if options.get("optimizers") is not None:  # each name known (the grids come with the kind)
            from experiments.studies.train import parse_optimizer

            for text in str(options["optimizers"]).split(","):
                parse_optimizer(text)
        own = tuple(
            sorted(
                (k, tuple(v) if isinstance(v, list) else v)  # hashable, frozen
                for k, v in options.items()
                if k not in COMMON and k != "command"
            )
        )
        return cls(
            kind=str(kind),
            out=str(options.get("out")),
            seeds=int(seeds),
            device=options.get("device", "auto"),
            quick=quick,
            lr=lr,
            seed_start=seed_start,
            threads=threads,
            workers=workers,
            progress=options.get("progress", "auto"),
            kind_options=own,
        )

    def recorded(self) -> dict[str, Any]:
        """The options recorded in ``study.json`` (sorted; no ``out`` or ``progress``)."""
        common = {k: getattr(self, k) for k in COMMON if k not in ("out", "progress")}
        return dict(sorted({**common, **dict(self.kind_options)}.items()))


@dataclass(frozen=True)
class Result:
    """What a study invocation did: the counts and times of the summary line, the report's headline,
    or that it was interrupted (``exit_code`` 130; every finished run is stored)."""

    kind: str
    unit: str
    root: Path
    trained: int
    reused: int
    workers: int
    seconds: float
    cpu_seconds: float
    wall_s: float
    total_s: float
    headline: tuple[str, ...] = ()
    interrupted: bool = False

    @property
    def exit_code(self) -> int:
        return 130 if self.interrupted else 0

    def write(self, out: str | Path | None = None) -> None:
        """Nothing left to write: the study directory is written as the study runs (each record
        atomically, the report at the end)."""

    def notice(self) -> str:
        """The one stderr line of an interrupted study."""
        kept = (
            f"{self.trained} run(s) finished now and stored"
            if self.unit == "run"
            else f"every {self.unit} made so far is stored"
        )
        return (
            f"mdcert study: interrupted; {kept} in {self.root / 'runs'} (rerun the same command to "
            f"resume)"
        )

    def lines(self, width: int = 100) -> list[str]:
        """What ran and how long (the study's wall time as its report states it, the writing time
        after it, the runs' own times summed over workers), then the report's headline. Not
        wrapped: ``width`` is accepted for the common shape."""
        if self.interrupted:
            return []
        done = "trained" if self.unit == "run" else "made"
        text = (
            f"study {self.kind}: {self.trained} {self.unit}(s) {done} now, {self.reused} reused; "
            f"{self.wall_s:.1f} s wall (as in report.md) + {max(self.total_s - self.wall_s, 0.0):.1f} s "
            f"writing the report and figures"
        )
        if self.seconds > 0:
            text += (
                f"; the runs' own times summed over {self.workers} worker(s): {self.seconds:.1f} s wall, "
                f"{self.cpu_seconds:.1f} s CPU"
            )
        return [text + f"; report {self.root / 'report.md'}", *self.headline]


def run(config: Config) -> Result:
    """Open or resume the study directory, run the kind (resumable), write its report."""
    from experiments.runtime.progress import show_progress
    from certify.blas import usable_cpus
    from experiments.studies.kinds import get_kind
    from experiments.studies.monitor import Monitor
    from experiments.studies.runner import StudyStatus, check_study_dir, open_study
    from experiments.studies.train import resolve_device, set_determinism
    from experiments.studies.worker import StudyWorker

    kind = get_kind(config.kind)
    check_study_dir(config.out, kind=config.kind)
    device = resolve_device(config.device)
    workers = (
        config.workers
        if config.workers is not None
        else (1 if device.type == "cuda" else min(2, usable_cpus()))
    )
    set_determinism(config.threads)
    t0 = time.perf_counter()
    kind.setups(config)  # validate every option (and load the data) before the directory is made
    load_s = time.perf_counter() - t0
    progress = {"auto": None, "on": True, "off": False}[config.progress]
    ctx = open_study(
        config.out,
        kind=config.kind,
        options=config.recorded(),
        device=device,
        progress=progress,
        config=config,
        workers=workers,
        threads=config.threads,
        remote=StudyWorker(config.kind, config, config.threads),
    )

    def result(summary: dict, *, interrupted: bool = False) -> Result:
        total = time.perf_counter() - t0 - load_s
        return Result(
            kind.name,
            kind.unit,
            ctx.root,
            ctx.trained,
            ctx.reused,
            ctx.workers,
            ctx.seconds,
            ctx.cpu_seconds,
            (summary.get("timings") or {}).get("wall_s", total),
            total,
            tuple(summary.get("headline", [])),
            interrupted,
        )

    try:
        estimate = kind.predict(config, ctx, startup_s=load_s)
        if estimate is not None and progress is not False:
            print(estimate.line(config.kind), file=sys.stderr, flush=True)
        lines = progress is None and not show_progress(None)  # auto, stderr not a terminal
        with Monitor(config.kind, enabled=lines, estimate=estimate) as ctx.monitor:
            summary = kind.execute(config, ctx)
    except KeyboardInterrupt:
        ctx.set_status(StudyStatus.INTERRUPTED)
        return result({}, interrupted=True)
    except BaseException:
        ctx.set_status(StudyStatus.FAILED)
        raise
    ctx.set_status(StudyStatus.FINISHED)
    return result(summary)
