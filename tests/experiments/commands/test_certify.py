"""`experiments.commands.certify`: validation in `Config.from_options` (one line each, before any
work), `parse` equal to the CLI's config, and a run -> write -> lines round trip."""

from __future__ import annotations

import json
import re
from fractions import Fraction

import pytest

from certify import AttentionProblem, check_certificate, synthetic_problem
from certify.errors import MdcertError
from experiments.cli.main import build_parser
from experiments.commands import parse
from experiments.commands.certify import Config, run
from experiments.commands.exports import parse_size


@pytest.fixture(scope="module")
def problem_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("data") / "problem.npz"
    synthetic_problem(n=3, T=4, d=3, seed=5).save(path)
    return path


def _options(problem, **kw) -> dict:
    base = dict(
        problem=str(problem),
        p="2",
        svm=None,
        alpha=None,
        digits=60,
        time_limit=None,
        memory_budget=None,
        output=None,
        export_w=None,
        export_direction=None,
    )
    return {**base, **kw}


@pytest.mark.parametrize(
    "kw, pattern",
    [
        (dict(p="1"), r"needs p > 1"),
        (dict(p="x"), r"^invalid p"),
        (dict(digits=0), r"^invalid digits 0; give an integer between 1 and 2000$"),
        (dict(digits=2001), r"^invalid digits 2001"),
        (
            dict(time_limit=-1.0),
            r"^invalid --time-limit -1.0; give a finite number of seconds >= 0$",
        ),
        (dict(time_limit=float("nan")), r"^invalid --time-limit nan"),
        (dict(memory_budget="lots"), r"^invalid --memory-budget 'lots'; give a size like 4G"),
        (dict(memory_budget="0"), r"^invalid --memory-budget '0'"),
        (dict(output="{d}/c.txt"), r"^certificate output '.*c\.txt' must be a \.json file$"),
        (dict(output="{d}/nodir/c.json"), r"does not exist"),
        (dict(export_w="{d}/W.txt"), r"--export-w .*W\.txt': use a \.npy file name"),
        (dict(export_w="{d}/W.npy", export_direction="{d}/./W.npy"), r"name the same file"),
    ],
)
def test_bad_options_are_one_line_before_any_work(problem_file, tmp_path, kw, pattern) -> None:
    kw = {k: v.format(d=tmp_path) if isinstance(v, str) else v for k, v in kw.items()}
    with pytest.raises(MdcertError) as err:
        Config.from_options(_options(problem_file, **kw))
    assert re.search(pattern, str(err.value)) and "\n" not in str(err.value)
    assert not list(tmp_path.iterdir())


def test_parse_size() -> None:
    assert (
        parse_size("512") == 512
        and parse_size("4G") == 4 * 2**30
        and parse_size("1.5GiB") == 3 * 2**29
    )


def test_parse_equals_the_cli_config(problem_file, tmp_path) -> None:
    argv = [
        str(problem_file),
        "--p",
        "1.75",
        "--svm",
        "decoder",
        "--digits",
        "20",
        "--time-limit",
        "5",
        "--memory-budget",
        "1G",
        "-o",
        str(tmp_path / "c.json"),
        "--export-w",
        str(tmp_path / "v.npy"),
    ]
    config = parse("certify", argv)
    parser, _ = build_parser()
    assert config == Config.from_options(vars(parser.parse_args(["certify", *argv])))
    assert config.p == Fraction(7, 4) and config.memory_budget == 2**30 and config.svm == "decoder"
    with pytest.raises(ValueError, match="required: --p"):
        parse("certify", [str(problem_file)])


def test_run_write_lines_round_trip(problem_file, tmp_path) -> None:
    out, W = tmp_path / "c.json", tmp_path / "W.npy"
    config = parse(
        "certify",
        [str(problem_file), "--p", "2", "--digits", "20", "-o", str(out), "--export-w", str(W)],
    )
    result = run(config)
    assert not list(tmp_path.iterdir())  # run writes nothing
    result.write()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["W.npy", "c.json"]
    assert check_certificate(AttentionProblem.load(problem_file), json.loads(out.read_text())).ok
    lines = result.lines(100)
    assert lines[0].startswith("attention SVM, p = 2, alpha = ") and lines[1] == "status: optimal"
    assert lines[-3].startswith("time ") and lines[-3].endswith(f"; wrote {out}")
    assert lines[-1] == f"wrote {W} (point)"
    assert result.exit_code == 0 and result.messages() == []


def test_classification_refuses_attention_options(tmp_path) -> None:
    from certify.synth import classification_problem

    path = tmp_path / "points.npz"
    classification_problem(n=20, d=2, seed=1).save(path)
    with pytest.raises(
        MdcertError, match=r"^--svm is for attention problems; .* binary classification problem"
    ):
        run(parse("certify", [str(path), "--p", "2", "--svm", "decoder"]))
