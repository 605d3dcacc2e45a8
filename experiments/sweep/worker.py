"""One sweep job in a worker process: the grid point's argv, parsed into the command's ``Config``
(`experiments.commands.parse`), run with the command's ``run(config)``, its ``Result`` written
inside the job's temporary record directory (``Result.write(RECORD/output_name)``) and its terminal
summary (``Result.lines``) kept as the record's ``stdout.txt``; the exit code is ``Result.exit_code``.

`execute` never raises for a job's own failure: a non-zero exit code (or an exception escaping the
command: bad input is exit 1 with the one line ``mdcert CMD: error: ...``, anything else exit 70)
becomes a ``failed`` record with that line. It returns the job's index line. Only the death of the
worker process itself (a kill, the OOM killer) escapes it, and the engines retry that.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import sys
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

from experiments.sweep.jobs import Job, file_sha256
from experiments.sweep.store import RECORD, JobStatus, Store, index_line

__all__ = [
    "execute",
    "failed_record",
    "quiet_threads",
    "warm",
    "run_job",
    "run_config",
    "LINE_WIDTH",
]

#: width of the terminal summary a job keeps in its record's stdout.txt (`Result.lines`)
LINE_WIDTH = 100

#: BLAS / OpenMP pools limited to one thread per worker (the workers are the parallelism)
THREAD_VARS = (
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
    "NUMEXPR_NUM_THREADS",
)


def quiet_threads() -> None:
    """One BLAS/OpenMP thread per worker unless the user set otherwise (call before numpy loads)."""
    for name in THREAD_VARS:
        os.environ.setdefault(name, "1")


def warm(preload: tuple[str, ...] = ()) -> int:
    """Import ``preload`` (the kind's `JobKind.worker_preload`: its command's module and what its
    first job would import) in this worker before its first job, so that the job's time is the job's
    alone; an entry ``module:function`` also calls the function. The worker's pid."""
    import importlib

    quiet_threads()
    for entry in preload:
        module, _, function = entry.partition(":")
        loaded = importlib.import_module(module)
        if function:
            getattr(loaded, function)()
    return os.getpid()


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def _error_line(stderr: Path, code: int) -> str:
    try:
        lines = [ln.strip() for ln in stderr.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        lines = []
    return lines[-1][:2000] if lines else f"exit code {code} with no message"


@contextlib.contextmanager
def _captured(folder: Path):
    """Send this process's stdout and stderr (Python and file-descriptor level) to files in ``folder``."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    with open(folder / "stdout.txt", "w") as out, open(folder / "stderr.txt", "w") as err:
        os.dup2(out.fileno(), 1)
        os.dup2(err.fileno(), 2)
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                yield
        finally:
            out.flush()
            err.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])


def run_config(command: str, argv: list[str], output: Path) -> int:
    """Run ``command`` on ``argv`` (its options, without the command's name) through the application
    layer: parse, ``run(config)``, ``Result.write(output)``, the summary lines on stdout; the exit
    code, with exceptions turned into codes and one stderr line as the command line does."""
    from experiments.commands import module, parse
    from experiments.commands.outcome import exit_code_for, input_warnings

    try:
        with input_warnings(command):
            config = parse(command, argv)
            result = module(command).run(config)
            result.write(output)
        for line in result.lines(LINE_WIDTH):
            print(line)
        return int(result.exit_code)
    except (Exception, KeyboardInterrupt) as exc:  # noqa: BLE001 - one line and an exit code, as the CLI
        return exit_code_for(command, exc, host=socket.gethostname())


def run_job(kind, argv: list[str], folder: Path) -> int:
    """Run one job's ``argv`` (its kind's command first) in this process with its output captured in
    ``folder`` (stdout.txt, stderr.txt); the exit code."""
    old_argv = sys.argv
    sys.argv = ["mdcert", *argv]  # as a user's command line (a run records its argv)
    try:
        with _captured(folder):
            return run_config(kind.command, argv[1:], folder / kind.output_name)
    finally:
        sys.argv = old_argv


def _outputs(folder: Path) -> dict:
    out = {}
    for path in sorted(folder.rglob("*")):
        if path.is_file() and path.name != RECORD:
            out[str(path.relative_to(folder))] = {
                "bytes": path.stat().st_size,
                "sha256": file_sha256(path),
            }
    return out


def _base(job: Job, attempt: int) -> dict:
    return {
        "format": 1,
        "key": job.key,
        "kind": job.kind,
        "labels": dict(job.labels),
        "values": dict(job.values),
        "inputs": [{"path": p, "sha256": s} for p, s in job.inputs],
        "mdcert_version": job.version,
        "attempt": attempt,
        "host": socket.gethostname(),
        "pid": os.getpid(),
    }


def _write_record(tmp: Path, record: dict) -> None:
    from certify.io.jsonenc import dumps

    (tmp / RECORD).write_text(dumps(record, indent=1, default=str))


class WorkerStopped(BaseException):
    """The worker process was told to stop (SIGTERM) while running a job: the job has no outcome."""


@contextlib.contextmanager
def _stop_on_sigterm():
    """While a job runs, SIGTERM raises `WorkerStopped` (main thread only). Ray's workers turn SIGTERM
    into ``SystemExit(1)``, which the command line would take for the command's own exit code 1 and
    record the job failed, although only its worker was stopped (a Ray instance shutting down)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, frame) -> None:
        raise WorkerStopped(f"signal {signum}")

    old = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


