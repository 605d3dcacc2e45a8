"""One sweep job in a worker process: the argv of the single command, run through
`experiments.cli.main.main` with its output inside the job's temporary record directory.

`execute` never raises for a job's own failure: a non-zero exit code (or an exception escaping the
command) becomes a ``failed`` record with the command's one stderr line. It returns the job's index
line. Only the death of the worker process itself (a kill, the OOM killer) escapes it, and the
engines retry that.
"""

from __future__ import annotations

import contextlib
import os
import socket
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

from experiments.sweep.jobs import Job, file_sha256
from experiments.sweep.store import RECORD, JobStatus, Store, index_line

__all__ = ["execute", "failed_record", "quiet_threads", "warm"]

#: BLAS / OpenMP pools limited to one thread per worker (the workers are the parallelism)
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "VECLIB_MAXIMUM_THREADS",
               "NUMEXPR_NUM_THREADS")


def quiet_threads() -> None:
    """One BLAS/OpenMP thread per worker unless the user set otherwise (call before numpy loads)."""
    for name in THREAD_VARS:
        os.environ.setdefault(name, "1")


def warm(preload: tuple[str, ...] = ()) -> int:
    """Import the command line and ``preload`` in this worker (before its first job); its pid."""
    import importlib

    quiet_threads()
    importlib.import_module("experiments.cli.main")
    for module in preload:
        importlib.import_module(module)
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


def run_command(argv: list[str], folder: Path) -> int:
    """Run ``mdcert ARGV`` in this process with its output captured in ``folder``; the exit code."""
    from experiments.cli.main import main

    old_argv = sys.argv
    sys.argv = ["mdcert", *argv]
    try:
        with _captured(folder):
            try:
                return int(main(argv) or 0)
            except SystemExit as exc:          # argparse's own exit
                code = exc.code
                return code if isinstance(code, int) else (0 if code is None else 1)
            except Exception as exc:           # main() turns errors into codes; this is a bug
                print(f"mdcert {argv[0]}: internal error: {type(exc).__name__}: {exc}", file=sys.stderr)
                return 70
    finally:
        sys.argv = old_argv


def _outputs(folder: Path) -> dict:
    out = {}
    for path in sorted(folder.rglob("*")):
        if path.is_file() and path.name != RECORD:
            out[str(path.relative_to(folder))] = {"bytes": path.stat().st_size, "sha256": file_sha256(path)}
    return out


def _base(job: Job, attempt: int) -> dict:
    return {"format": 1, "key": job.key, "kind": job.kind, "labels": dict(job.labels), "values": dict(job.values),
            "inputs": [{"path": p, "sha256": s} for p, s in job.inputs], "mdcert_version": job.version,
            "attempt": attempt, "host": socket.gethostname(), "pid": os.getpid()}


def _write_record(tmp: Path, record: dict) -> None:
    from certify.io.jsonenc import dumps

    (tmp / RECORD).write_text(dumps(record, indent=1, default=str))


def execute(job: Job) -> dict:
    """Run one job (in a worker) and return its index line; see the module docstring."""
    from experiments.sweep.jobs import mdcert_version
    from experiments.sweep.kinds import get_kind

    store = Store(job.store)
    existing = store.finished(job.key)
    if existing is not None:                   # an earlier attempt finished before its worker died
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
    record["argv"] = argv[:-1] + [kind.output_name]   # the command as run inside the record directory
    code = None
    verdict = None
    if error is None:
        code = run_command(argv, tmp)
        if code in kind.ok_codes:
            try:
                verdict = kind.verdict(tmp, code)
            except Exception as exc:  # an answer code without a readable output is a failure
                error = f"exit code {code} but the output cannot be read: {type(exc).__name__}: {exc}"
        else:
            error = _error_line(tmp / "stderr.txt", code)
    record.update(status=(JobStatus.FAILED if error else JobStatus.DONE).value, verdict=verdict, exit_code=code,
                  error=error, seconds=round(time.perf_counter() - t0, 6),
                  cpu_seconds=round(time.process_time() - c0, 6), finished_at=_now(),
                  outputs=_outputs(tmp))
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
    record.update(pid=None, status=JobStatus.FAILED.value, verdict=None, exit_code=None, error=error,
                  seconds=None, cpu_seconds=None, started_at=None, finished_at=_now(), outputs={})
    _write_record(tmp, record)
    winner = store.commit(tmp, job.key)
    return index_line(winner if winner is not None else record)
