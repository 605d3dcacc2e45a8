"""The local engine (experiments/sweep/local.py): a worker killed mid-job loses and duplicates nothing.

The sweep's driver runs in a thread of this test; the killed worker is found through the temporary
record directory its running job holds (``.KEY.tmp-HOST-PID-RAND``) and checked to be a child of this
process before it is sent SIGKILL.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import pytest

from experiments.sweep.runner import run_sweep
from experiments.sweep.spec import load_spec

from tests.experiments.sweep.helpers import (
    assert_complete,
    descends_from,
    make_problems,
    write_spec,
)

#: certifications of a few tenths of a second each on these machines (N = 180 constraints)
SLOW_SPEC = 'kind = "certify"\n[grid]\nproblem = ["data/*.npz"]\np = ["1.75"]\nalpha = ["opt"]\ndigits = [30]\n'


@pytest.fixture()
def slow_spec(tmp_path):
    make_problems(tmp_path, seeds=(0, 1, 2, 3), n=20, T=10, d=8)
    return load_spec(write_spec(tmp_path, SLOW_SPEC))


def _kill_a_running_worker(out: Path, done: threading.Event) -> tuple[str, int] | None:
    """SIGKILL the worker of the first running job found; (its key, pid)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not done.is_set():
        for tmp in out.glob("records/*/.*.tmp-*"):
            key = tmp.name[1:65]
            pid = int(tmp.name.rsplit("-", 2)[1])
            if descends_from(pid, os.getpid()):
                os.kill(pid, signal.SIGKILL)
                return key, pid
        time.sleep(0.01)
    return None


def _sweep_in_thread(spec, out, **kw):
    result: dict = {}
    done = threading.Event()

    def target() -> None:
        try:
            result["res"] = run_sweep(spec, out, engine="local", workers=2, progress=False, **kw)
        finally:
            done.set()

    thread = threading.Thread(target=target)
    thread.start()
    return thread, done, result


def test_killed_worker_is_retried_nothing_lost_or_duplicated(slow_spec, tmp_path) -> None:
    out = tmp_path / "out"
    thread, done, result = _sweep_in_thread(slow_spec, out, retries=2)
    killed = _kill_a_running_worker(out, done)
    thread.join(timeout=120)
    assert killed is not None, "no running job was seen"
    res = result["res"]
    assert (res.done, res.failed, res.skipped) == (4, 0, 0)
    records = assert_complete(out, 4)
    assert all(r["status"] == "done" and r["verdict"] == "optimal" for r in records)
    by_key = {r["key"]: r for r in records}
    assert by_key[killed[0]]["attempt"] == 2 and by_key[killed[0]]["pid"] != killed[1]
    rerun = run_sweep(slow_spec, out, engine="local", workers=2, progress=False)
    assert (rerun.done, rerun.failed, rerun.skipped, rerun.startup_s) == (
        0,
        0,
        4,
        0.0,
    )  # nothing started


def test_retries_exhausted_is_failed_and_a_rerun_completes(slow_spec, tmp_path) -> None:
    out = tmp_path / "out"
    thread, done, result = _sweep_in_thread(slow_spec, out, retries=0)
    killed = _kill_a_running_worker(out, done)
    thread.join(timeout=120)
    assert killed is not None
    res = result["res"]
    assert (res.done, res.failed) == (3, 1)
    records = {r["key"]: r for r in assert_complete(out, 4)}
    assert records[killed[0]]["status"] == "failed"
    assert "killed by signal 9 (SIGKILL) on all 1 attempts" in records[killed[0]]["error"]
    assert "failed jobs" in (out / "summary.md").read_text().lower()
    rerun = run_sweep(slow_spec, out, engine="local", workers=1, progress=False)
    assert (rerun.done, rerun.failed, rerun.skipped) == (1, 0, 3)
    assert all(r["status"] == "done" for r in assert_complete(out, 4))


def test_a_worker_killed_between_jobs_costs_no_job(slow_spec, tmp_path, monkeypatch) -> None:
    """A worker SIGKILLed while idle (after start-up, before any job) breaks the pebble pool as a
    whole: the engine starts fresh workers and every job still completes, none charged."""
    from experiments.sweep.local import LocalEngine

    original, killed = LocalEngine.start, []

    def start_then_kill(self) -> float:
        seconds = original(self)
        if not killed:
            killed.append(self.pids()[0])
            os.kill(killed[0], signal.SIGKILL)
            time.sleep(0.5)
        return seconds

    monkeypatch.setattr(LocalEngine, "start", start_then_kill)
    res = run_sweep(
        slow_spec, tmp_path / "out", engine="local", workers=2, retries=0, progress=False
    )
    assert killed and (res.done, res.failed) == (4, 0)
    assert all(
        r["status"] == "done" and r["attempt"] == 1 for r in assert_complete(tmp_path / "out", 4)
    )
