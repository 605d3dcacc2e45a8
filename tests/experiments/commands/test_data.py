"""`experiments.commands.data`: validation in `Config.from_options` (one line each, before any
work), `parse` equal to the CLI's config, and a run -> write -> lines round trip (digits: fast)."""

from __future__ import annotations

import re

import pytest

from certify import AttentionProblem
from certify.errors import MdcertError
from experiments.cli.main import build_parser
from experiments.commands import parse
from experiments.commands.data import Config, run

TEXT = dict(
    source="text", n=5, T=4, d=4, seed=0, embed="static", z="mean", cache_dir=None, limit=200
)
DIGITS = dict(source="digits", n=5, T=16, d=None, seed=0, classes="3,8", patch=2, z="mean")


@pytest.mark.parametrize(
    "base, kw, pattern",
    [
        (TEXT, dict(source=None), r"^give a source: mdcert data text \.\.\. or mdcert data digits"),
        (TEXT, dict(n=0), r"^invalid --n 0: give a number of examples >= 1$"),
        (TEXT, dict(T=1), r"^invalid --T 1: the maximum length must be >= 2$"),
        (TEXT, dict(T=513), r"^invalid --T 513: at most 512 tokens \(the encoder's positions\)$"),
        (
            DIGITS,
            dict(T=10000),
            r"^invalid --T 10000: at most 512 tokens \(an image has at most 16",
        ),
        (TEXT, dict(d=385), r"^invalid --d 385: the token features have dimension 384"),
        (DIGITS, dict(d=21), r"^invalid --d 21: the token features have dimension 20"),
        (DIGITS, dict(classes="3,3"), r"^invalid --classes '3,3'"),
        (TEXT, dict(z="cls"), r"static \[CLS\] embedding is one constant"),
        (TEXT, dict(seed=-1), r"^invalid --seed -1"),
        (TEXT, dict(limit=0), r"^invalid --limit 0: give a number of snippets >= 1$"),
        (TEXT, dict(output="{tmp}/p.csv"), r"use a \.npz or \.json file name"),
        (TEXT, dict(output="{tmp}/missing/p.npz"), r"does not exist; create it first"),
        (
            TEXT,
            dict(embed="contextual", z="cls", cache_dir="{tmp}/cache", output="{tmp}/cache/p.npz"),
            r"inside the cache directory",
        ),
    ],
)
def test_bad_options_are_one_line_before_any_work(tmp_path, base, kw, pattern) -> None:
    (tmp_path / "cache").mkdir()
    options = {**base, "output": str(tmp_path / "p.npz"), **kw}
    options = {
        k: v.replace("{tmp}", str(tmp_path)) if isinstance(v, str) else v
        for k, v in options.items()
    }
    with pytest.raises(MdcertError) as err:
        Config.from_options(options)
    assert re.search(pattern, str(err.value)) and "\n" not in str(err.value)
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["cache"]


@pytest.mark.parametrize(
    "argv",
    [
        ["text", "--n", "20", "--T", "8", "--d", "6", "--seed", "3", "--limit", "300"],
        ["digits", "--n", "12", "--seed", "1", "--classes", "1,7", "--patch", "4"],
    ],
)
def test_parse_equals_the_cli_config(tmp_path, argv) -> None:
    argv = [*argv, "-o", str(tmp_path / "p.npz")]
    parser, _ = build_parser()
    config = parse("data", argv)
    assert config == Config.from_options(vars(parser.parse_args(["data", *argv])))
    assert config.source == argv[0] and config.output == str(tmp_path / "p.npz")


def test_run_write_lines_round_trip(tmp_path) -> None:
    out = tmp_path / "digits.json"
    config = parse(
        "data", ["digits", "--n", "12", "--seed", "0", "--classes", "1,7", "-o", str(out)]
    )
    assert config.classes == (1, 7) and config.d is None
    result = run(config)
    assert not list(tmp_path.iterdir())  # run writes nothing
    result.write()
    problem = AttentionProblem.load(out)
    assert problem.X.shape == (12, 16, 20) and problem.provenance["digits"]["classes"] == [1, 7]
    [line] = result.lines(80)
    assert (
        line.startswith(f"wrote {out}: digits n=12 T=16 d=20 seed=0, lengths ")
        and result.exit_code == 0
    )


POINTS = dict(source="digits", kind="classification", n=None, seed=0, classes=None, limit=None)


