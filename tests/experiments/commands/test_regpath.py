"""``experiments.commands.regpath``: options validated by ``Config.from_options`` (one line, before
anything is written), ``parse("regpath", argv)`` equal to the CLI's config, and ``run(config)`` ->
``Result.write`` / ``Result.lines`` at the smallest sizes."""

from __future__ import annotations

import dataclasses
import json
import os
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from certify import synthetic_problem
from certify.errors import MdcertError
from experiments.commands import COMMAND_MODULES, module, parse
from experiments.commands.regpath import (
    JOINT_EXAMPLE,
    KIND,
    Config,
    Result,
    add_arguments,
    run,
    token_notes,
)


@pytest.fixture(scope="module")
def problem_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("problem") / "small.npz"
    synthetic_problem(n=2, T=3, d=2, seed=1).save(path)
    return path


def _argv(problem: Path, out: Path, *extra: str) -> list[str]:
    return [str(problem), "--p", "2", "--radii", "1:10:2", "-o", str(out), *extra]


BAD = [
    (["--p", "1"], r"--p > 1"),
    (["--p", "x"], r"--p"),
    (["--radii", "junk"], r"START:STOP:COUNT"),
    (["--radii", "0:10:3"], r"finite and positive"),
    (["--radii", "10:1:3"], r"START 10\.0 > STOP 1\.0"),
    (["--radii", "1:10:0"], r"COUNT must be >= 1"),
    (["--seed=-1"], r"^invalid --seed -1; give an integer in 0\.\.2\*\*63-1$"),
    (["--starts", "1001"], r"^invalid --starts 1001; give a number in 0\.\.1000$"),
    (["--starts=-1"], r"^invalid --starts -1"),
    (["--starts", "0", "--no-svm-start", "--no-dual-start"], r"^no starts: use --starts >= 1"),
    (["--digits", "4"], r"^invalid --digits 4; use at least 5$"),
    (["--md-steps", "5"], r"^--md-steps needs --joint and a number >= 0$"),
    (["--joint", "--r-of-R", "R", "--md-steps=-1"], r"^--md-steps needs --joint"),
    (
        ["--joint", "--r-of-R", "R", "--md-steps", "2000000000"],
        r"^invalid --md-steps 2000000000; "
        r"give at most 1e\+09 steps$",
    ),
    (["--md-lr", "0"], r"^invalid --md-lr 0\.0; give a positive step size$"),
    (["--md-lr", "nan"], r"^invalid --md-lr nan"),
    (["--md-lr", "inf"], r"^invalid --md-lr inf"),
    (["--joint"], r"^--joint needs --r-of-R EXPR"),
    (["--joint", "--r-of-R", "os.system('x')"], r"not allowed"),
    (["--joint", "--r-of-R", "log(R)"], r"finite and positive"),
    (["--joint", "--r-of-R", "log(R-1)"], r"cannot be evaluated at R = 1"),
    (["--r-of-R", "R"], r"^--r-of-R is only used with --joint$"),
    (["--loss", "hinge"], r"invalid choice: 'hinge'"),  # the parser's choices (ValueError)
    (["--starts", "x"], r"invalid int value: 'x'"),
]


@pytest.mark.parametrize("extra, match", BAD, ids=[" ".join(e) for e, _ in BAD])
def test_bad_options_fail_with_one_line_before_anything_is_written(
    problem_file, tmp_path, extra, match
) -> None:
    with pytest.raises((MdcertError, ValueError)) as err:
        parse("regpath", _argv(problem_file, tmp_path / "run", *extra))
    assert "\n" not in str(err.value)
    assert err.match(match)
    assert os.listdir(tmp_path) == []


def test_the_run_directory_is_checked_by_the_config(problem_file, tmp_path) -> None:
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("user file")
    with pytest.raises(MdcertError, match=r"not empty; use --overwrite or another -o"):
        parse("regpath", _argv(problem_file, tmp_path / "full"))
    with pytest.raises(MdcertError, match=r"not an mdcert run directory"):
        parse("regpath", _argv(problem_file, tmp_path / "full", "--overwrite"))
    with pytest.raises(MdcertError, match=r"contains the problem file"):
        parse("regpath", _argv(problem_file, problem_file.parent))
    with pytest.raises(MdcertError, match=r"^-o is empty"):
        parse("regpath", [str(problem_file), "--p", "2", "-o", ""])


LIBRARY_BAD = [
    ({"p": None}, r"^missing --p"),
    ({"output": None}, r"^missing -o"),
    ({"starts": "3"}, r"^invalid --starts '3'; give an integer$"),
    ({"seed": True}, r"^invalid --seed True; give an integer$"),
    ({"md_lr": "0.1"}, r"^invalid --md-lr 0\.1; give a positive step size$"),
    ({"loss": "hinge"}, r"^invalid --loss 'hinge'; use logistic or exponential$"),
]


