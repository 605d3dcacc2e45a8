"""mdcert's one process pool: `pebble.ProcessPool` with the guarantees every caller needs.

The sweep's local engine, the certified reference SVMs of ``mdcert paths``
(`experiments.paths.svm_cache.Certifier`), the real-data studies' certification pool
(`experiments.studies.realdata.frontier.JobPool`) and the studies' run pool
(`experiments.studies.runner`) all run on `Pool`:

* **per-task timeout**: ``submit(..., timeout=s)``; the worker running a task past it is stopped and
  the task's future raises `TaskTimeout` (pebble replaces the worker);
* **death attribution**: when a worker dies (SIGKILL, the OOM killer, a crash), only the task it was
  running fails, with `WorkerDied` (``.exitcode``, ``.pid``; `describe_exit` words it); the tasks
  queued behind it run on a fresh worker, untouched;
* **kill on shutdown**: `Pool.shutdown` (and leaving a ``with Pool(...)`` block) SIGKILLs every
  worker still alive (SIGKILL, not SIGTERM: a SIGTERMed worker first runs its exit handlers,
  seconds under load) and reaps it, so no process outlives the pool; the workers also die with this
  process (`certify.process.die_with_parent`) should it be killed;
* **Ctrl-C**: workers ignore SIGINT (it is blocked while they start, so none is lost to a worker
  that has not ignored it yet); the KeyboardInterrupt reaches this process, whose ``with`` block or
  ``finally`` kills the workers within seconds; the futures of finished tasks keep their results;
* **one BLAS thread per worker** (``blas_threads``, the workers are the parallelism; an environment
  value the user set wins), set before the worker imports anything of its initializer;
* **initializer**: a module-level function run once in each worker before its first task (warm-up
  imports, determinism); `Pool.wait_ready` waits until every worker has run it.

Workers are ``spawn``-ed Python processes: a caller's script needs the usual
``if __name__ == "__main__":`` guard (``python -m`` modules and the ``mdcert`` command have one).
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import multiprocessing
import multiprocessing.context
import os
import signal
import time
from concurrent.futures import Future
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Callable, Iterator

import pebble

__all__ = [
    "Pool",
    "WorkerDied",
    "WorkerStartError",
    "TaskTimeout",
    "describe_exit",
    "BLAS_THREAD_VARS",
]

#: raised by the future of a task whose worker died (``.exitcode``: negative for a signal; ``.pid``)
WorkerDied = pebble.ProcessExpired

#: raised by the future of a task that ran past its ``timeout`` (its worker was stopped)
TaskTimeout = TimeoutError

#: BLAS / OpenMP thread-count variables set in each worker (``blas_threads``)
BLAS_THREAD_VARS = (
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
    "NUMEXPR_NUM_THREADS",
)


def describe_exit(exitcode: int | None) -> str:
    """How a process ended, in words: ``killed by signal 9 (SIGKILL)``, ``exited with code 1``."""
    if exitcode is not None and exitcode < 0:
        try:
            return f"killed by signal {-exitcode} ({signal.Signals(-exitcode).name})"
        except ValueError:
            return f"killed by signal {-exitcode}"
    return f"exited with code {exitcode}"


class WorkerStartError(RuntimeError):
    """A worker ended before it was ready (its initializer failed, or it was killed)."""

    def __init__(self, exitcode: int | None) -> None:
        self.exitcode = exitcode
        self.description = "did not start in time" if exitcode is None else describe_exit(exitcode)
        super().__init__(f"a worker process {self.description} while starting")


class _Context(multiprocessing.context.SpawnContext):
    """The ``spawn`` context, remembering every process it creates: the pool's workers, for
    `Pool.processes` and the kill at shutdown, with no diff of ``active_children()``."""

    def __init__(self) -> None:
        super().__init__()
        self.started: list = []

    def Process(self, *args: Any, **kwargs: Any):  # noqa: N802 - multiprocessing's API
        proc = multiprocessing.context.SpawnProcess(*args, **kwargs)
        self.started.append(proc)
        return proc


@contextlib.contextmanager
def _sigint_blocked() -> Iterator[None]:
    """SIGINT blocked in this thread: processes started meanwhile (and threads created meanwhile,
    which keep the mask) cannot be reached by a Ctrl-C before they ignore it."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _bootstrap(
    parent: int,
    blas_threads: int | None,
    ready,
    initializer: tuple[str, str] | Callable | None,
    initargs: tuple,
) -> None:
    """A worker's first code: thread counts, die with ``parent``, the initializer, ready."""
    if blas_threads is not None:
        for name in BLAS_THREAD_VARS:
            os.environ.setdefault(name, str(int(blas_threads)))
    from certify.process import die_with_parent

    die_with_parent(parent)
    if isinstance(initializer, tuple):  # a module-level function, imported by name only now
        fn: Any = importlib.import_module(initializer[0])
        for part in initializer[1].split("."):
            fn = getattr(fn, part)
        fn(*initargs)
    elif initializer is not None:  # a bound method or callable object, unpickled with its state
        initializer(*initargs)
    ready.release()


