"""A sweep of a command of the application layer (`experiments.commands`), end to end, with the
test double `tests.experiments.sweep.fake_command`: grid points refused up front by the command's
own parser and Config, jobs run with ``run(config)`` in the workers, ``Result.write`` into the
record, ``Result.lines`` as its stdout.txt, ``Result.exit_code`` and exceptions as exit codes."""

from __future__ import annotations

import json
import os
import re

import pytest

from certify.errors import MdcertError
from experiments.commands import COMMAND_MODULES
from experiments.sweep import worker
from experiments.sweep.jobs import iter_jobs
from experiments.sweep.kinds import KINDS, ParamType, get_kind
from experiments.sweep.runner import run_sweep
from experiments.sweep.spec import load_spec
from experiments.sweep.store import Store

from tests.experiments.sweep.helpers import assert_complete, write_spec

FAKE_MODULE = "tests.experiments.sweep.fake_command"


@pytest.fixture()
def fake(monkeypatch, tmp_path):
    """The fake command and kind registered in this process (undone after the test); two inputs."""
    monkeypatch.setitem(COMMAND_MODULES, "fake", FAKE_MODULE)
    monkeypatch.setitem(KINDS, "fake", f"{FAKE_MODULE}:FAKE")
    (tmp_path / "a.txt").write_text("abc")  # 3 bytes
    (tmp_path / "b.txt").write_text("abcd")  # 4 bytes
    return tmp_path


def _spec(folder, grid: str, name: str = "fake.toml"):
    return load_spec(
        write_spec(
            folder, 'kind = "fake"\n[grid]\nproblem = ["a.txt", "b.txt"]\n' + grid, name=name
        )
    )


def test_grid_parameters_come_from_the_commands_parser(fake) -> None:
    kind = get_kind("fake")
    got = {p.name: (p.type, p.flag, p.required, p.choices) for p in kind.params}
    assert got == {
        "problem": (ParamType.FILE, None, True, ()),
        "n": (ParamType.INT, "--n", False, ()),
        "p": (ParamType.DECIMAL, "--p", False, ()),
        "mode": (
            ParamType.TEXT,
            "--mode",
            False,
            ("ok", "answer", "fails", "bad", "boom", "warn", "noextra"),
        ),
        "loud": (ParamType.BOOL, "--loud", False, ()),
    }
    assert kind.worker_preload() == (
        "experiments.commands",
        "experiments.commands.outcome",
        FAKE_MODULE,
    )
    argv = kind.argv({"problem": "/a", "n": 2, "p": "1.5", "loud": True}, "/r")
    assert argv == ["fake", "/a", "--n=2", "--p=1.5", "--loud", "-o", "/r/fake.json"]


@pytest.mark.parametrize(
    "grid, pattern",
    [
        (
            "n = [1, 101]\n",
            r"grid point \(problem=a\.txt, n=101\): mdcert fake refuses it: --n must be between 1 and 100, got 101",
        ),
        (
            'p = ["2", "1"]\n',
            r"grid point \(problem=a\.txt, p=1\): mdcert fake refuses it: --p must be > 1, got '1'",
        ),
        ('p = ["x"]\n', r"p=x\): mdcert fake refuses it: --p must be an exact decimal"),
        (
            'mode = ["nope"]\n',
            r"grid\.mode: 'nope' is not one of ok, answer, fails, bad, boom, warn, noextra$",
        ),
        ('n = ["2"]\n', r"grid\.n: '2' is not an integer"),
        (
            "q = [1]\n",
            r"unknown key grid\.q for kind 'fake'; the grid takes problem, n, p, mode, loud",
        ),
    ],
)
def test_a_value_the_command_refuses_is_refused_before_any_job(fake, grid, pattern) -> None:
    with pytest.raises(MdcertError) as info:
        _spec(fake, grid)
    msg = str(info.value)
    assert msg.startswith("SPEC fake.toml: ") and "\n" not in msg and re.search(pattern, msg), msg


