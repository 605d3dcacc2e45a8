"""The driver of a sweep: skip finished jobs, run the rest on an engine, stream the index, summarize.

Memory stays bounded by the grid's axes, not its jobs: jobs are generated lazily from the SPEC (twice:
once to find what is finished, once to submit), the engines keep a bounded window in flight, the
index is appended line by line, and only the set of keys (64 hex digits a job) is held.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Iterator

from experiments.runtime.outputs import write_text_atomic
from experiments.sweep.jobs import FileDigests, Job, iter_jobs, mdcert_version
from experiments.sweep.spec import SweepSpec
from experiments.sweep.store import META, JobStatus, Store, index_line

__all__ = ["SweepResult", "run_sweep", "make_engine", "RAY_LOG"]

#: Ray's native output of the driver (log lines, stack dumps), kept out of the terminal
RAY_LOG = "ray-driver.log"


@dataclass(frozen=True)
class SweepResult:
    """What one run of a sweep did.

    Attributes:
        points: grid points; distinct: distinct job keys among them.
        skipped: jobs already finished (verified records) before this run.
        done, failed: jobs this run finished / recorded failed.
        pending: jobs still to run (non-zero only after an interrupt).
        interrupted: Ctrl-C stopped the run.
        startup_s: the engine's start-up, wall seconds (Ray's, or the local workers', with loading
            mdcert into the workers); run_s: the jobs' wall seconds after it.
        job_s: the jobs' own wall seconds in their workers, summed over this run's jobs.
        engine, workers: what ran them.
    """

    points: int
    distinct: int
    skipped: int
    done: int
    failed: int
    pending: int
    interrupted: bool
    startup_s: float
    run_s: float
    job_s: float
    engine: str
    workers: int


def make_engine(
    name: str,
    *,
    workers: int,
    retries: int,
    address: str | None,
    preload: tuple[str, ...] = (),
    on_lost=None,
    native_log=None,
):
    """The engine called ``name`` (``local`` or ``ray``; ``on_lost``: see `RayEngine`)."""
    if name == "local":
        from experiments.sweep.local import LocalEngine

        return LocalEngine(workers=workers, retries=retries, preload=preload)
    from experiments.sweep.ray_engine import RayEngine

    return RayEngine(
        workers=workers,
        retries=retries,
        address=address,
        preload=preload,
        on_lost=on_lost,
        native_log=native_log,
    )


def _progress(total: int, enabled: bool | None):
    from experiments.runtime.progress import progress

    return progress(total, desc="sweep", unit="job", enabled=enabled if total else False)


def run_sweep(
    spec: SweepSpec,
    out: str | Path,
    *,
    engine: str = "local",
    workers: int = 2,
    retries: int = 2,
    address: str | None = None,
    progress: bool | None = None,
    on_engine_lost: Callable[[str], None] | None = None,
) -> SweepResult:
    """Run every unfinished job of ``spec`` into the sweep directory ``out``.

    Args:
        engine: ``local`` (worker processes) or ``ray``.
        workers: local processes, or the CPUs of a local Ray instance.
        retries: extra attempts for a job whose worker process died.
        address: Ray cluster address (None: a local instance the sweep starts and stops).
        progress: a progress bar on stderr (None: only on a terminal).
        on_engine_lost: for a local Ray instance whose raylet dies (Ray then ends the driver process
            itself): called from a watcher thread with one line saying so and how many jobs are
            recorded, after the instance is stopped and temporary records removed; it should report
            and end the process (the command line exits 1).

    Ctrl-C stops the run (finished records are kept, no half-written record remains) and returns a
    result with ``interrupted`` set; rerunning resumes.
    """
    store = Store(out)
    inputs = [spec.path] + [Path(v) for a in spec.axes if a.is_file for v in a.values]
    store.check_root(inputs)
    digests = FileDigests()
    version = mdcert_version()
    counts = {"skipped": 0, "done": 0, "failed": 0}
    seen: set[str] = set()
    pending: set[str] = set()
    t_start = time.perf_counter()
    startup = run_s = job_s = 0.0
    interrupted = False
    eng = None
    points = 0
    with store.locked():
        write_text_atomic(
            store.root / META,
            json.dumps(
                {
                    "format": 1,
                    "kind": spec.kind,
                    "spec": str(spec.path),
                    "spec_sha256": spec.sha256,
                    "spec_text": spec.text,
                    "mdcert_version": version,
                    "updated": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                },
                indent=1,
            ),
        )
        try:
            store.clean_tmp()
            indexed = {
                ln["key"] for ln in store.iter_index() if ln.get("status") == JobStatus.DONE.value
            }
            for job in iter_jobs(spec, store.root, digests=digests, version=version):
                points += 1
                if job.key in seen:
                    continue
                seen.add(job.key)
                record = store.finished(job.key)
                if record is None:
                    pending.add(job.key)
                    continue
                counts["skipped"] += 1
                if job.key not in indexed:  # finished by a driver that stopped before indexing it
                    store.append_index(index_line(record))
            del indexed
            if pending:
                lost = None
                if on_engine_lost is not None:

                    def lost(reason: str) -> None:
                        store.clean_tmp()
                        recorded = counts["skipped"] + counts["done"] + counts["failed"]
                        on_engine_lost(f"{reason}; {recorded} of {len(seen)} job(s) recorded")

                eng = make_engine(
                    engine,
                    workers=workers,
                    retries=retries,
                    address=address,
                    preload=spec.job_kind().worker_preload(),
                    on_lost=lost,
                    native_log=store.root / RAY_LOG,
                )
                startup = eng.start()
                bar = _progress(len(pending), progress)
                t_run = time.perf_counter()
                try:
                    for line in eng.run(_unfinished(spec, store, pending, digests, version)):
                        store.append_index(line)
                        pending.discard(line["key"])
                        ok = line.get("status") == JobStatus.DONE.value
                        counts["done" if ok else "failed"] += 1
                        job_s += float(line.get("seconds") or 0.0)
                        bar.update(1)
                        if counts["failed"]:
                            bar.stage(f"failed={counts['failed']}")
                finally:
                    bar.close()
                    run_s = time.perf_counter() - t_run
                eng.close()
                eng = None
                store.clean_tmp()  # attempts whose worker died
        except KeyboardInterrupt:
            interrupted = True
            if eng is not None:
                eng.close(kill=True)
                eng = None
            store.clean_tmp()
            _index_late_records(store, pending, counts)
        except BaseException:  # the engine stopped (EngineStopped) or a bug: no half-records
            if eng is not None:
                eng.close(kill=True)
                eng = None
            store.clean_tmp()
            raise
        finally:
            if eng is not None:
                eng.close(kill=True)
        if not interrupted:
            from experiments.sweep.summary import write_summary

            write_summary(
                store, spec, seen, elapsed_s=time.perf_counter() - t_start, startup_s=startup
            )
    return SweepResult(
        points=points if not interrupted else spec.size,
        distinct=len(seen),
        skipped=counts["skipped"],
        done=counts["done"],
        failed=counts["failed"],
        pending=len(pending),
        interrupted=interrupted,
        startup_s=startup,
        run_s=run_s,
        job_s=job_s,
        engine=engine,
        workers=workers,
    )


def _index_late_records(store: Store, pending: set[str], counts: dict[str, int]) -> None:
    """After Ctrl-C, with the workers stopped: index and count the records a worker renamed into
    place before the driver read its line, so that the message and the index match the disk."""
    for key in sorted(pending):
        record = store.read_record(key)
        if record is None or record.get("key") != key:
            continue
        store.append_index(index_line(record))
        pending.discard(key)
        counts["done" if record.get("status") == JobStatus.DONE.value else "failed"] += 1


def _unfinished(
    spec: SweepSpec, store: Store, pending: set[str], digests: FileDigests, version: str
) -> Iterator[Job]:
    """The pending jobs, regenerated lazily from the SPEC, each key once."""
    submitted: set[str] = set()
    for job in iter_jobs(spec, store.root, digests=digests, version=version):
        if job.key in pending and job.key not in submitted:
            submitted.add(job.key)
            yield job
