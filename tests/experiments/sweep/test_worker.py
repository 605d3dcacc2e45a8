"""One job in a worker (experiments/sweep/worker.py): the single command's argv, captured, recorded."""

from __future__ import annotations

import json

import pytest

from experiments.sweep import worker
from experiments.sweep.jobs import iter_jobs
from experiments.sweep.spec import load_spec
from experiments.sweep.store import Store
from experiments.sweep.worker import execute, failed_record

from tests.experiments.sweep.helpers import (
    make_problems,
    single_certificate,
    strip_timing,
    write_spec,
)


@pytest.fixture()
def jobs(tmp_path):
    make_problems(tmp_path, seeds=(1,))
    spec = load_spec(
        write_spec(
            tmp_path,
            'kind = "certify"\n[grid]\nproblem = ["data/p1.npz"]\n'
            'p = ["2"]\nalpha = ["opt", "0,1"]\n',
        )
    )
    return list(iter_jobs(spec, tmp_path / "out"))


def test_a_done_job_is_the_single_command(jobs, tmp_path) -> None:
    line = execute(jobs[0])
    assert line["status"] == "done" and line["verdict"] == "optimal" and line["exit_code"] == 0
    store = Store(tmp_path / "out")
    rec = store.finished(jobs[0].key)
    assert rec["argv"] == [
        "certify",
        str(tmp_path.resolve() / "data" / "p1.npz"),
        "--p=2",
        "--alpha=opt",
        "-o",
        "cert.json",
    ]
    assert set(rec["outputs"]) == {"cert.json", "stdout.txt", "stderr.txt"} and rec["attempt"] == 1
    got = json.loads((store.record_dir(jobs[0].key) / "cert.json").read_text())
    want = single_certificate(
        tmp_path / "data" / "p1.npz", "2", tmp_path / "single.json", digits=60
    )
    assert strip_timing(got) == strip_timing(want)
    assert "status: optimal" in (store.record_dir(jobs[0].key) / "stdout.txt").read_text()


def test_a_failing_job_is_recorded_with_its_one_line(jobs, tmp_path) -> None:
    line = execute(jobs[1])  # alpha 0,1 for 6 examples: bad input
    assert line["status"] == "failed" and line["exit_code"] == 1 and line["verdict"] is None
    assert (
        line["error"].startswith("mdcert certify: error: ")
        and "one token index per example" in line["error"]
    )
    assert Store(tmp_path / "out").read_record(jobs[1].key)["status"] == "failed"


def test_a_changed_input_is_not_run(jobs, tmp_path, monkeypatch) -> None:
    make_problems(tmp_path, seeds=(1,), n=5)  # p1.npz now holds other bytes
    monkeypatch.setattr(worker, "run_job", lambda *a: pytest.fail("must not run"))
    line = execute(jobs[0])
    assert line["status"] == "failed" and "changed since the sweep started" in line["error"]


def test_a_finished_record_is_reused_and_failed_record_defers_to_it(jobs, monkeypatch) -> None:
    execute(jobs[0])
    monkeypatch.setattr(worker, "run_job", lambda *a: pytest.fail("must not run twice"))
    assert execute(jobs[0])["status"] == "done"
    assert failed_record(jobs[0], "worker died", attempts=3)["status"] == "done"
    line = failed_record(
        jobs[1], "worker process killed by signal 9 (SIGKILL) on all 3 attempts", attempts=3
    )
    assert line["status"] == "failed" and line["attempt"] == 3 and "SIGKILL" in line["error"]


def test_an_internal_error_is_exit_70(jobs, monkeypatch) -> None:
    import experiments.commands.certify as cmd

    monkeypatch.setattr(cmd, "run", lambda config: 1 / 0)
    line = execute(jobs[0])
    assert (
        line["status"] == "failed"
        and line["exit_code"] == 70
        and "internal error: ZeroDivisionError" in line["error"]
    )


def test_a_warm_worker_charges_no_start_up_to_its_first_job(tmp_path) -> None:
    """After `warm` with the kind's preload, a fresh worker's first certify and check jobs import no
    module of mdcert or of its numerical stack: start-up is the engine's, reported apart."""
    import subprocess
    import sys
    from pathlib import Path

    make_problems(tmp_path, seeds=(1,))
    code = """if True:
        import sys
        from pathlib import Path
        from experiments.sweep.commands import CERTIFY, CHECK
        from experiments.sweep.worker import run_job, warm
        warm(CERTIFY.worker_preload() + CHECK.worker_preload())
        tmp, problem = Path(sys.argv[1]), sys.argv[2]
        roots = ("certify", "theorems", "experiments", "numpy", "scipy", "flint", "sympy", "mpmath", "torch")
        for i, argv in enumerate([["certify", problem, "--p", "2", "-o", str(tmp / "c.json")],
                                  ["check", problem, "--p", "2", "--theorem", "10", "--alpha", "opt",
                                   "--json", str(tmp / "r.json")]]):
            before = set(sys.modules)
            folder = tmp / str(i)
            folder.mkdir()
            kind = CERTIFY if argv[0] == "certify" else CHECK
            assert run_job(kind, argv, folder) == 0, (folder / "stderr.txt").read_text()
            new = sorted(m for m in set(sys.modules) - before if m.split(".")[0] in roots)
            print(argv[0], ",".join(new))
    """
    root = Path(__file__).resolve().parents[3]
    out = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path), str(tmp_path / "data" / "p1.npz")],
        capture_output=True,
        text=True,
        cwd=root,
        timeout=300,
        env={**__import__("os").environ, "PYTHONPATH": str(root)},
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:2] == ["certify ", "check "], out.stdout
