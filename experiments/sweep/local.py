"""The local engine of ``mdcert sweep``: K worker processes on this machine, embedded, nothing to start.

A hand-written scheduler rather than `concurrent.futures`: each worker is a fresh ``python`` process
(`subprocess`, so a caller's script needs no ``if __name__ == "__main__"`` guard, as ``spawn``
would) that runs its jobs in order over its own socket, the next one already queued, so when a
worker dies (SIGKILL, the OOM killer) the engine knows exactly which job it was running. That job
alone is retried, on a fresh worker, up to ``retries`` times and then recorded failed; the queued
one goes back untouched. A pool-wide BrokenProcessPool would charge every job in flight for one death. Workers ignore SIGINT and die with the driver (`certify.process`): Ctrl-C
reaches the driver, which kills its own workers (by their Popen objects) and keeps every finished
record.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections import deque
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Iterable, Iterator

from experiments.sweep.jobs import Job
from experiments.sweep.worker import failed_record

__all__ = ["LocalEngine", "worker_entry"]

#: the code root holding this experiments package (first on the workers' PYTHONPATH)
CODE_ROOT = str(Path(__file__).resolve().parents[2])


def worker_entry(fd: int, parent: int, preload: list[str]) -> None:
    """A worker process: run jobs received over the socket ``fd`` until None or end-of-file."""
    from certify.process import die_with_parent

    die_with_parent(parent)
    conn = Connection(fd)
    from experiments.sweep.worker import execute, warm

    warm(tuple(preload))
    conn.send(("ready", os.getpid()))
    while True:
        try:
            job = conn.recv()
        except (EOFError, OSError):
            return
        if job is None:
            return
        try:
            conn.send(("result", execute(job)))
        except Exception as exc:  # the store itself failed (disk full, permissions): tell the driver
            conn.send(("error", f"{type(exc).__name__}: {exc}"))


def _worker_env() -> dict[str, str]:
    from experiments.sweep.worker import THREAD_VARS

    env = dict(os.environ)
    for name in THREAD_VARS:                 # one BLAS thread per worker: the workers are the parallelism
        env.setdefault(name, "1")
    path = env.get("PYTHONPATH")
    env["PYTHONPATH"] = CODE_ROOT + (os.pathsep + path if path else "")
    return env


class _Slot:
    """One worker process and the driver's end of its socket."""

    def __init__(self, preload: tuple[str, ...], env: dict[str, str]) -> None:
        mine, theirs = socket.socketpair()
        code = "import sys; from experiments.sweep.local import worker_entry; " \
               "worker_entry(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3:])"
        try:
            self.proc = subprocess.Popen([sys.executable, "-c", code, str(theirs.fileno()), str(os.getpid()), *preload],
                                         pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL, env=env)
        finally:
            theirs.close()
        self.conn = Connection(mine.detach())
        self.ready = False

    def alive(self) -> bool:
        return self.proc.poll() is None


def _death(exitcode: int | None) -> str:
    if exitcode is not None and exitcode < 0:
        try:
            return f"killed by signal {-exitcode} ({signal.Signals(-exitcode).name})"
        except ValueError:
            return f"killed by signal {-exitcode}"
    return f"exited with code {exitcode}"


