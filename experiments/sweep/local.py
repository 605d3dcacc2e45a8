"""The local engine of ``mdcert sweep``: K worker processes on this machine, nothing to start.

The workers are mdcert's process pool (`experiments.runtime.pool`): each loads the command line and
the kind's ``preload`` once (`experiments.sweep.worker.warm`), with one BLAS thread, then runs jobs
(`experiments.sweep.worker.execute`). A bounded window of jobs is in flight (``depth`` per worker),
so the next job is waiting when one finishes. When a worker dies (SIGKILL, the OOM killer) the pool
says which job it was running: that job alone is retried, on a fresh worker, up to ``retries`` times
and then recorded failed; the jobs queued behind it run untouched (a pool-wide BrokenProcessPool
would charge every job in flight for one death; when the pool as a whole breaks, e.g. a worker
killed between jobs, fresh workers start and the jobs in flight run again, up to
`MAX_POOL_RESTARTS` times). Workers ignore SIGINT and die with the driver:
Ctrl-C reaches the driver, which SIGKILLs its workers and keeps every finished record.
"""

from __future__ import annotations

import time
from collections import deque
from concurrent.futures import FIRST_COMPLETED, Future, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Iterable, Iterator

from experiments.sweep.jobs import Job
from experiments.sweep.worker import failed_record

__all__ = ["LocalEngine", "MAX_POOL_RESTARTS"]

#: fresh pools started after the pool as a whole broke (a worker died while no job ran) before
#: the engine gives up; no job is charged for such a break
MAX_POOL_RESTARTS = 3


class LocalEngine:
    """K worker processes; `run` yields each job's index line as it finishes.

    Args:
        workers: processes (>= 1).
        retries: extra attempts for a job whose worker died (>= 0).
        preload: modules each worker imports before its first job (the kind's `JobKind.preload`).
        depth: jobs in flight per worker (2: the next job is waiting when one finishes).
    """

    name = "local"

    def __init__(
        self, *, workers: int, retries: int, preload: tuple[str, ...] = (), depth: int = 2
    ) -> None:
        self.workers, self.retries, self.depth = workers, retries, depth
        self.preload = tuple(preload)
        self.pool = None
        self.startup_s = 0.0

    def start(self) -> float:
        """Start the workers and wait until each has loaded mdcert; the seconds it took."""
        from experiments.runtime.pool import Pool, WorkerStartError
        from experiments.sweep.worker import warm

        t0 = time.perf_counter()
        self.pool = Pool(self.workers, initializer=warm, initargs=(self.preload,), blas_threads=1)
        try:
            self.pool.wait_ready()
        except WorkerStartError as exc:
            self.close(kill=True)
            raise RuntimeError(
                f"a sweep worker failed to start ({exc.description}); run the job's "
                f"command alone to see why"
            ) from None
        self.startup_s = time.perf_counter() - t0
        return self.startup_s

    def pids(self) -> list[int]:
        """The worker processes' pids."""
        return self.pool.pids() if self.pool is not None else []

    def run(self, jobs: Iterable[Job]) -> Iterator[dict]:
        """Run ``jobs`` (consumed lazily, ``depth`` in flight per worker); yield index lines.

        A job whose worker died is charged with the death (retried, or failed after ``retries``
        deaths); the other jobs in flight are not affected.
        """
        from experiments.sweep.worker import execute

        source = iter(jobs)
        retry: deque[Job] = deque()
        deaths: dict[str, int] = {}
        flight: dict[Future, Job] = {}
        exhausted = False
        restarts = 0
        while True:
            try:
                while len(flight) < self.workers * self.depth:
                    if retry:
                        job = retry.popleft()
                    elif exhausted or (job := next(source, None)) is None:
                        exhausted = True
                        break
                    try:
                        flight[self.pool.submit(execute, job)] = job
                    except BrokenProcessPool:
                        retry.appendleft(job)
                        raise
                if not flight:
                    return
                done, _ = wait(list(flight), return_when=FIRST_COMPLETED)
                for future in done:
                    job = flight.pop(future)
                    try:
                        line = self._outcome(job, future, deaths)
                    except BrokenProcessPool:
                        retry.append(job)
                        raise
                    if line is None:
                        retry.append(job)
                    else:
                        yield line
            except BrokenProcessPool:
                # the pool as a whole failed (e.g. a worker died between jobs): no job is to
                # blame; start fresh workers and run every job that was in flight again
                restarts += 1
                if restarts > MAX_POOL_RESTARTS:
                    raise
                retry.extend(flight.values())
                flight.clear()
                self.close(kill=True)
                self.start()

    def _outcome(self, job: Job, future: Future, deaths: dict[str, int]) -> dict | None:
        """The index line of a finished ``job``, or None when its worker died and it is retried."""
        from experiments.runtime.pool import WorkerDied, describe_exit

        try:
            line = future.result()
        except (WorkerDied, SystemExit) as exc:  # SystemExit: the worker was told to stop
            code = exc.exitcode if isinstance(exc, WorkerDied) else exc.code
            attempts = deaths.get(job.key, 0) + 1
            if attempts <= self.retries:
                deaths[job.key] = attempts
                return None
            deaths.pop(job.key, None)
            return failed_record(
                job,
                f"worker process {describe_exit(code)} on all {attempts} "
                f"attempts; the job may need more memory or time than a "
                f"worker has",
                attempts=attempts,
            )
        except BrokenProcessPool:  # the pool itself failed: the engine stops
            raise
        except Exception as exc:  # the store itself failed in the worker (disk full, permissions)
            attempts = deaths.pop(job.key, 0) + 1
            return failed_record(
                job, f"worker error: {type(exc).__name__}: {exc}", attempts=attempts
            )
        deaths.pop(job.key, None)
        return line

    def close(self, *, kill: bool = False) -> None:
        """Stop the workers (``kill``: SIGKILL them now; else let them finish, 10 s at most) and
        reap them."""
        if self.pool is not None:
            self.pool.shutdown(kill=kill, timeout=10)
            self.pool = None
