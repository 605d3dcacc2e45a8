"""`experiments.commands.pgd`: validation in `Config.from_options` (one line each, before any work),
`parse` equal to the CLI's config, and a run -> write -> lines round trip."""

from __future__ import annotations

import json
import re

import pytest

from certify.errors import MdcertError
from certify.synth import classification_problem
from experiments.cli.main import build_parser
from experiments.commands import parse
from experiments.commands.pgd import Config, run


@pytest.fixture()
def problem_file(tmp_path):
    path = tmp_path / "sep.npz"
    classification_problem(n=12, d=3, classes=None, separable=True, seed=1).save(path)
    return path


@pytest.mark.parametrize(
    "argv, pattern",
    [
        ([], r"^-o RUN is required \(the run directory to write\), or give --check$"),
        (
            ["--digits", "0", "-o", "{tmp}/r"],
            r"^invalid --digits 0; give an integer between 1 and 2000$",
        ),
        (["--p", "1.5,x", "-o", "{tmp}/r"], r"^--p must be comma-separated numbers, got '1.5,x'$"),
        (["--lr", "0.1,0.1", "-o", "{tmp}/r"], r"^--lr has a repeated value: '0.1,0.1'$"),
        (["--seed", "-1", "-o", "{tmp}/r"], r"seed"),
    ],
)
def test_bad_options_are_one_line_before_any_work(problem_file, tmp_path, argv, pattern) -> None:
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    with pytest.raises((MdcertError, ValueError)) as info:
        parse("pgd", [str(problem_file), *argv])
    assert re.search(pattern, str(info.value)) and "\n" not in str(info.value)
    assert not (tmp_path / "r").exists()


def test_parse_equals_the_cli_config(problem_file, tmp_path) -> None:
    argv = [
        str(problem_file),
        "--p",
        "1.5,2",
        "--steps",
        "50",
        "--check",
        "-o",
        str(tmp_path / "r"),
    ]
    args = build_parser()[0].parse_args(["pgd", *argv])
    assert parse("pgd", argv) == Config.from_options(vars(args))


def test_run_write_lines(problem_file, tmp_path) -> None:
    config = parse(
        "pgd",
        [
            str(problem_file),
            "--p",
            "2",
            "--inits",
            "2",
            "--steps",
            "200",
            "--records",
            "8",
            "--check",
            "-o",
            str(tmp_path / "r"),
        ],
    )
    result = run(config)
    result.write()
    text = "\n".join(result.lines())
    assert "separable: HOLDS" in text and text.endswith(f"wrote {tmp_path / 'r'}/summary.json")
    assert json.loads((tmp_path / "r" / "summary.json").read_text())["kind"] == "pgd"
