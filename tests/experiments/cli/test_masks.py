"""Bad variable-length inputs (docs/theory.md section 1.3) on every command that reads a problem: exit 1,
one line on stderr, no traceback, inputs byte-identical, nothing written."""

from __future__ import annotations

import re

import numpy as np
import pytest

from certify import synthetic_problem
from experiments.cli.main import main


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("masks")
    good = synthetic_problem(n=3, T=4, d=3, seed=1, min_T=2)
    good = good if good.lengths is not None else good.padded(5)
    good.save(d / "padded.npz")
    base = {"X": good.X, "y": good.y, "z": good.z, "v": good.v}
    L = good.valid_lengths

    def npz(name, **change):
        np.savez(d / name, **{**base, **change})

    npz("short.npz", lengths=np.where(np.arange(3) == 1, 1, L))
    npz("long.npz", lengths=np.full(3, good.T + 1))
    npz("shape.npz", lengths=L[:2])
    npz("float.npz", lengths=L + 0.5)
    X = good.X.copy()
    X[~good.token_mask] = 0.5
    npz("disagree.npz", X=X, lengths=L)
    npz("alpha_pad.npz", lengths=L, alpha=np.where(np.arange(3) == 0, L[0], 0))
    synthetic_problem(n=3, T=good.T, d=3, seed=2).save(d / "other.npz")
    assert (
        main(
            [
                "certify",
                str(d / "other.npz"),
                "--p",
                "2",
                "--digits",
                "10",
                "-o",
                str(d / "cert.json"),
            ]
        )
        == 0
    )
    return d, good


BAD_FILES = [
    ("short.npz", r"lengths\[1\] = 1 leaves fewer than 2 tokens"),
    ("long.npz", r"leaves more than T tokens"),
    ("shape.npz", r"lengths must have shape \(3,\)"),
    ("float.npz", r"is not an integer"),
    ("disagree.npz", r"lengths disagree with X: token \d of example \d is padding"),
    ("alpha_pad.npz", r"alpha\[0\] = \d is a padding token"),
]
COMMANDS = [
    ["certify", "{p}", "--p", "2", "-o", "{o}/cert.json"],
    ["check", "{p}", "--p", "2", "--json", "{o}/report.json"],
    ["verify", "{p}", "{d}/cert.json"],
    [
        "paths",
        "{p}",
        "--p",
        "2",
        "--steps",
        "3",
        "--no-certify",
        "--progress",
        "off",
        "-o",
        "{o}/run",
    ],
    ["regpath", "{p}", "--p", "2", "-o", "{o}/rp"],
]


def _assert_refused(argv, pattern, d, out, capsys) -> None:
    before = {p: p.read_bytes() for p in d.iterdir() if p.is_file()}
    rc = main(argv)
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert rc == 1 and len(lines) == 1 and "Traceback" not in err, err
    assert re.search(pattern, lines[0]), (pattern, lines[0])
    assert not list(out.iterdir())
    assert {p: p.read_bytes() for p in d.iterdir() if p.is_file()} == before


@pytest.mark.parametrize(("name", "pattern"), BAD_FILES)
@pytest.mark.parametrize("command", COMMANDS, ids=[c[0] for c in COMMANDS])
def test_bad_lengths_are_refused_by_every_command(
    files, tmp_path, capsys, name, pattern, command
) -> None:
    d, _ = files
    argv = [
        a.replace("{p}", str(d / name)).replace("{o}", str(tmp_path)).replace("{d}", str(d))
        for a in command
    ]
    _assert_refused(argv, pattern, d, tmp_path, capsys)


@pytest.mark.parametrize(
    "command",
    [
        ["certify", "{p}", "--p", "2", "--alpha", "{a}", "-o", "{o}/cert.json"],
        ["check", "{p}", "--p", "2", "--alpha", "{a}"],
    ],
)
def test_alpha_in_the_padding_is_refused(files, tmp_path, capsys, command) -> None:
    d, good = files
    L = good.valid_lengths
    i = int(np.argmin(L))
    alpha = ",".join(str(int(L[k]) if k == i else 0) for k in range(good.n))
    argv = [
        a.replace("{p}", str(d / "padded.npz")).replace("{o}", str(tmp_path)).replace("{a}", alpha)
        for a in command
    ]
    _assert_refused(argv, rf"alpha\[{i}\] = {int(L[i])} is a padding token", d, tmp_path, capsys)


@pytest.mark.parametrize("joint", [False, True], ids=["fixed", "joint"])
def test_regpath_runs_a_padded_problem_like_its_unpadded_twin(
    files, tmp_path, capsys, joint
) -> None:
    import json

    d, good = files
    full = synthetic_problem(n=2, T=3, d=3, seed=1)
    full.save(tmp_path / "full.npz")
    twin = full.padded(5)
    twin.save(tmp_path / "twin.npz")
    extra = ["--joint", "--r-of-R", "R"] if joint else []
    runs = {}
    for name in ("full", "twin"):
        argv = [
            "regpath",
            str(tmp_path / f"{name}.npz"),
            "--p",
            "2",
            "--radii",
            "2:20:2",
            "--starts",
            "1",
            *extra,
            "-o",
            str(tmp_path / f"run_{name}"),
        ]
        assert main(argv) == 0
        out = capsys.readouterr().out
        assert (f"problem: {twin.describe()}" in out) == (
            name == "twin"
        )  # shown for a padded problem only
        runs[name] = json.loads((tmp_path / f"run_{name}" / "summary.json").read_text())
        with np.load(tmp_path / f"run_{name}" / "path.npz") as a:
            runs[name]["W"] = a["W"]
    a, b = runs["full"], runs["twin"]
    assert "lengths" not in a["problem"] and b["problem"]["lengths"] == [3, 3]
    assert np.max(np.abs(a["W"] - b["W"])) <= 1e-12 * np.max(np.abs(a["W"]))
    assert a["decay"] == b["decay"] and [e["selected_tokens"] for e in a["path"]] == [
        e["selected_tokens"] for e in b["path"]
    ]
    rp = tmp_path / "rp"
    assert (
        main(
            [
                "regpath",
                str(d / "padded.npz"),
                "--p",
                "2",
                "--radii",
                "2:20:2",
                "--starts",
                "1",
                *extra,
                "-o",
                str(rp),
            ]
        )
        == 0
    )  # a variable-length one runs too
    summary = json.loads((rp / "summary.json").read_text())
    assert summary["problem"]["lengths"] == [int(k) for k in good.valid_lengths]
    assert all(
        t < k for e in summary["path"] for t, k in zip(e["selected_tokens"], good.valid_lengths)
    )


def test_a_padded_problem_certifies_and_checks(files, tmp_path, capsys) -> None:
    d, good = files
    out = tmp_path / "cert.json"
    assert (
        main(["certify", str(d / "padded.npz"), "--p", "2", "--digits", "20", "-o", str(out)]) == 0
    )
    assert f"problem: {good.describe()}" in capsys.readouterr().out
    assert main(["verify", str(d / "padded.npz"), str(out)]) == 0
    assert f"problem: {good.describe()}" in capsys.readouterr().out  # verify shows it too
    assert main(["check", str(d / "padded.npz"), "--p", "2"]) in (0, 2)
    assert f"problem: {good.describe()}" in capsys.readouterr().out  # check shows it too
    assert main(["certify", str(d / "other.npz"), "--p", "2", "--digits", "10"]) == 0
    assert "problem:" not in capsys.readouterr().out  # a full-length problem prints as before
    assert main(["verify", str(d / "other.npz"), str(d / "cert.json")]) == 0
    assert "problem:" not in capsys.readouterr().out
