"""SPEC files (experiments/sweep/spec.py): TOML and YAML, lazily expanded grids, one-line refusals."""

from __future__ import annotations

import re

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from certify.errors import MdcertError
from experiments.sweep.spec import load_spec

from tests.experiments.sweep.helpers import make_problems, write_spec


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    d = tmp_path_factory.mktemp("spec")
    make_problems(d, seeds=(1, 2))
    return d


def test_toml_grid_expands_in_spec_order(folder) -> None:
    spec = load_spec(
        write_spec(
            folder,
            'kind = "certify"\n[grid]\nproblem = ["data/p1.npz", "data/p2.npz"]\n'
            'p = ["1.75", 2]\nalpha = ["opt", [0, 1, 2, 3, 4, 5]]\ndigits = [30]\n',
        )
    )
    assert spec.kind == "certify" and spec.size == 8
    points = list(spec.points())
    assert len(points) == 8
    values, labels = points[0]
    assert labels == {"problem": "data/p1.npz", "p": "1.75", "alpha": "opt", "digits": "30"}
    assert (
        values["problem"] == str((folder / "data" / "p1.npz").resolve()) and values["digits"] == 30
    )
    assert [lab["alpha"] for _, lab in points[:2]] == [
        "opt",
        "0,1,2,3,4,5",
    ]  # indices list -> "0,1,..."
    assert points[2][0]["p"] == "2"  # ints read as decimals


def test_glob_and_yaml_and_ranges(folder) -> None:
    spec = load_spec(
        write_spec(
            folder, "kind: certify\ngrid:\n  problem: ['data/*.npz']\n  p: [1.1]\n", name="s.yaml"
        )
    )
    assert [lab["problem"] for _, lab in spec.points()] == ["data/p1.npz", "data/p2.npz"]
    assert next(spec.points())[0]["p"] == "1.1"  # shortest repr: 11/10
    synth = load_spec(
        write_spec(folder, 'kind = "synth"\n[grid]\nseed = { start = 0, stop = 10000 }\nn = [2]\n')
    )
    assert synth.size == 10000
    first = next(synth.points())[0]
    assert first == {"seed": 0, "n": 2}


BAD = [
    ('kind = "certify"\nfoo = 1\n[grid]\np = ["2"]\n', r"unknown key 'foo'"),
    (
        'kind = "certify"\n[grid]\nproblem = ["data/p1.npz"]\np = ["2"]\nq = [1]\n',
        r"unknown key grid\.q .*takes problem, p",
    ),
    ('kind = "nope"\n[grid]\np = ["2"]\n', r"unknown sweep kind 'nope'"),
    ('[grid]\np = ["2"]\n', r"missing kind"),
    ('kind = "certify"\n', r"empty grid"),
    ('kind = "certify"\n[grid]\n', r"empty grid"),
    (
        'kind = "certify"\n[grid]\nproblem = ["data/p1.npz"]\np = []\n',
        r"empty grid: grid\.p is an empty list",
    ),
    (
        'kind = "certify"\n[grid]\nproblem = ["data/missing.npz"]\np = ["2"]\n',
        r"grid\.problem: 'data/missing\.npz' not found",
    ),
    ('kind = "certify"\n[grid]\nproblem = ["data/*.npy"]\np = ["2"]\n', r"matches no file"),
    ('kind = "certify"\n[grid]\nproblem = ["data"]\np = ["2"]\n', r"is a directory"),
    (
        'kind = "certify"\n[grid]\nproblem = ["data/p1.npz"]\np = ["1.5", "1"]\n',
        r"p must be > 1|greater than 1|p > 1",
    ),
    ('kind = "certify"\n[grid]\nproblem = ["data/p1.npz"]\np = [0.5]\n', r"greater than 1|> 1"),
    ('kind = "certify"\n[grid]\nproblem = ["data/p1.npz"]\np = ["x"]\n', r"invalid"),
    (
        'kind = "certify"\n[grid]\nproblem = ["data/p1.npz"]\np = [true]\n',
        r"grid\.p: True is not a decimal",
    ),
    ('kind = "certify"\n[grid]\nproblem = ["data/p1.npz"]\np = "2"\n', r"grid\.p must be a list"),
    (
        'kind = "certify"\n[grid]\nproblem = ["data/p1.npz"]\np = ["2"]\ndigits = ["30"]\n',
        r"grid\.digits: '30' is not an integer",
    ),
    (
        'kind = "certify"\n[grid]\nproblem = ["data/p1.npz"]\np = ["2"]\ndigits = [0]\n',
        r"between 1 and 2000",
    ),
    (
        'kind = "certify"\n[grid]\nproblem = ["data/p1.npz"]\np = ["2"]\nsvm = ["both"]\n',
        r"not one of attention, decoder",
    ),
    (
        'kind = "certify"\n[grid]\nproblem = ["data/p1.npz"]\np = ["2"]\nalpha = ["best"]\n',
        r"alpha=best\): mdcert certify refuses it: invalid alpha .best.",
    ),
    ('kind = "certify"\n[grid]\nproblem = ["data/p1.npz"]\np = ["2", "2"]\n', r"lists '2' twice"),
    ('kind = "certify"\n[grid]\nproblem = [3]\np = ["2"]\n', r"not a file path"),
    ('kind = "certify"\n[grid]\np = ["2"]\n', r"grid\.problem is required"),
    (
        'kind = "check"\n[grid]\nproblem = ["data/p1.npz"]\np = ["2"]\ntheorem = [99]\n',
        r"unknown theorem",
    ),
    ('kind = "synth"\n[grid]\nseed = { start = 0 }\n', r"stop required"),
    ('kind = "synth"\n[grid]\nseed = { start = 0, stop = 2000000 }\n', r"at most"),
    (
        'kind = "synth"\n[grid]\nseed = { start = 0, stop = 10000 }\nn = { start = 1, stop = 10000 }\n',
        r"the grid has 99990000 jobs",
    ),
    ('kind = "certify"\n[grid\n', r"not valid TOML"),
    ('kind = 3\n[grid]\np = ["2"]\n', r"unknown sweep kind 3"),
    ('kind = "certify"\ndescription = 5\n[grid]\np = ["2"]\n', r"description must be a string"),
]