@pytest.mark.parametrize(
    "kw, pattern",
    [
        (
            dict(kind="bogus"),
            r"^unknown --kind 'bogus'; use attention, classification or regression$",
        ),
        (dict(source="images"), r"^unknown source 'images'; use text, digits or features$"),
        (dict(kind="regression", n=64), r"^invalid --n 64: .*overparameterized, N < D = 64"),
        (dict(source="text", kind="regression", n=400), r"^invalid --n 400: .*N < D = 384"),
        (dict(n=0), r"^invalid --n 0: give a number of examples >= 1$"),
        (dict(n=2000), r"^invalid --n 2000: there are 1797 images of the digits 0,1,2"),
        (dict(classes="3,3"), r"^invalid --classes '3,3'; .* or all$"),
        (dict(seed=-1), r"^invalid --seed -1"),
        (dict(source="text", n=50, limit=20), r"^invalid --n 50: there are 20 labelled snippets"),
        (dict(output="{tmp}/p.csv"), r"use a \.npz or \.json file name"),
    ],
)
def test_points_bad_options_are_one_line_before_any_work(tmp_path, kw, pattern) -> None:
    options = {**POINTS, "output": str(tmp_path / "p.npz"), **kw}
    options = {
        k: v.replace("{tmp}", str(tmp_path)) if isinstance(v, str) else v
        for k, v in options.items()
    }
    with pytest.raises(MdcertError) as err:
        Config.from_options(options)
    assert re.search(pattern, str(err.value)) and "\n" not in str(err.value)
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize(
    "argv, n, classes",
    [
        (["digits", "--kind", "classification"], None, tuple(range(10))),
        (["digits", "--kind", "classification", "--classes", "1,7", "--n", "50"], 50, (1, 7)),
        (["digits", "--kind", "regression"], 32, (3, 8)),
        (["text", "--kind", "regression", "--limit", "300"], 192, (1, -1)),
    ],
)
def test_points_parse_equals_the_cli_config(tmp_path, argv, n, classes) -> None:
    argv = [*argv, "-o", str(tmp_path / "p.npz")]
    parser, _ = build_parser()
    config = parse("data", argv)
    assert config == Config.from_options(vars(parser.parse_args(["data", *argv])))
    assert (config.kind, config.n, config.classes) == (argv[2], n, classes)


def test_attention_defaults_unchanged(tmp_path) -> None:
    config = parse("data", ["digits", "-o", str(tmp_path / "p.npz")])
    assert (config.kind, config.n, config.classes, config.T, config.d) == (
        "attention",
        100,
        (3, 8),
        16,
        None,
    )


def test_points_run_write_lines_round_trip(tmp_path) -> None:
    from certify.classification import load_problem
    from certify.regression import load_regression

    out = tmp_path / "k10.npz"
    result = run(parse("data", ["digits", "--kind", "classification", "-o", str(out)]))
    assert not list(tmp_path.iterdir())
    result.write()
    problem = load_problem(out)
    assert problem.kind == "multiclass" and (problem.n, problem.d, problem.classes) == (
        1797,
        64,
        10,
    )
    [line] = result.lines(80)
    assert line.startswith(
        f"wrote {out}: digits classification n=1797 d=64 K=10 seed=0, digit 0: 178"
    )
    out = tmp_path / "reg.json"
    result = run(parse("data", ["digits", "--kind", "regression", "--n", "40", "-o", str(out)]))
    result.write()
    assert load_regression(out).X.shape == (40, 64)
    [line] = result.lines(80)
    assert line.startswith(f"wrote {out}: digits regression N=40 D=64 seed=0, digit 3 (+1): ")


def test_features_options_are_checked_before_any_work(tmp_path) -> None:
    base = dict(source="features", study=str(tmp_path), run=None, split="train", n=None, seed=0)
    cases = [
        (dict(), r"is not a study directory"),
        (dict(kind="regression"), r"features give a classification problem"),
        (dict(kind="attention"), r"features give a classification problem .* --kind attention"),
        (dict(split="val"), r"features give a classification problem .* --split val"),
        (dict(n=0), r"^invalid --n 0"),
    ]
    for kw, pattern in cases:
        with pytest.raises(MdcertError) as err:
            Config.from_options({**base, "output": str(tmp_path / "p.npz"), **kw})
        assert re.search(pattern, str(err.value)) and "\n" not in str(err.value)
    assert not list(tmp_path.iterdir())
    (tmp_path / "study.json").write_text('{"kind": "pgd"}')
    (tmp_path / "features").mkdir()
    (tmp_path / "features" / "abc.npz").write_bytes(b"")
    argv = ["features", "--study", str(tmp_path), "--no-bias", "-o", str(tmp_path / "p.npz")]
    config = parse("data", argv)
    parser, _ = build_parser()
    assert config == Config.from_options(vars(parser.parse_args(["data", *argv])))
    assert (config.kind, config.run, config.split, config.bias) == (
        "classification",
        None,
        "train",
        False,
    )
    with pytest.raises(MdcertError, match=r"inputs are never overwritten"):
        parse("data", [*argv[:-1], str(tmp_path / "features" / "abc.npz")])