@pytest.mark.parametrize("change, match", LIBRARY_BAD)
def test_from_options_checks_what_a_parser_would_have(
    problem_file, tmp_path, change, match
) -> None:
    options = {"problem": str(problem_file), "p": "2", "output": str(tmp_path / "run"), **change}
    with pytest.raises(MdcertError, match=match):
        Config.from_options(options)


def test_parse_equals_the_cli_config_and_missing_options_take_the_schema_defaults(
    problem_file, tmp_path
) -> None:
    from experiments.cli.main import build_parser

    argv = _argv(
        problem_file,
        tmp_path / "run",
        "--starts",
        "2",
        "--seed",
        "7",
        "--joint",
        "--r-of-R",
        "sqrt(R)",
        "--md-steps",
        "3",
        "--no-dual-start",
        "--loss",
        "exponential",
    )
    parser, _ = build_parser()
    cli = Config.from_options(vars(parser.parse_args(["regpath", *argv])))  # with "command"
    config = parse("regpath", argv)
    assert config == cli and hash(config) == hash(cli)
    assert COMMAND_MODULES["regpath"] == "experiments.commands.regpath"
    assert module("regpath").Config is Config
    assert (config.p, config.radii, config.r_of_R, config.svm_start, config.dual_start) == (
        Fraction(2),
        (1.0, 10.0),
        "sqrt(R)",
        True,
        False,
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.starts = 5  # type: ignore[misc]
    minimal = Config.from_options(
        {"problem": str(problem_file), "p": "2", "output": tmp_path / "run"}
    )
    assert minimal == parse("regpath", [str(problem_file), "--p", "2", "-o", str(tmp_path / "run")])
    assert (minimal.radii_text, minimal.starts, minimal.digits, minimal.md_lr, minimal.r_of_R) == (
        "10:1000:9",
        3,
        30,
        0.1,
        None,
    )
    assert len(minimal.radii) == 9 and os.listdir(tmp_path) == []


def test_run_then_write_round_trip(problem_file, tmp_path, capsys) -> None:
    out = tmp_path / "run"
    config = parse("regpath", _argv(problem_file, out, "--starts", "1"))
    result = run(config)
    assert isinstance(result, Result) and result.exit_code == 0 and not out.exists()
    assert result.summary["kind"] == KIND and result.summary["p"] == "2/1"
    assert result.summary["command"]["radii"] == "1:10:2" and result.summary["joint"] is False
    result.write(out)
    assert sorted(os.listdir(out)) == [".mdcert-run", "path.npz", "summary.json"]
    assert json.loads((out / "summary.json").read_text()) == json.loads(json.dumps(result.summary))
    with np.load(out / "path.npz") as f:
        assert sorted(f.files) == ["W", "radii"]
        np.testing.assert_array_equal(f["radii"], [1.0, 10.0])
        np.testing.assert_array_equal(f["W"], result.arrays["W"])
    lines = result.lines(80)
    assert lines[-1].startswith(f"wrote {out / 'summary.json'}: D(R=1) = ")
    assert lines[:-1] == result.summary["token_notes"]
    assert "R=1 " in capsys.readouterr().out  # one progress line per radius


def test_joint_run_with_mirror_descent_round_trip(tmp_path) -> None:
    out = tmp_path / "joint"
    config = parse(
        "regpath",
        [
            JOINT_EXAMPLE,
            "--p",
            "2",
            "--radii",
            "1:10:2",
            "--starts",
            "1",
            "--joint",
            "--r-of-R",
            "sqrt(R)",
            "--md-steps",
            "5",
            "-o",
            str(out),
        ],
    )
    result = run(config)
    result.write(out)
    s = json.loads((out / "summary.json").read_text())
    assert s["joint"] is True and s["r_of_R"] == "sqrt(R)" and s["joint_md"]["steps"] == 5
    with np.load(out / "path.npz") as f:
        assert sorted(f.files) == ["W", "r", "radii", "v"]
        np.testing.assert_allclose(f["r"], [1.0, np.sqrt(10.0)])
    assert result.lines(80)[0].startswith("joint mirror descent: 5 steps, final D_W=")
    assert s["token_notes"] == token_notes(s)


def test_add_arguments_is_the_one_schema() -> None:
    import argparse

    parser = argparse.ArgumentParser(add_help=False)
    add_arguments(parser)
    assert parser.get_default("radii") == "10:1000:9" and parser.get_default("md_lr") == 0.1
