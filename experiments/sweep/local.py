"""The local engine of ``mdcert sweep``: K worker processes on this machine, embedded, nothing to start.

A hand-written scheduler over `multiprocessing` (spawn) rather than `concurrent.futures`: each
worker runs one job at a time over its own pipe, so when a worker dies (SIGKILL, the OOM killer) the
engine knows exactly which job it held. That job alone is retried, on a fresh worker, up to
``retries`` times and then recorded failed; a pool-wide BrokenProcessPool would charge every job in
flight for one death. Workers ignore SIGINT: Ctrl-C reaches the driver, which kills its own workers
(by their Process objects) and keeps every finished record.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import time
from collections import deque
from multiprocessing.connection import wait
from typing import Iterable, Iterator

from experiments.sweep.jobs import Job

__all__ = ["LocalEngine"]


def _worker_main(conn, preload: tuple[str, ...]) -> None:
    """A worker process: run jobs received over ``conn`` until None or the pipe closes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    from experiments.sweep.worker import execute, warm

    warm(preload)

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


class _Slot:
    """One worker process and the driver's end of its pipe."""

    def __init__(self, ctx, preload: tuple[str, ...]) -> None:
        self.conn, child = ctx.Pipe(duplex=True)
        self.proc = ctx.Process(target=_worker_main, args=(child, preload), daemon=True, name="mdcert-sweep-worker")
        self.proc.start()
        child.close()
        self.ready = False


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
    """

    name = "local"

    def __init__(self, *, workers: int, retries: int, preload: tuple[str, ...] = ()) -> None:
        self.workers, self.retries, self.preload = workers, retries, tuple(preload)
        self.slots: list[_Slot] = []
        self.startup_s = 0.0
        self._ctx = multiprocessing.get_context("spawn")

    def start(self) -> float:
        """Start the workers and wait until each has loaded mdcert; the seconds it took."""
        t0 = time.perf_counter()
        self.slots = [_Slot(self._ctx, self.preload) for _ in range(self.workers)]
        for slot in self.slots:
            self._await_ready(slot)
        self.startup_s = time.perf_counter() - t0
        return self.startup_s

    def _await_ready(self, slot: _Slot) -> None:
        ready = wait([slot.conn, slot.proc.sentinel])
        if slot.conn in ready and slot.conn.poll():
            msg = slot.conn.recv()
            slot.ready = msg[0] == "ready"
        if not slot.ready:
            raise RuntimeError(f"a sweep worker failed to start ({_death(slot.proc.exitcode)})")

    def pids(self) -> list[int]:
        """The worker processes' pids."""
        return [s.proc.pid for s in self.slots]

    def _replace(self, slot: _Slot) -> _Slot:
        if slot.proc.is_alive():       # its pipe broke but it lives on: it is ours, stop it
            slot.proc.kill()
        slot.proc.join()
        slot.conn.close()
        new = _Slot(self._ctx, self.preload)
        self.slots[self.slots.index(slot)] = new
        return new

    def run(self, jobs: Iterable[Job]) -> Iterator[dict]:
        """Run ``jobs`` (consumed lazily, at most one in flight per worker); yield index lines."""
        from experiments.sweep.worker import failed_record

        source = iter(jobs)
        retry: deque[Job] = deque()
        tries: dict[str, int] = {}
        busy: dict[_Slot, Job] = {}
        exhausted = False
        while True:
            for slot in list(self.slots):
                if slot in busy:
                    continue
                job = retry.popleft() if retry else (None if exhausted else next(source, None))
                if job is None:
                    exhausted = True
                    break
                try:
                    slot.conn.send(job)
                except (BrokenPipeError, OSError):       # died while idle: not the job's fault
                    retry.appendleft(job)
                    self._replace(slot)
                    continue
                tries[job.key] = tries.get(job.key, 0) + 1
                busy[slot] = job
            if not busy:
                return
            ready = set(wait([s.conn for s in busy] + [s.proc.sentinel for s in busy]))
            for slot in list(busy):
                if slot.conn not in ready and slot.proc.sentinel not in ready:
                    continue
                msg = None
                try:
                    while slot.conn.poll():
                        msg = slot.conn.recv()
                        if msg[0] != "ready":
                            break
                except (EOFError, OSError):
                    msg = None
                if msg is not None and msg[0] == "ready":
                    slot.ready = True
                    if slot.proc.is_alive():
                        continue
                    msg = None
                job = busy.pop(slot)
                if msg is not None:
                    attempts = tries.pop(job.key, 1)
                    if msg[0] == "result":
                        yield msg[1]
                    else:
                        yield failed_record(job, f"worker error: {msg[1]}", attempts=attempts)
                    continue
                slot.proc.join(timeout=5)                # its pipe closed: reap it to read how it ended
                cause = _death(slot.proc.exitcode)
                self._replace(slot)
                attempts = tries[job.key]
                if attempts <= self.retries:
                    retry.append(job)
                else:
                    tries.pop(job.key)
                    yield failed_record(job, f"worker process {cause} on all {attempts} attempts; the job may "
                                             f"need more memory or time than a worker has", attempts=attempts)

    def close(self, *, kill: bool = False) -> None:
        """Stop the workers: ask them to exit (or SIGKILL them, ``kill``) and reap them."""
        for slot in self.slots:
            if kill:
                if slot.proc.is_alive():
                    slot.proc.kill()
            else:
                try:
                    slot.conn.send(None)
                except (BrokenPipeError, OSError):
                    pass
        for slot in self.slots:
            slot.proc.join(timeout=None if kill else 10)
            if slot.proc.is_alive():
                slot.proc.kill()
                slot.proc.join()
            slot.conn.close()
        self.slots = []
