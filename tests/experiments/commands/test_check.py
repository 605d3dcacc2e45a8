"""Tests of the application layer of ``mdcert check`` (experiments/commands/check/): the options'
validation (`Config.from_options`), ``parse("check", argv)`` against the CLI's config, and
``run(config)`` against the CLI's output."""

from __future__ import annotations

import dataclasses
import json
import re
import warnings
from fractions import Fraction

import numpy as np
import pytest

from certify.errors import MdcertError
from certify.problem import AttentionProblem
from certify.synth import synthetic_problem
from experiments.cli.main import build_parser, main
from experiments.commands import COMMAND_MODULES, module, parse
from experiments.commands.check import Config, Result, run


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        warnings.simplefilter("ignore", UserWarning)
        yield


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("cmdcheck")
    synthetic_problem(n=3, T=4, d=3, seed=5).save(d / "prob.npz")
    np.save(d / "W0.npy", np.random.default_rng(0).standard_normal((3, 3)) * 0.3)
    AttentionProblem([[[0, 0], [-1, -1], [-10, 5]]], [1], [[1, 0]], [0, 1]).save(d / "crafted.json")
    return d


@pytest.fixture(scope="module")
def paths_run(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("cmdcheck_run") / "run"
    assert (
        main(
            [
                "paths",
                "--trials",
                "1",
                "--p",
                "1.75,2",
                "--steps",
                "10",
                "--lr",
                "0.1",
                "--normalize",
                "--records",
                "4",
                "--progress",
                "off",
                "--no-certify",
                "-o",
                str(run_dir),
            ]
        )
        == 0
    )
    return run_dir


def cli_config(argv) -> Config:
    """The config the CLI builds for ``mdcert check ARGV``."""
    parser, _ = build_parser()
    return Config.from_options(vars(parser.parse_args(["check", *argv])))


def test_check_is_registered():
    assert COMMAND_MODULES["check"] == "experiments.commands.check"
    assert module("check").run is run


PATH = ["--init", "W0.npy", "--lr", "0.1"]


@pytest.mark.parametrize(
    "argv,match",
    [
        ([], r"^give a problem file \(or --run DIR --trajectory K"),
        (["prob.npz"], r"^give --p, the exponent of the l_p potential"),
        (["prob.npz", "--p", "1"], r"^invalid --p: '1'; mirror descent needs --p > 1"),
        (["prob.npz", "--p", "x"], r"^invalid --p: 'x'; give a number greater than 1"),
        (
            ["prob.npz", "--p", "2", "--theorem", "7"],
            r"^unknown theorem '7'; choose one of 6, 8, 10",
        ),
        (["prob.npz", "--p", "2", "--init", "W0.npy"], r"^give --init and --lr together"),
        (["prob.npz", "--p", "2", "--lr", "0.1"], r"^give --init and --lr together"),
        (
            ["prob.npz", "--p", "2", "--normalize"],
            r"^--normalize is the step rule of a training path",
        ),
        (
            ["prob.npz", "--p", "2", "--alpha", "locally-optimal-from-training"],
            r"^--alpha locally-optimal-from-training needs a training path",
        ),
        (["prob.npz", "--p", "2", "--trajectory", "0"], r"^--trajectory K needs --run DIR"),
        (["prob.npz", "--p", "2", "--run", "."], r"^--run DIR needs --trajectory K"),
        (
            ["prob.npz", "--p", "2", "--run", ".", "--trajectory", "0"],
            r"^--run takes the problem, .* from the run; drop a problem file, --p$",
        ),
        (["prob.npz", "--p", "2", "--steps", "0", *PATH], r"^invalid --steps 0; give a positive"),
        (["prob.npz", "--p", "2", "--steps", "2000000000"], r"^invalid --steps 2000000000;"),
        (
            ["prob.npz", "--p", "2", "--digits", "0"],
            r"^invalid --digits 0; give an integer between",
        ),
        (
            ["prob.npz", "--p", "2", "--mu", "abc"],
            r"^invalid --mu: 'abc'; give a non-negative number",
        ),
        (["prob.npz", "--p", "2", "--R", "-1"], r"^invalid --R: '-1'; must be >= 0"),
        (["prob.npz", "--p", "2", *PATH, "--lr", "-1"], r"^invalid --lr: '-1'; must be >= 0"),
        (
            ["prob.npz", "--p", "2", "--init", "W0.npy", "--lr", "0"],
            r"^invalid --lr '0'; the step size must be > 0",
        ),
        (
            ["prob.npz", "--p", "2", "--init", "W0.npy", "--lr", "1e-400"],
            r"^invalid --lr '1e-400'; the step size must be a float64 in \(1e-300, 1e300\)",
        ),
        (["prob.npz", "--p", "1.0001", *PATH], r"^--p 1.0001 is outside the range of the float64"),
        (["prob.npz", "--p", "2", "--loss", "exp(u"], r"^cannot parse loss expression 'exp\(u'"),
        (
            ["prob.npz", "--p", "2", *PATH, "--loss", "u**2"],
            r"^training supports the losses logistic, exponential, linear; got 'u\*\*2'",
        ),
        (["prob.npz", "--p", "2", "--json", "prob.npz"], r"^--json 'prob.npz' is the problem file"),
        (["prob.npz", "--p", "2", "--json", "."], r"^--json '.' is a directory; give a file name"),
        (["prob.npz", "--p", "2", "--json", "nodir/r.json"], r"^--json 'nodir/r.json': directory"),
        (["prob.npz", "--p", "2", "--steps", "x"], r"^argument --steps: invalid int value: 'x'"),
    ],
)
def test_bad_options_are_one_line_before_any_work(files, monkeypatch, argv, match):
    monkeypatch.chdir(files)
    with pytest.raises((MdcertError, ValueError), match=match) as info:
        parse("check", argv)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    "options,match",
    [
        (
            {"problem": "prob.npz", "p": "2", "steps": "x"},
            r"^argument --steps: invalid int value: 'x'",
        ),
        ({"problem": "prob.npz", "p": "2", "steps": True}, r"^argument --steps: invalid int value"),
        ({"problem": "prob.npz", "p": "2", "normalize": "no"}, r"^--normalize is a flag"),
        ({"problem": "prob.npz", "p": "2", "stpes": 3}, r"^mdcert check has no option stpes;"),
    ],
)
def test_mappings_of_library_callers_are_checked(options, match):
    with pytest.raises(ValueError, match=match):
        Config.from_options(options)