class Pool:
    """``workers`` worker processes (started now) running submitted tasks.

    Args:
        workers: processes (>= 1).
        initializer: run in each worker before its first task: a module-level function is
            imported there by name, after the thread counts are set; a bound method or other
            picklable callable (e.g. a worker object's ``init``) is sent pickled, with its state.
        initargs: its (picklable) arguments.
        blas_threads: BLAS/OpenMP threads per worker (None: leave the environment alone).
    """

    def __init__(
        self,
        workers: int,
        *,
        initializer: Callable | None = None,
        initargs: tuple = (),
        blas_threads: int | None = 1,
    ) -> None:
        if workers < 1:
            raise ValueError(f"a pool needs at least one worker, got {workers}")
        self.workers = int(workers)
        self._context = _Context()
        self._ready = self._context.Semaphore(0)
        init: Any = initializer
        if inspect.isfunction(initializer) and "<locals>" not in initializer.__qualname__:
            init = (initializer.__module__, initializer.__qualname__)
        with _sigint_blocked():  # the pool's threads, which start every worker, keep SIGINT blocked
            self._pool: pebble.ProcessPool | None = pebble.ProcessPool(
                max_workers=self.workers,
                initializer=_bootstrap,
                initargs=(os.getpid(), blas_threads, self._ready, init, tuple(initargs)),
                context=self._context,
            )
            if not self._pool.active:  # starts the workers
                raise RuntimeError("the process pool did not start")

    @property
    def processes(self) -> tuple:
        """Every worker process started so far (`multiprocessing.Process`), replaced ones too."""
        return tuple(self._context.started)

    def pids(self) -> list[int]:
        """The pids of the workers alive now."""
        return [p.pid for p in self._context.started if p.pid is not None and p.exitcode is None]

    def submit(
        self, fn: Callable, /, *args: Any, timeout: float | None = None, **kwargs: Any
    ) -> Future:
        """Run ``fn(*args, **kwargs)`` in a worker (``fn`` module-level, arguments picklable).

        The future raises `TaskTimeout` past ``timeout`` seconds of running, `WorkerDied` if the
        worker died running it, or what ``fn`` raised. Raises `BrokenProcessPool` when the pool as
        a whole has failed (pebble's error state, e.g. after a worker died while idle): start a new
        `Pool`."""
        if self._pool is None:
            raise RuntimeError("the pool is shut down")
        try:
            return self._pool.schedule(fn, args=args, kwargs=kwargs, timeout=timeout)
        except RuntimeError as exc:  # pebble's pool is in its error state (a worker died idle)
            if not self._pool.active:
                raise BrokenProcessPool(f"the process pool broke: {exc}") from exc
            raise

    def wait_ready(self, timeout: float | None = None) -> None:
        """Wait until every worker has run its initializer.

        Raises:
            WorkerStartError: a worker ended first (its exit code), or ``timeout`` passed.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        for _ in range(self.workers):
            while not self._ready.acquire(timeout=0.05):
                for proc in self._context.started:
                    if proc.exitcode is not None:
                        raise WorkerStartError(proc.exitcode)
                if deadline is not None and time.monotonic() > deadline:
                    raise WorkerStartError(None)

    def shutdown(self, *, kill: bool = True, timeout: float = 10.0) -> None:
        """Stop the pool and reap every worker (idempotent).

        ``kill``: SIGKILL the workers now (tasks in flight are abandoned; finished futures keep
        their results). Otherwise wait up to ``timeout`` seconds for the submitted tasks, then kill.
        """
        pool, self._pool = self._pool, None
        if pool is None:
            return
        if not kill:
            pool.close()
            try:
                pool.join(timeout)
                kill = False
            except TimeoutError:
                kill = True
        if kill:
            pool.stop()
            self._kill()
            pool.join()
        self._kill()
        deadline = time.monotonic() + 5
        for proc in self._context.started:
            if proc.pid is None:
                continue
            proc.join(max(0.0, deadline - time.monotonic()))
            # another thread (pebble's) may have reaped it; its exit code then lands a moment later
            while proc.exitcode is None and time.monotonic() < deadline:
                time.sleep(0.01)

    def _kill(self) -> None:
        for proc in self._context.started:
            if proc.pid is not None and proc.exitcode is None:
                proc.kill()

    def __enter__(self) -> "Pool":
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown(kill=True)