class LocalEngine:
    """K worker processes; `run` yields each job's index line as it finishes.

    Args:
        workers: processes (>= 1).
        retries: extra attempts for a job whose worker died (>= 0).
        preload: modules each worker imports before its first job (the kind's `JobKind.preload`).
        depth: jobs sent ahead to each worker (2: the next job is waiting when one finishes).
    """

    name = "local"

    def __init__(self, *, workers: int, retries: int, preload: tuple[str, ...] = (), depth: int = 2) -> None:
        self.workers, self.retries, self.preload, self.depth = workers, retries, tuple(preload), depth
        self.slots: list[_Slot] = []
        self.startup_s = 0.0
        self._env = _worker_env()

    def start(self) -> float:
        """Start the workers and wait until each has loaded mdcert; the seconds it took."""
        t0 = time.perf_counter()
        self.slots = [_Slot(self.preload, self._env) for _ in range(self.workers)]
        for slot in self.slots:
            self._await_ready(slot)
        self.startup_s = time.perf_counter() - t0
        return self.startup_s

    def _await_ready(self, slot: _Slot) -> None:
        try:
            msg = slot.conn.recv()
            slot.ready = msg[0] == "ready"
        except (EOFError, OSError):
            pass
        if not slot.ready:
            try:
                code = slot.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                code = None
            raise RuntimeError(f"a sweep worker failed to start ({_death(code)}); run the job's command alone to see why")

    def pids(self) -> list[int]:
        """The worker processes' pids."""
        return [s.proc.pid for s in self.slots]

    def _replace(self, slot: _Slot) -> _Slot:
        if slot.alive():               # its socket broke but it lives on: it is ours, stop it
            slot.proc.kill()
        slot.proc.wait()
        slot.conn.close()
        new = _Slot(self.preload, self._env)
        self.slots[self.slots.index(slot)] = new
        return new

    def run(self, jobs: Iterable[Job]) -> Iterator[dict]:
        """Run ``jobs`` (consumed lazily, ``depth`` queued per worker); yield index lines.

        A worker runs its queue in order, so when it dies the oldest job it was sent and has not
        answered is the one it was running: that job is charged with the death (retried, or failed
        after ``retries`` deaths); the jobs queued behind it never started and go back unchanged.
        """
        source = iter(jobs)
        self._retry: deque[Job] = deque()
        self._deaths: dict[str, int] = {}
        queued: dict[_Slot, deque[Job]] = {}
        exhausted = False
        while True:
            for slot in list(self.slots):
                q = queued.setdefault(slot, deque())
                while len(q) < self.depth:
                    if self._retry:
                        job = self._retry.popleft()
                    elif exhausted or (job := next(source, None)) is None:
                        exhausted = True
                        break
                    try:
                        slot.conn.send(job)
                    except (BrokenPipeError, OSError):   # it died: handled with what it held
                        self._retry.appendleft(job)
                        yield from self._died(slot, queued)
                        break
                    q.append(job)
            by_conn = {s.conn: s for s in self.slots if queued.get(s)}
            if not by_conn:
                return
            for conn in wait(list(by_conn)):               # a result, or end-of-file when a worker died
                slot = by_conn[conn]
                q = queued[slot]
                try:
                    while conn.poll():
                        kind, payload = conn.recv()
                        if kind == "ready":
                            slot.ready = True
                            continue
                        job = q.popleft()
                        attempts = self._deaths.pop(job.key, 0) + 1
                        yield payload if kind == "result" else failed_record(job, f"worker error: {payload}",
                                                                             attempts=attempts)
                except (EOFError, OSError):
                    yield from self._died(slot, queued)

    def _died(self, slot: _Slot, queued: dict) -> Iterator[dict]:
        """A worker is gone: replace it, charge its running job, requeue the ones it never started."""
        try:                                               # reap it to read how it ended
            code = slot.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            code = None
        q = queued.pop(slot, deque())
        new = self._replace(slot)
        queued[new] = deque()
        if not q:
            return
        running = q.popleft()
        self._retry.extendleft(reversed(q))
        attempts = self._deaths.get(running.key, 0) + 1
        if attempts <= self.retries:
            self._deaths[running.key] = attempts
            self._retry.append(running)
        else:
            self._deaths.pop(running.key, None)
            yield failed_record(running, f"worker process {_death(code)} on all {attempts} attempts; the job "
                                         f"may need more memory or time than a worker has", attempts=attempts)

    def close(self, *, kill: bool = False) -> None:
        """Stop the workers: ask them to exit (or SIGKILL them, ``kill``) and reap them."""
        for slot in self.slots:
            if kill:
                if slot.alive():
                    slot.proc.kill()
            else:
                try:
                    slot.conn.send(None)
                except (BrokenPipeError, OSError):
                    pass
        for slot in self.slots:
            try:
                slot.proc.wait(timeout=None if kill else 10)
            except subprocess.TimeoutExpired:
                slot.proc.kill()
                slot.proc.wait()
            slot.conn.close()
        self.slots = []