def test_a_missing_file_is_an_error_of_the_run_not_of_the_options(files, monkeypatch):
    monkeypatch.chdir(files)
    config = parse("check", ["nope.npz", "--p", "2"])
    with pytest.raises(MdcertError, match=r"^problem file not found: 'nope.npz'"):
        run(config)


@pytest.mark.parametrize(
    "argv",
    [
        ["prob.npz", "--p", "2"],
        ["crafted.json", "--p", "1.75", "--alpha", "0", "--json", "r.json", "--theorem", " 11 "],
        [
            "prob.npz",
            "--p",
            "7/4",
            *PATH,
            "--steps",
            "40",
            "--normalize",
            "--mu",
            "1/2",
            "--R",
            "0.1",
            "--alpha",
            "locally-optimal-from-training",
            "--loss",
            "Exponential",
            "--segment",
            "--digits",
            "20",
        ],
    ],
)
def test_parse_equals_the_cli_config(files, monkeypatch, argv):
    monkeypatch.chdir(files)
    config = parse("check", argv)
    assert config == cli_config(argv)
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.steps = 3  # type: ignore[misc]


def test_config_values(files, monkeypatch):
    monkeypatch.chdir(files)
    plain = parse("check", ["prob.npz", "--p", "2"])
    assert (plain.p_exact, plain.eta, plain.steps, plain.theorem) == (2, None, 2000, "10")
    assert not plain.training
    assert plain.step_rule is None and not plain.from_training
    path = parse(
        "check",
        [
            "prob.npz",
            "--p",
            "7/4",
            *PATH,
            "--mu",
            "0.5",
            "--normalize",
            "--alpha",
            " Locally-Optimal-From-Training ",
        ],
    )
    assert (path.p, path.p_exact) == ("7/4", Fraction(7, 4))
    assert (path.lr, path.eta) == ("0.1", Fraction(1, 10))
    assert (path.mu, path.mu_exact, path.R_exact) == ("0.5", Fraction(1, 2), None)
    assert path.training and path.from_training and path.step_rule == "normalized"
    assert Config.from_options({"problem": "prob.npz", "p": "2"}) == plain  # defaults for the rest


def test_run_options_come_from_the_run(paths_run):
    argv = ["--run", str(paths_run), "--trajectory", "1"]
    config = parse("check", argv)
    assert config == cli_config(argv)
    assert (config.p, config.steps, config.normalize, config.problem) == ("2/1", 10, True, None)
    assert float(config.lr) == 0.1 and config.eta == Fraction(config.lr)
    with pytest.raises(MdcertError, match=r"^--trajectory 5 is not in the run; give an index"):
        parse("check", ["--run", str(paths_run), "--trajectory", "5"])


def _masked(text: str) -> str:
    return re.sub(r"time: [0-9.]+ s", "time: X s", text)


@pytest.mark.parametrize(
    "width,argv",
    [
        (200, ["crafted.json", "--p", "1.75", "--alpha", "0"]),
        (60, ["prob.npz", "--p", "1.5", *PATH, "--steps", "3", "--mu", "0.05", "--R", "0"]),
        (
            100,
            [
                "prob.npz",
                "--p",
                "2",
                "--init",
                "W0.npy",
                "--lr",
                "0.5",
                "--steps",
                "30",
                "--normalize",
                "--alpha",
                "locally-optimal-from-training",
            ],
        ),
    ],
)
def test_run_gives_the_cli_lines_and_json(files, monkeypatch, capsys, tmp_path, width, argv):
    monkeypatch.chdir(files)
    monkeypatch.setenv("COLUMNS", str(width))
    assert main(["check", *argv, "--json", str(tmp_path / "cli.json")]) == 0
    cli_out = capsys.readouterr().out
    result = run(parse("check", argv))
    assert isinstance(result, Result) and result.exit_code == 0
    capsys.readouterr()  # progress bars only (none off a terminal)
    lines = result.lines(width)
    assert _masked("\n".join(lines) + "\n") == _masked(cli_out)
    assert re.search(r"^verdict: (HOLDS|FAILS|UNDECIDED) \(Kleene AND", "\n".join(lines), re.M)
    result.write(tmp_path / "lib.json")
    ours, cli = (json.loads((tmp_path / f"{n}.json").read_text()) for n in ("lib", "cli"))
    assert set(ours["quantities"].pop("seconds")) == set(cli["quantities"].pop("seconds"))
    assert ours == cli
    assert not list(tmp_path.glob("*.tmp*"))


def test_verdicts_do_not_change_the_exit_code(files, monkeypatch):
    monkeypatch.chdir(files)
    result = run(
        parse(
            "check", ["prob.npz", "--p", "1.5", *PATH, "--steps", "3", "--mu", "0.05", "--R", "0"]
        )
    )
    assert result.report.hypothesis("init_in_region").verdict.value == "fails"
    assert result.report.verdict.value == "fails" and result.exit_code == 0
