"""The study directory and its resumable runs (docs/theory.md section 6.5).

    DIR/study.json          kind, options, mdcert's study format, the runs of the last invocation
    DIR/runs/KEY.json       one record per finished run (training, and the analyses of a final run)
    DIR/summary.json, DIR/report.md, DIR/*.png   written by the kind's report at the end

A run is identified by the SHA-256 of its configuration (canonical JSON, with `FORMAT`); the records
are a `experiments.runtime.store.RunStore` (``DIR/runs``): a record is written through a temporary name
and renamed, so it is whole or absent, and `StudyContext.run_unit`
returns a finished record instead of redoing it: an interrupted study resumes where it stopped, and a
second invocation with the same options trains nothing. A directory holding anything but a study
of the same kind is refused before any work.

This module is the store and the scheduling only: it imports no study kind. Runs in worker processes
call the context's ``remote`` (`experiments.studies.worker.StudyWorker`: it rebuilds the kind's set-ups
in the worker), given by whoever opens the study.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Callable, Sequence

from certify.errors import MdcertError
from certify.io import jsonenc
from certify.io.jsonenc import jsonable

from experiments.runtime.outputs import write_text_atomic
from experiments.runtime.store import RunStore, content_key

__all__ = [
    "FORMAT",
    "StudyStatus",
    "run_key",
    "Unit",
    "StudyContext",
    "check_study_dir",
    "open_study",
    "dumps",
]

FORMAT = "mdcert-study-1"
META = "study.json"
RUNS = "runs"


class StudyStatus(Enum):
    """``study.json`` ``status``: ``running`` while an invocation works, then how it ended."""

    RUNNING = "running"
    FINISHED = "finished"
    INTERRUPTED = "interrupted"  #: Ctrl-C: finished runs are kept, a rerun resumes
    FAILED = "failed"  #: an error stopped it: finished runs are kept


def dumps(obj) -> str:
    """Strict JSON text (no NaN), indented, sorted keys."""
    return jsonenc.dumps(obj, indent=1, sort_keys=True) + "\n"


def run_key(config: dict) -> str:
    """SHA-256 hex of the canonical JSON of ``config`` and `FORMAT` (`experiments.runtime.store.content_key`)."""
    return content_key({"format": FORMAT, "config": config})


@dataclass(frozen=True)
class Unit:
    """One run: its configuration (the key), a label, the in-process work, and ``where`` (what a
    worker process needs to rebuild it: study, size, phase, optimizer key, step size, seed)."""

    config: dict
    label: str
    local: Callable[[], dict]
    where: tuple


@dataclass
class StudyContext:
    """What a study kind runs with: its directory, device, progress, worker processes and the run store.

    ``seconds`` / ``cpu_seconds`` sum the runs trained now (each run's own wall and CPU time, in
    whichever process ran it): with several workers their sum exceeds the study's wall time.
    ``monitor`` (an `experiments.studies.monitor.Monitor`) hears of every stage and finished run.
    ``config`` is the command's frozen configuration (the kinds read it); ``remote`` runs a unit's
    ``where`` in a worker process (``remote(where) -> (result, seconds, cpu_seconds)``, with
    ``remote.init(parent_pid)`` as the workers' initializer; picklable): without it every run is
    in-process."""

    root: Path
    kind: str
    device: object
    progress: bool | None = None
    config: object = None
    workers: int = 1
    threads: int = 1
    trained: int = 0
    reused: int = 0
    keys: list[str] = field(default_factory=list)
    seconds: float = 0.0
    cpu_seconds: float = 0.0
    options: dict = field(default_factory=dict)
    monitor: object = None
    remote: object = None
    t_start: float = field(default_factory=time.perf_counter)

    @property
    def store(self) -> RunStore:
        """The run records, ``root/runs/KEY.json``."""
        return RunStore(self.root / RUNS)

    def record_path(self, key: str) -> Path:
        return self.store.path(key)

    def load(self, key: str) -> dict | None:
        """The finished record ``key``, or None (an unreadable record counts as absent)."""
        found = self.store.read_json(key)
        return found if isinstance(found, dict) else None

    def run_unit(self, config: dict, work: Callable[[dict], dict], *, label: str = "") -> dict:
        """The record of ``config``: read if finished, else ``work(config)`` stored atomically."""
        key = run_key(config)
        self.keys.append(key)
        found = self.load(key)
        if found is not None and found.get("config") == jsonable(config):
            self.reused += 1
            return found
        t0, c0 = time.perf_counter(), time.process_time()
        result = work(config)
        unit = Unit(config, label, lambda: result, ())
        return self._store(unit, key, result, time.perf_counter() - t0, time.process_time() - c0)

    def _store(self, unit: Unit, key: str, result: dict, seconds: float, cpu: float) -> dict:
        record = {
            "key": key,
            "label": unit.label,
            "config": unit.config,
            "seconds": seconds,
            "cpu_seconds": cpu,
            "load": os.getloadavg()[0],
            "result": result,
        }
        self.store.write_text(key, dumps(record))
        self.trained += 1
        self.seconds += seconds
        self.cpu_seconds += cpu
        if self.monitor is not None:
            self.monitor.finished(seconds)
        return json.loads(dumps(record))

    def run_units(self, units: Sequence[Unit], desc: str) -> list[dict]:
        """The records of ``units`` in order: finished ones read, the others run, in ``workers``
        processes when there are several (each record is the same as in-process: a run depends only
        on its configuration and the thread count). Each record is stored the moment its run ends, so
        an interrupted call (Ctrl-C: `KeyboardInterrupt`) loses only the runs in flight; their worker
        processes are killed before the exception leaves (`_run_in_pool`)."""
        records: list = [None] * len(units)
        pending = []
        for i, u in enumerate(units):
            key = run_key(u.config)
            self.keys.append(key)
            found = self.load(key)
            if found is not None and found.get("config") == jsonable(u.config):
                records[i] = found
                self.reused += 1
            else:
                pending.append((i, key))
        if self.monitor is not None:
            self.monitor.stage(desc, len(units) - len(pending), len(units))
        with self.bar(len(units), desc) as bar:
            bar.update(len(units) - len(pending))
            if self.workers <= 1 or len(pending) <= 1 or self.remote is None:
                for i, key in pending:
                    t0, c0 = time.perf_counter(), time.process_time()
                    result = units[i].local()
                    records[i] = self._store(
                        units[i], key, result, time.perf_counter() - t0, time.process_time() - c0
                    )
                    bar.update(1)
                return records

            def store(i: int, key: str, result: dict, seconds: float, cpu: float) -> None:
                records[i] = self._store(units[i], key, result, seconds, cpu)
                bar.update(1)

            self._run_in_pool(units, pending, store)
        return records

    def _run_in_pool(self, units: Sequence[Unit], pending: list, store: Callable) -> None:
        """Run ``pending`` in mdcert's process pool (`experiments.runtime.pool.Pool`), calling
        ``store(i, key, result, seconds, cpu)`` as each run finishes. However this stops (Ctrl-C, an
        error), every worker is killed (SIGKILL: a run in flight has nothing worth saving) and reaped
        before it returns."""
        from concurrent.futures import FIRST_COMPLETED, wait

        from experiments.runtime.pool import Pool

        pool = Pool(
            min(self.workers, len(pending)),
            initializer=self.remote.init,
            initargs=(os.getpid(),),
            blas_threads=None,
        )
        finished = False
        try:
            futures = {pool.submit(self.remote, units[i].where): (i, key) for i, key in pending}
            waiting = set(futures)
            while waiting:
                done, waiting = wait(waiting, return_when=FIRST_COMPLETED)
                for f in done:
                    store(*futures[f], *f.result())
            finished = True
        finally:
            pool.shutdown(kill=not finished)

    def set_status(self, status: StudyStatus) -> None:
        """Rewrite ``study.json`` with ``status`` and this invocation's counts (atomically)."""
        meta = {
            "format": FORMAT,
            "kind": self.kind,
            "options": self.options,
            "status": status.value,
            "runs_trained_now": self.trained,
            "runs_reused": self.reused,
            "wall_seconds_of_runs_now": self.seconds,
            "cpu_seconds_of_runs_now": self.cpu_seconds,
        }
        write_text_atomic(self.root / META, dumps(meta))

    def bar(self, total: int, desc: str, *, leave: bool = True):
        """A progress bar on stderr with ETA (`experiments.runtime.progress`): ``progress`` None shows it only on a
        terminal, True always, False never."""
        from experiments.runtime.progress import progress

        return progress(total, desc=desc, unit="it", enabled=self.progress, leave=leave)

    def write(self, name: str, text: str) -> Path:
        return write_text_atomic(self.root / name, text)


def check_study_dir(root: str | os.PathLike, *, kind: str) -> Path:
    """Refuse, before any work, an output that is empty, a file, unwritable, a non-empty directory
    that is not a study, or a study of another kind; returns the path.

    Raises:
        MdcertError: one line naming -o and the fix.
    """
    from experiments.runtime.outputs import check_output_dir

    if not str(root).strip():
        raise MdcertError("-o is empty; give a study directory")
    out = Path(root)
    meta = out / META
    if out.is_dir() and any(out.iterdir()):
        if not meta.is_file():
            raise MdcertError(
                f"-o {str(out)!r} exists, is not empty and holds no {META}; give a new directory "
                f"or a study directory to resume"
            )
        try:
            old = json.loads(meta.read_text())
        except (OSError, ValueError):
            raise MdcertError(
                f"-o {str(out)!r}: {META} is not readable JSON; give a new directory"
            ) from None
        if not isinstance(old, dict) or old.get("kind") != kind:
            raise MdcertError(
                f"-o {str(out)!r} holds a study of kind {old.get('kind') if isinstance(old, dict) else None!r}, "
                f"not {kind!r}; give another directory"
            )
    else:
        check_output_dir(out, option="-o", overwrite=False)
    return out


def open_study(
    root: str | os.PathLike,
    *,
    kind: str,
    options: dict,
    device,
    progress: bool | None = None,
    config=None,
    remote=None,
    workers: int = 1,
    threads: int = 1,
) -> StudyContext:
    """Create or reopen the study directory ``root`` for ``kind`` (`check_study_dir` first);
    ``config`` and ``remote`` as in `StudyContext`."""
    out = check_study_dir(root, kind=kind)
    RunStore(out / RUNS).ensure()
    ctx = StudyContext(
        out, kind, device, progress, config, workers, threads, options=options, remote=remote
    )
    ctx.set_status(StudyStatus.RUNNING)
    return ctx
