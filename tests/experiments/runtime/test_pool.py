"""The process pool (experiments/runtime/pool.py): timeouts, death attribution, no orphans, Ctrl-C."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from concurrent.futures import FIRST_COMPLETED, wait
from pathlib import Path

import pytest

from experiments.runtime.pool import (
    BLAS_THREAD_VARS,
    Pool,
    TaskTimeout,
    WorkerDied,
    WorkerStartError,
    describe_exit,
)

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


def square(x: int) -> int:
    return x * x


def sleep_then(seconds: float, value: object = None) -> object:
    time.sleep(seconds)
    return value


def pid_after(seconds: float) -> int:
    time.sleep(seconds)
    return os.getpid()


def environment(names: tuple[str, ...]) -> dict:
    return {name: os.environ.get(name) for name in names}


def failing_init() -> None:
    raise RuntimeError("no warm-up here")


class Marker:
    """A worker object whose bound ``init`` runs in each worker with its own state."""

    def __init__(self, value: str) -> None:
        self.value = value

    def init(self, suffix: str) -> None:
        os.environ["MDCERT_TEST_MARK"] = self.value + suffix


def _children(pid: int) -> set[int]:
    out = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.add(int(stat.parent.name))
    return out


def _workers_alive(pool_procs) -> list[int]:
    return [
        p.pid
        for p in pool_procs
        if p.pid is not None
        and Path(f"/proc/{p.pid}").exists()
        and Path(f"/proc/{p.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    ]


def test_results_and_blas_threads_in_workers() -> None:
    with Pool(2) as pool:
        futures = [pool.submit(square, i) for i in range(6)]
        assert [f.result(timeout=60) for f in futures] == [i * i for i in range(6)]
        env = pool.submit(environment, BLAS_THREAD_VARS).result(timeout=60)
    for name in BLAS_THREAD_VARS:
        assert env[name] == os.environ.get(name, "1")


def test_a_bound_method_initializer_runs_with_its_state_and_arguments() -> None:
    with Pool(1, initializer=Marker("study").init, initargs=("-7",)) as pool:
        pool.wait_ready(timeout=120)
        assert pool.submit(environment, ("MDCERT_TEST_MARK",)).result(timeout=120) == {
            "MDCERT_TEST_MARK": "study-7"
        }


def test_a_task_past_its_timeout_fails_and_the_pool_goes_on() -> None:
    with Pool(1) as pool:
        slow = pool.submit(sleep_then, 30, timeout=0.5)
        with pytest.raises(TaskTimeout):
            slow.result(timeout=60)
        assert pool.submit(square, 7).result(timeout=60) == 49  # a fresh worker took over


def test_a_killed_worker_is_charged_to_its_own_task_only() -> None:
    """SIGKILL to the worker running a task: that task fails with the worker's pid and signal; the
    task queued behind it runs on the fresh worker that replaces it."""
    with Pool(1) as pool:
        pool.wait_ready(timeout=120)
        victim = pool.submit(pid_after, 60)
        queued = pool.submit(square, 3)
        deadline = time.monotonic() + 60
        while not victim.running() and time.monotonic() < deadline:
            time.sleep(0.02)
        (pid,) = pool.pids()
        os.kill(pid, signal.SIGKILL)
        with pytest.raises(WorkerDied) as info:
            victim.result(timeout=60)
        assert info.value.exitcode == -signal.SIGKILL and info.value.pid == pid
        assert describe_exit(info.value.exitcode) == "killed by signal 9 (SIGKILL)"
        assert queued.result(timeout=60) == 9
        assert len(pool.processes) == 2


def test_shutdown_leaves_no_child_process() -> None:
    before = _children(os.getpid())
    pool = Pool(2)
    pool.wait_ready(timeout=120)
    pool.submit(sleep_then, 30)
    pool.submit(sleep_then, 30)
    procs = pool.processes
    assert len(procs) == 2 and all(p.is_alive() for p in procs)
    t0 = time.monotonic()
    pool.shutdown()
    assert time.monotonic() - t0 < 10
    assert [p.exitcode for p in procs] == [-signal.SIGKILL] * 2
    assert not _workers_alive(procs)
    assert not {pid for pid in _children(os.getpid()) - before if pid in {p.pid for p in procs}}
    pool.shutdown()  # idempotent


@pytest.fixture
def ctrl_c_raises():
    """Ctrl-C raises KeyboardInterrupt here even where pytest was started with SIGINT ignored (a
    background job: ``cmd &``, nohup), as it does in an interactive shell."""
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, old)


def test_interrupt_keeps_finished_results_and_stops_the_workers_within_seconds(
    ctrl_c_raises,
) -> None:
    finished: list = []
    with pytest.raises(KeyboardInterrupt):
        with Pool(2) as pool:
            fast = pool.submit(square, 5)
            slow = pool.submit(sleep_then, 60)
            procs = pool.processes
            wait([fast, slow], return_when=FIRST_COMPLETED, timeout=60)
            finished.append(fast)
            threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGINT)).start()  # Ctrl-C
            t0 = time.monotonic()
            slow.result(timeout=60)
    assert time.monotonic() - t0 < 10
    assert finished[0].result(timeout=0) == 25
    assert not slow.done() or slow.exception(timeout=0) is not None
    assert not _workers_alive(procs)


def test_a_worker_that_cannot_start_is_reported() -> None:
    pool = Pool(1, initializer=failing_init)
    try:
        with pytest.raises(WorkerStartError) as info:
            pool.wait_ready(timeout=120)
        assert info.value.description == "exited with code 1"
    finally:
        pool.shutdown()
