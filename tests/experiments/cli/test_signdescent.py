"""``mdcert signdescent``: a run directory with certified references, warnings for data outside the
paper's setting, and a table of bad input (one line, exit 1, nothing written, inputs untouched)."""

from __future__ import annotations

import hashlib
import json
import re

import numpy as np
import pytest

from certify.regression import RegressionProblem, regression_problem
from experiments.cli.main import main
from experiments.diagnet.figures import have_matplotlib

SHORT = ["--steps", "200", "--eps", "0.01,0.05"]


def _digest(d):
    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(d.iterdir())
        if p.is_file()
    }


@pytest.fixture()
def inputs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    regression_problem("block", N=2, seed=0).save("block.npz")
    regression_problem("gaussian", N=3, D=3, seed=0).save("square.npz")  # N = D: warned, consistent
    regression_problem("gaussian", N=6, D=3, seed=0).save("tall.npz")  # N > D: inconsistent
    X = np.array([[1.0, 2.0, 0.0, 0.0], [1.0, 2.0, 0.0, 0.0]])
    RegressionProblem(X, np.array([1.0, 2.0])).save("inconsistent.npz")  # N < D, still no solution
    pr = regression_problem("block", N=2, seed=0)
    RegressionProblem(pr.X, np.array([pr.y[0], 0.0])).save("yzero.npz")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "mine.txt").write_text("user data\n")
    return tmp_path


def test_a_run_writes_summary_paths_and_figures(inputs, capsys) -> None:
    assert main(["signdescent", "block.npz", "--rules", "sign,gd", *SHORT, "-o", "run"]) == 0
    cap = capsys.readouterr()  # eps = 0.05 is outside Assumption 3.3 here: its one warning only
    assert cap.err.startswith("warning: Assumption 3.3 (arXiv 2410.14158 eqs. 18-19) is not proved")
    assert cap.err.count("\n") == 1 and "(certified)" in cap.out and "wall: references" in cap.out
    data = json.loads((inputs / "run" / "summary.json").read_text())
    assert data["kind"] == "signdescent" and len(data["trajectories"]) == 4
    names = {p.name for p in (inputs / "run").iterdir()}
    assert {"summary.json", "paths.npz"} <= names
    assert (
        {"trajectories_sign.png", "trajectories_gd.png", "vs_eps.png"} <= names
    ) == have_matplotlib()
    assert (
        main(["signdescent", "block.npz", *SHORT, "--no-figures", "-o", "run", "--overwrite"]) == 0
    )
    assert {p.name for p in (inputs / "run").iterdir()} == {
        "summary.json",
        "paths.npz",
        ".mdcert-run",
    }


@pytest.mark.parametrize(
    "problem, warning",
    [
        ("square.npz", r"^warning: N = 3 >= D = 3: the sign-descent theory needs D > N"),
        ("yzero.npz", r"^warning: y has zero entries at rows \[1\]: Assumption 3\.2"),
    ],
)
def test_data_outside_the_setting_is_warned_and_still_run(inputs, capsys, problem, warning) -> None:
    assert main(["signdescent", problem, *SHORT, "-o", "run"]) == 0
    err = capsys.readouterr().err.splitlines()  # the setting's warning, then Assumption 3.3's
    assert len(err) == 2 and re.search(warning, err[0])
    assert err[1].startswith("warning: Assumption 3.3 (arXiv 2410.14158 eqs. 18-19) is not proved")
    assert (inputs / "run" / "summary.json").is_file()


BAD = [
    (["block.npz", "--eps", "0"], r"eps values must be finite and positive, got \[0\.0\]"),
    (["block.npz", "--eps=-1e-3"], r"eps values must be finite and positive"),
    (["block.npz", "--eps", "nan"], r"eps values must be finite and positive"),
    (["block.npz", "--eps", "a,b"], r"--eps must be comma-separated numbers"),
    (["block.npz", "--alpha", "0"], r"alpha values must be finite and positive"),
    (["block.npz", "--alpha=-0.1"], r"alpha values must be finite and positive"),
    (["block.npz", "--lr", "inf"], r"lr values must be finite and positive"),
    (["block.npz", "--steps", "0"], r"steps must be in 1\.\.1e9"),
    (["block.npz", "--rules", "sign,lion"], r"--rules must be comma-separated from gd, sign, adam"),
    (["block.npz", "--betas", "0.9"], r"--betas needs two numbers"),
    (["block.npz", "--rules", "adam", "--betas", "0.9,1"], r"Adam betas must lie in \[0, 1\)"),
    (["block.npz", "--threads", "0"], r"--threads must be in 1\.\.1024"),
    (["block.npz", "--depth", "1"], r"--depth must be an integer in 2\.\.64, got 1"),
    (["block.npz", "--depth", "65"], r"--depth must be an integer in 2\.\.64"),
    (["block.npz", "--quick"], r"--quick applies only to --preset paper"),
    (
        ["inconsistent.npz"],
        r"X beta = y has no solution \(proven.*certified references do not exist",
    ),
    (["missing.npz"], r"missing\.npz"),
    ([], r"give a PROBLEM file"),
    (["block.npz", "--preset", "paper"], r"--preset paper makes its own data; drop PROBLEM"),
    (["--preset", "paper", "--synth", "block"], r"drop --synth"),
    (["block.npz", "-o", "full"], r"exists and is not empty; use --overwrite"),
    (["block.npz", "-o", "full", "--overwrite"], r"not an mdcert run directory"),
    (["block.npz", "-o", "."], r"contains the problem file"),
    (["new.npz", "--synth", "block", "--N", "0"], r"--N must be in 1\.\.1e4"),
    (["new.npz", "--synth", "block", "--N", "2", "--D", "5"], r"block data have D = 2N"),
]


@pytest.mark.parametrize("argv, match", BAD)
def test_bad_input_is_one_line_and_writes_nothing(inputs, capsys, argv, match) -> None:
    before = _digest(inputs)
    out = [] if "-o" in argv else ["-o", "run"]
    assert main(["signdescent", *SHORT, *argv, *out]) == 1  # argv last: its options win
    err = capsys.readouterr().err.splitlines()
    assert (
        len(err) == 1
        and err[0].startswith("mdcert signdescent: error: ")
        and re.search(match, err[0])
    ), err
    assert _digest(inputs) == before  # inputs byte-identical, nothing written next to them
    assert (
        not (inputs / "run").exists()
        and sorted(p.name for p in inputs.iterdir() if p.name.startswith(".")) == []
    )
    assert [p.name for p in (inputs / "full").iterdir()] == ["mine.txt"]


def test_an_inconsistent_tall_system_is_refused_in_one_line(inputs, capsys) -> None:
    assert main(["signdescent", "tall.npz", *SHORT, "-o", "run"]) == 1
    err = capsys.readouterr().err.splitlines()  # no N >= D warning: the run never starts
    assert len(err) == 1 and re.search(
        r"^mdcert signdescent: error: X beta = y has no solution", err[0]
    )
    assert not (inputs / "run").exists()
