"""`experiments.commands.synth`: validation in `Config.from_options` (one line each, nothing
written), `parse` equal to the CLI's config, and run -> write -> lines for both kinds."""

from __future__ import annotations

import re

import pytest

from certify.classification import load_problem
from certify.errors import MdcertError
from experiments.cli.main import build_parser
from experiments.commands import parse
from experiments.commands.synth import Config, run


@pytest.mark.parametrize(
    "argv, pattern",
    [
        (["--classes", "3"], r"^--classes needs --classification$"),
        (["--min-T", "1"], r"^invalid --min-T 1; give 2 <= MIN_T <= T \(T = 8\)$"),
        (["--n", "20000000"], r"^invalid n: 20000000; at most 1e7"),
        (["--classification", "--d", "0"], r"^invalid --d: 0; give an integer in 1\.\.1e7$"),
        (["-o", "{tmp}/p.txt"], r"\.npz or \.json"),
        (
            ["--regression", "block", "--n", "5", "--d", "9"],
            r"^block regression data have D = 2N .*drop --d or give --d 10$",
        ),
        (["--regression", "gaussian", "--classification"], r"exclude each other; choose one$"),
        (["--regression", "gaussian", "--random"], r"^--random is an option of --classification"),
        (["--regression", "block", "--min-T", "3"], r"^--min-T is not an option of --regression"),
        (["--regression", "block", "--classes", "3"], r"^--classes is not an option"),
        (
            ["--regression", "gaussian", "--n", "0"],
            r"^invalid --n: 0; give an integer in 1\.\.1e7$",
        ),
        (["--regression", "lasso"], r"invalid choice: 'lasso'"),
    ],
)
def test_bad_options_are_one_line_and_write_nothing(tmp_path, argv, pattern) -> None:
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    if "-o" not in argv:
        argv += ["-o", str(tmp_path / "p.npz")]
    with pytest.raises((MdcertError, ValueError)) as info:
        parse("synth", argv)
    assert re.search(pattern, str(info.value)) and "\n" not in str(info.value)
    assert not list(tmp_path.iterdir())


def test_a_library_caller_gets_one_line_for_a_non_integer(tmp_path) -> None:
    with pytest.raises(MdcertError, match=r"^invalid --n: 2\.5; give an integer$"):
        Config.from_options({"n": 2.5, "output": str(tmp_path / "p.npz")})


@pytest.mark.parametrize(
    "extra",
    [
        [],
        ["--classification", "--classes", "3", "--n", "30"],
        ["--regression", "gaussian", "--n", "4", "--d", "12"],
    ],
)
def test_parse_equals_the_cli_and_the_file_is_written(tmp_path, extra) -> None:
    argv = [*extra, "--seed", "4", "-o", str(tmp_path / "p.npz")]
    args = build_parser()[0].parse_args(["synth", *argv])
    config = parse("synth", argv)
    assert config == Config.from_options(vars(args))
    result = run(config)
    assert not (tmp_path / "p.npz").exists()  # run builds; write saves
    result.write()
    line = result.lines()[0]
    assert line.startswith(f"wrote {tmp_path / 'p.npz'}: ") and "seed=4" in line
    from certify.regression.problem import load_regression

    load = load_regression if "--regression" in extra else load_problem
    assert load(tmp_path / "p.npz").data_hash() == result.problem.data_hash()


@pytest.mark.parametrize(
    "kind, d, D", [("block", None, 10), ("gaussian", None, 10), ("gaussian", 7, 7)]
)
def test_regression_data_match_the_library_and_default_to_d_2n(tmp_path, kind, d, D) -> None:
    from certify.regression.problem import load_regression
    from certify.regression.synth import regression_problem

    argv = ["--regression", kind, "--n", "5", "--seed", "3", "-o", str(tmp_path / "r.npz")]
    config = parse("synth", argv + ([] if d is None else ["--d", str(d)]))
    result = run(config)
    result.write()
    loaded = load_regression(tmp_path / "r.npz")
    expected = regression_problem(kind, N=5, D=D, seed=3)
    assert (loaded.X == expected.X).all() and (loaded.y == expected.y).all()
    assert result.lines() == [
        f"wrote {tmp_path / 'r.npz'}: {kind} regression data N=5 D={D}, seed=3"
    ]
