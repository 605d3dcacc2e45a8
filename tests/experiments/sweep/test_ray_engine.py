"""The Ray engine (experiments/sweep/ray_engine.py): the same certificates as the single commands, a
worker killed with SIGKILL mid-sweep loses and duplicates nothing, a rerun runs nothing.

One Ray instance serves the module: the engine starts it (the path of ``--engine ray`` with no
address) and its close stops it, checked at teardown; the tests' sweeps reuse it, as a library
caller's would. A test kills only a Ray worker process that descends from this test process. The running task's worker pid comes
from Ray's own task records (the task events in the GCS; `ray.util.state.list_tasks` needs the
dashboard's API server).
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time

import pytest

ray = pytest.importorskip("ray")

from experiments.cli.main import main  # noqa: E402
from experiments.sweep.runner import run_sweep  # noqa: E402
from experiments.sweep.spec import load_spec  # noqa: E402

from tests.experiments.sweep.helpers import (  # noqa: E402
    CERTIFY_SPEC,
    assert_complete,
    descends_from,
    make_problems,
    single_certificate,
    strip_timing,
    sweep_certificates,
    write_spec,
)

RUNNING, FINISHED, FAILED = 8, 11, 12  # ray.core.generated.common_pb2.TaskStatus


def running_task_pids(name: str = "execute") -> list[int]:
    """Worker pids of the running tasks called ``name``, from Ray's task records: the task events in
    the GCS (``ray._private.state``), else `ray.util.state.list_tasks` (which needs the dashboard's
    API server; the minimal dashboard of a ``ray start`` instance answers it with an empty list)."""
    try:
        from ray._private.state import state

        pids = []
        for ev in state._get_all_task_events():
            times = ev.state_updates.state_ts_ns
            if (
                ev.task_info.name == name
                and ev.state_updates.worker_pid
                and RUNNING in times
                and FINISHED not in times
                and FAILED not in times
            ):
                pids.append(ev.state_updates.worker_pid)
        return pids
    except (ImportError, AttributeError):  # another Ray version: its public state API
        from ray.util.state import list_tasks

        return [
            t.worker_pid
            for t in list_tasks(filters=[("state", "=", "RUNNING"), ("name", "=", name)])
            if t.worker_pid
        ]


@pytest.fixture(scope="module")
def ray_engine():
    """One local Ray for this module, started and stopped by the engine itself (2 CPUs; task events
    reported every 100 ms through Ray's RAY_<config> environment, so a running task is seen quickly)."""
    from experiments.sweep.ray_engine import RayEngine

    assert not ray.is_initialized()
    old = os.environ.get("RAY_task_events_report_interval_ms")
    os.environ["RAY_task_events_report_interval_ms"] = "100"
    engine = RayEngine(workers=2, retries=2)
    try:
        engine.start()
        assert engine.owned and ray.is_initialized() and engine.capacity == 2
        yield engine
    finally:
        engine.close()
        if old is None:
            os.environ.pop("RAY_task_events_report_interval_ms", None)
        else:
            os.environ["RAY_task_events_report_interval_ms"] = old
        stopped = not ray.is_initialized()
        if not stopped:
            ray.shutdown()
    assert stopped, "the engine did not stop the Ray instance it started"


def test_cli_ray_sweep_equals_the_single_commands(ray_engine, tmp_path, capsys) -> None:
    problems = make_problems(tmp_path)
    spec = write_spec(tmp_path, CERTIFY_SPEC)
    out = tmp_path / "sweep"
    assert (
        main(
            [
                "sweep",
                str(spec),
                "-o",
                str(out),
                "--engine",
                "ray",
                "--workers",
                "2",
                "--progress",
                "off",
            ]
        )
        == 0
    )
    assert ray.is_initialized()  # a connected caller's Ray is left up
    text = capsys.readouterr().out
    assert "8 done and 0 failed" in text and "engine start-up" in text
    got = sweep_certificates(out)
    assert len(got) == 8
    for path in problems:
        for p in ("1.75", "2"):
            want = single_certificate(path, p, tmp_path / "single.json")
            assert strip_timing(got[(f"data/{path.name}", p)]) == strip_timing(want)
    assert_complete(out, 8)
    assert main(["sweep", str(spec), "-o", str(out), "--engine", "ray", "--progress", "off"]) == 0
    assert "8 already finished, 0 done" in capsys.readouterr().out  # a rerun runs 0 jobs


def test_a_ray_worker_killed_mid_sweep_is_retried_nothing_lost_or_duplicated(
    ray_engine, tmp_path
) -> None:
    make_problems(tmp_path, seeds=(0, 1, 2, 3), n=50, T=16, d=14)  # about a second each
    spec = load_spec(
        write_spec(tmp_path, 'kind = "certify"\n[grid]\nproblem = ["data/*.npz"]\np = ["1.75"]\n')
    )
    out = tmp_path / "sweep"
    result: dict = {}
    done = threading.Event()

    def target() -> None:
        try:
            result["res"] = run_sweep(spec, out, engine="ray", workers=2, retries=2, progress=False)
        finally:
            done.set()

    thread = threading.Thread(target=target)
    thread.start()
    killed = None
    deadline = time.monotonic() + 90
    while killed is None and time.monotonic() < deadline and not done.is_set():
        for pid in running_task_pids():
            if descends_from(pid, os.getpid()):  # a worker of the Ray this module started
                os.kill(pid, signal.SIGKILL)
                killed = pid
                break
        time.sleep(0.02)
    thread.join(timeout=180)
    assert killed is not None, "no running task was seen"
    res = result["res"]
    assert (res.done, res.failed, res.skipped) == (4, 0, 0)
    records = assert_complete(out, 4)
    assert all(r["status"] == "done" and r["verdict"] == "optimal" for r in records)
    assert killed not in {r["pid"] for r in records}
    assert max(r["attempt"] for r in records) == 2  # the killed job ran again, once
    assert ray.is_initialized()  # a connected caller's Ray is left up
    rerun = run_sweep(spec, out, engine="ray", workers=2, progress=False)
    assert (rerun.done, rerun.skipped) == (0, 4)
    lines = [json.loads(t) for t in (out / "index.jsonl").read_text().splitlines()]
    assert len(lines) == 4