def execute(job: Job) -> dict:
    """Run one job (in a worker) and return its index line; see the module docstring. A worker told
    to stop mid-job (SIGTERM) leaves no record (its temporary one is removed) and exits."""
    try:
        with _stop_on_sigterm():
            return _execute(job)
    except WorkerStopped:
        raise SystemExit(1) from None


def _execute(job: Job) -> dict:
    from experiments.sweep.jobs import mdcert_version
    from experiments.sweep.kinds import get_kind

    store = Store(job.store)
    existing = store.finished(job.key)
    if existing is not None:  # an earlier attempt finished before its worker died
        return index_line(existing)
    attempt = 1 + store.stale_attempts(job.key)
    tmp = store.new_tmp(job.key)
    record = _base(job, attempt)
    record["started_at"] = _now()
    t0, c0 = time.perf_counter(), time.process_time()
    error = None
    for path, sha in job.inputs:
        try:
            if file_sha256(path) != sha:
                error = f"input {path!r} changed since the sweep started; rerun the sweep to use its new content"
        except OSError as exc:
            error = f"cannot read input {path!r} on {socket.gethostname()} ({exc.strerror}); inputs must be on storage every worker reads"
    if error is None and mdcert_version() != job.version:
        error = f"worker runs mdcert {mdcert_version()}, the driver {job.version}; install one version everywhere"
    kind = get_kind(job.kind)
    argv = kind.argv(dict(job.values), tmp)
    record["argv"] = argv[:-1] + [
        kind.output_name
    ]  # the command as run inside the record directory
    code = None
    verdict = None
    if error is None:
        try:
            code = run_job(kind, argv, tmp)
        except WorkerStopped:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        if code in kind.ok_codes:
            try:
                verdict = kind.verdict(tmp, code)
            except Exception as exc:  # an answer code without a readable output is a failure
                error = (
                    f"exit code {code} but the output cannot be read: {type(exc).__name__}: {exc}"
                )
        else:
            error = _error_line(tmp / "stderr.txt", code)
    record.update(
        status=(JobStatus.FAILED if error else JobStatus.DONE).value,
        verdict=verdict,
        exit_code=code,
        error=error,
        seconds=round(time.perf_counter() - t0, 6),
        cpu_seconds=round(time.process_time() - c0, 6),
        finished_at=_now(),
        outputs=_outputs(tmp),
    )
    _write_record(tmp, record)
    winner = store.commit(tmp, job.key)
    return index_line(winner if winner is not None else record)


def failed_record(job: Job, error: str, *, attempts: int) -> dict:
    """Record ``job`` as failed by the driver (its worker died ``attempts`` times); its index line.

    A finished record already in place (an attempt that completed just before its worker died) wins.
    """
    store = Store(job.store)
    existing = store.finished(job.key)
    if existing is not None:
        return index_line(existing)
    tmp = store.new_tmp(job.key)
    record = _base(job, attempts)
    record.update(
        pid=None,
        status=JobStatus.FAILED.value,
        verdict=None,
        exit_code=None,
        error=error,
        seconds=None,
        cpu_seconds=None,
        started_at=None,
        finished_at=_now(),
        outputs={},
    )
    _write_record(tmp, record)
    winner = store.commit(tmp, job.key)
    return index_line(winner if winner is not None else record)
