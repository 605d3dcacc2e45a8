"""`experiments.commands.paths.linear`: ``mdcert paths`` on a classification problem runs the p-GD
paths of ``mdcert pgd`` (docs/theory.md section 7.5) with the paths options mapped, writes a ``pgd``
run directory, and refuses in one line what does not apply to a linear model."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from certify.errors import MdcertError
from certify.synth import classification_problem, synthetic_problem
from experiments.cli.main import main
from experiments.commands import parse
from experiments.commands.paths import run
from experiments.commands.paths.linear import PGD_STEPS, LinearConfig, LinearResult


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("pathslinear")
    problem = classification_problem(n=12, d=3, classes=None, separable=True, seed=1)
    problem.save(d / "sep.npz")
    problem.save(d / "sep.json")
    synthetic_problem(n=2, T=3, d=2, seed=0).save(d / "att.npz")
    return d


def test_the_paths_options_map_onto_mdcert_pgd(files, tmp_path) -> None:
    config = parse("paths", [str(files / "sep.npz"), "-o", str(tmp_path / "r")])
    assert isinstance(config, LinearConfig) and config.out == str(tmp_path / "r")
    t = config.pgd.training
    assert t.ps == (1.75, 2.0, 3.0) and t.steps == PGD_STEPS and t.inits == 8
    assert t.init_scale == 0.1 and t.loss.value == "logistic" and t.records == 64
    argv = ["--p", "2", "--steps", "50", "--inits", "2", "--init-std", "0.5", "--normalize"]
    t = parse("paths", [str(files / "sep.json"), *argv, "-o", str(tmp_path / "r")]).pgd.training
    assert (t.ps, t.steps, t.inits, t.init_scale, t.normalize) == ((2.0,), 50, 2, 0.5, True)


def test_paths_on_a_classification_file_writes_a_pgd_run(files, tmp_path) -> None:
    out = tmp_path / "run"
    argv = ["--p", "1.5,2", "--steps", "300", "--inits", "2", "--records", "16", "-o", str(out)]
    assert main(["paths", str(files / "sep.npz"), *argv]) == 0
    assert sorted(f.name for f in out.iterdir() if not f.name.startswith(".")) == [
        "arrays.npz",
        "pgd.png",
        "summary.json",
    ]
    summary = json.loads(out.joinpath("summary.json").read_text())
    assert summary["kind"] == "pgd" and summary["config"]["steps"] == 300
    assert [g["p"] for g in summary["groups"]] == [1.5, 2.0]
    assert all(r["status"] == "optimal" for r in summary["references"].values())
    with np.load(out / "arrays.npz") as arrays:
        assert all(np.isfinite(arrays[k]).all() for k in arrays.files)  # never NaN


def test_run_gives_the_paths_result_shape(files, tmp_path) -> None:
    config = parse(
        "paths",
        [str(files / "sep.npz"), "--p", "2", "--steps", "100", "--inits", "1"]
        + ["-o", str(tmp_path / "r")],
    )
    result = run(config)
    assert isinstance(result, LinearResult) and result.exit_code == 0
    result.write(config.out)
    lines = result.lines(80)
    assert lines[0].startswith("paths on a classification problem: p-GD paths")
    assert all(len(line) <= 80 for line in lines)
    assert (tmp_path / "r" / "summary.json").is_file()


@pytest.mark.parametrize(
    "extra, pattern",
    [
        (["--train-decoder"], r"--train-decoder do not apply to it: drop them$"),
        (["--cross", "--T", "3", "--n", "2"], r"--cross, --n, --T do not apply"),
        (["--d", "4", "--trials", "2"], r"--trials, --d do not apply"),
        (["--dtype", "float32"], r"--dtype float32 do not apply"),
        (["--no-certify", "--workers", "0"], r"--no-certify, --workers do not apply"),
        (["--steps", "10,20"], r"same steps: give one --steps value, got '10,20'$"),
        (["--p", "30"], r"--p values must lie in \(1, 20\]"),
        (["--inits", "0"], r"--inits must be an integer in \[1, 4096\]"),
    ],
)
def test_what_does_not_apply_is_refused_in_one_line(files, tmp_path, extra, pattern) -> None:
    with pytest.raises((MdcertError, ValueError)) as info:
        parse("paths", [str(files / "sep.npz"), *extra, "-o", str(tmp_path / "r")])
    assert re.search(pattern, str(info.value)) and "\n" not in str(info.value)
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize(
    "names, pattern",
    [
        (["sep.npz", "att.npz"], r"attention problems or one classification problem, not both"),
        (["att.npz", "sep.npz"], r"'.*att\.npz' is not a classification problem$"),
        (["sep.npz", "sep.json"], r"one classification problem at a time; got 2"),
    ],
)
def test_one_classification_problem_alone(files, tmp_path, names, pattern) -> None:
    with pytest.raises(MdcertError, match=pattern):
        parse("paths", [*(str(files / n) for n in names), "-o", str(tmp_path / "r")])
