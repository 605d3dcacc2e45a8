"""The built-in kinds (experiments/sweep/commands.py): check and synth jobs run as their commands;
paths jobs build the command's argv (a real paths sweep is a slow test)."""

from __future__ import annotations

import json

import pytest

from experiments.cli.main import build_parser
from experiments.sweep.kinds import get_kind
from experiments.sweep.runner import run_sweep
from experiments.sweep.spec import load_spec

from tests.experiments.sweep.helpers import assert_complete, make_problems, write_spec


def test_check_jobs_read_the_theorem_verdict(tmp_path) -> None:
    make_problems(tmp_path, seeds=(1,))
    spec = load_spec(
        write_spec(
            tmp_path,
            'kind = "check"\n[grid]\nproblem = ["data/p1.npz"]\np = ["2", "3"]\n'
            'theorem = [10]\nalpha = ["opt"]\nmu = ["0.5"]\nR = ["1"]\n',
        )
    )
    res = run_sweep(spec, tmp_path / "out", workers=1, progress=False)
    assert (res.done, res.failed) == (2, 0)
    for rec in assert_complete(tmp_path / "out", 2):
        report = json.loads(
            (tmp_path / "out" / "records" / rec["key"][:2] / rec["key"] / "report.json").read_text()
        )
        assert rec["verdict"] == report["verdict"] in ("holds", "fails", "undecided")
        assert rec["argv"][-2:] == ["--json", "report.json"] and "--mu=0.5" in rec["argv"]
    assert (tmp_path / "out" / "verdicts.png").is_file()


def test_paths_argv_is_accepted_by_the_paths_command() -> None:
    argv = get_kind("paths").argv(
        {
            "p": "1.75,2",
            "steps": "100",
            "trials": 2,
            "normalize": True,
            "no_certify": True,
            "seed": 3,
        },
        "/r",
    )
    assert argv[-2:] == ["-o", "/r/run"]
    args = build_parser()[0].parse_args(argv)
    assert (args.p, args.trials, args.normalize, args.no_certify, args.seed) == (
        "1.75,2",
        2,
        True,
        True,
        3,
    )
    on_file = get_kind("paths").argv({"problem": "/d/a.npz", "p": "2", "lr": "0.1"}, "/r")
    assert on_file[:2] == ["paths", "/d/a.npz"]  # problems x p x lr x inits
    assert build_parser()[0].parse_args(on_file).problems == ["/d/a.npz"]


@pytest.mark.slow
def test_a_paths_sweep_writes_each_run(tmp_path) -> None:
    spec = load_spec(
        write_spec(
            tmp_path,
            'kind = "paths"\n[grid]\nseed = [0, 1]\ntrials = [2]\np = ["1.75"]\n'
            'steps = ["50"]\nno_certify = [true]\nworkers = [0]\n',
        )
    )
    res = run_sweep(spec, tmp_path / "out", workers=2, progress=False)
    assert (res.done, res.failed) == (2, 0)
    for rec in assert_complete(tmp_path / "out", 2):
        run = tmp_path / "out" / "records" / rec["key"][:2] / rec["key"] / "run"
        assert json.loads((run / "summary.json").read_text())["kind"] == "paths"