@pytest.mark.parametrize("text, pattern", BAD)
def test_bad_spec_one_line(folder, text, pattern) -> None:
    path = write_spec(folder, text, name="bad.toml")
    with pytest.raises(MdcertError) as info:
        load_spec(path)
    msg = str(info.value)
    assert re.search(pattern, msg), msg
    assert "\n" not in msg and msg.startswith("SPEC bad.toml")


@pytest.mark.parametrize(
    "text, pattern",
    [
        ("kind: certify\ngrid: [1, 2\n", r"not valid YAML at line"),
        ("- 1\n- 2\n", r"must be a table"),
        ("kind: certify\ngrid:\n  problem: ['data/p1.npz']\n  p: [{a: 1}]\n", r"is not a decimal"),
    ],
)
def test_bad_yaml_one_line(folder, text, pattern) -> None:
    with pytest.raises(MdcertError, match=pattern):
        load_spec(write_spec(folder, text, name="bad.yaml"))


def test_yaml_without_pyyaml_is_one_line_and_pyyaml_is_declared(
    folder, monkeypatch, capsys
) -> None:
    import sys
    import tomllib
    from pathlib import Path

    from experiments.cli.main import main

    monkeypatch.setitem(sys.modules, "yaml", None)  # `import yaml` raises ImportError
    spec = write_spec(
        folder, "kind: certify\ngrid:\n  problem: [data/p1.npz]\n  p: ['2']\n", name="s.yaml"
    )
    assert main(["sweep", str(spec), "-o", str(folder / "out"), "--progress", "off"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and re.search(
        r"reading YAML needs PyYAML \(pip install 'mdcert\[ray\]'.*or write the "
        r"SPEC as \.toml",
        err[0],
    )
    assert not (folder / "out").exists()
    project = tomllib.loads((Path(__file__).resolve().parents[3] / "pyproject.toml").read_text())[
        "project"
    ]
    extra = project.get("optional-dependencies", {}).get("ray", []) + project["dependencies"]
    assert any(re.match(r"pyyaml\b", dep, re.I) for dep in extra)  # declared where the message says


def test_file_kinds_of_paths(folder, tmp_path) -> None:
    with pytest.raises(MdcertError, match="not found"):
        load_spec(tmp_path / "none.toml")
    with pytest.raises(MdcertError, match="is a directory"):
        load_spec(tmp_path)
    (tmp_path / "s.txt").write_text("kind = 'certify'")
    with pytest.raises(MdcertError, match="use a .toml or .yaml"):
        load_spec(tmp_path / "s.txt")
    (tmp_path / "b.toml").write_bytes(b"kind = '\xff'")
    with pytest.raises(MdcertError, match="not UTF-8"):
        load_spec(tmp_path / "b.toml")


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=200))
@example('kind = "certify"\n[grid]\np = [[[[[[1]]]]]]\n')
@example("kind: certify\ngrid: &a [*a]\n")
def test_fuzz_never_crashes(tmp_path_factory, text) -> None:
    """Arbitrary text is a valid SPEC or one MdcertError line, in TOML and in YAML."""
    d = tmp_path_factory.mktemp("fuzz")
    for name in ("f.toml", "f.yaml"):
        try:
            load_spec(write_spec(d, text, name=name))
        except MdcertError as exc:
            assert "\n" not in str(exc)