def test_the_cli_refuses_the_spec_with_one_line_and_exit_1(fake, capsys) -> None:
    from experiments.cli.main import main

    spec = write_spec(
        fake, 'kind = "fake"\n[grid]\nproblem = ["a.txt"]\nn = [5, 500]\n', name="bad.toml"
    )
    assert main(["sweep", str(spec), "-o", str(fake / "out"), "--progress", "off"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "mdcert sweep: error: SPEC bad.toml: grid point (problem=a.txt, n=500): mdcert fake refuses "
        "it: --n must be between 1 and 100, got 500"
    ]
    assert not (fake / "out").exists()


def test_a_job_is_the_commands_run_write_and_lines(fake) -> None:
    spec = _spec(fake, "n = [3]\np = [1.5]\nloud = [true]\n")
    job = next(iter_jobs(spec, fake / "out"))
    line = worker.execute(job)
    assert (line["status"], line["exit_code"], line["verdict"], line["error"]) == (
        "done",
        0,
        "odd",
        None,
    )
    store = Store(fake / "out")
    rec, folder = store.finished(job.key), store.record_dir(job.key)
    assert rec["argv"] == [
        "fake",
        str((fake / "a.txt").resolve()),
        "--n=3",
        "--p=1.5",
        "--loud",
        "-o",
        "fake.json",
    ]
    assert set(rec["outputs"]) == {"fake.json", "stdout.txt", "stderr.txt"}
    assert json.loads((folder / "fake.json").read_text()) == {"value": 9, "p": "3/2"}
    problem = str((fake / "a.txt").resolve())
    assert (
        folder / "stdout.txt"
    ).read_text() == f"running on stdout: fake {problem}\nvalue: 9\np: 3/2\n"
    assert (folder / "stderr.txt").read_text() == "running on stderr\n"


@pytest.mark.parametrize(
    "mode, status, code, error",
    [
        ("answer", "done", 2, None),  # an answer code of the kind
        ("fails", "failed", 5, "exit code 5 with no message"),
        ("bad", "failed", 1, "mdcert fake: error: a.txt is refused while running"),
        (
            "boom",
            "failed",
            70,
            "mdcert fake: internal error: ZeroDivisionError: integer division or modulo by zero",
        ),
        (
            "noextra",
            "failed",
            1,
            "mdcert fake: error: this command needs torch, which is not installed on ",
        ),
    ],
)
def test_exit_codes_and_failures(fake, mode, status, code, error) -> None:
    job = next(iter_jobs(_spec(fake, f'mode = ["{mode}"]\n'), fake / "out"))
    line = worker.execute(job)
    got = line["error"][: len(error)] if mode == "noextra" else line["error"]  # then the host name
    assert (line["status"], line["exit_code"], got) == (status, code, error)
    assert Store(fake / "out").read_record(job.key)["status"] == status


def test_an_input_warning_is_one_line_on_the_jobs_stderr(fake) -> None:
    job = next(iter_jobs(_spec(fake, 'mode = ["warn"]\n'), fake / "out"))
    assert worker.execute(job)["status"] == "done"
    stderr = Store(fake / "out").record_dir(job.key) / "stderr.txt"
    assert stderr.read_text() == "mdcert fake: warning: a.txt looks suspicious\n"


def test_a_sweep_runs_the_command_in_worker_processes_and_resumes(fake) -> None:
    spec = _spec(fake, 'n = [1, 2]\nmode = ["ok", "bad"]\n')
    out = fake / "out"
    res = run_sweep(spec, out, workers=2, progress=False)
    assert (res.points, res.done, res.failed) == (8, 4, 4)
    records = assert_complete(out, 8)
    done = {
        (r["labels"]["problem"], r["labels"]["n"]): r["verdict"]
        for r in records
        if r["status"] == "done"
    }
    assert done == {
        ("a.txt", "1"): "odd",
        ("a.txt", "2"): "even",
        ("b.txt", "1"): "even",
        ("b.txt", "2"): "even",
    }
    failed = [r for r in records if r["status"] == "failed"]
    assert all(
        r["exit_code"] == 1 and r["error"].endswith("is refused while running") for r in failed
    )
    assert all(r["pid"] != os.getpid() for r in records)  # run in the workers
    summary = (out / "summary.md").read_text()
    assert (
        "| n | mode | jobs | even | odd | failed |" in summary
        and "| 1 | ok | 2 | 1 | 1 | 0 |" in summary
    )
    assert (
        "problem=a.txt, n=1, mode=bad: mdcert fake: error: a.txt is refused while running"
        in summary
    )
    rerun = run_sweep(spec, out, workers=1, progress=False)
    assert (rerun.skipped, rerun.done, rerun.failed) == (4, 0, 4)  # failed ones are retried
