"""Hostile input files, round two (issue 21 items 1, 3, 6; issue 20 "Input strictness"): numbers float64 cannot
hold, non-regular files, strict JSON, --alpha digits, --init validation shared by check and paths. One line,
exit 1, nothing written, inputs unchanged; never a hang."""

from __future__ import annotations

import json
import os
import zipfile

import numpy as np
import pytest

from certify import synthetic_problem
from tests.experiments.cli.badinput.kit import check_case, params

B = 2**53


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    """(regular files, special files): the FIFO lives apart, since reading it for a digest would wait."""
    d = tmp_path_factory.mktemp("input_files")
    special = tmp_path_factory.mktemp("special")
    pr = synthetic_problem(n=2, T=3, d=2, seed=1)
    pr.save(d / "good.npz")
    good = {"X": pr.X, "y": pr.y, "z": pr.z, "v": pr.v}
    X = np.array([[[0, 0], [1, B + 1], [-3, -(3 * B + 3)]]], dtype=np.int64)
    with open(d / "int64.npz", "wb") as fh:
        np.savez(fh, X=X, y=np.array([1]), z=np.array([[1, 0]]), v=np.array([1, 0]))
    (d / "int.json").write_text(
        json.dumps({"X": [[[B + 1, 1], [B, 1]]], "y": [1], "z": [[1, 0]], "v": [1, 0]})
    )
    text = json.dumps({k: v.tolist() for k, v in good.items()})
    (d / "dup.json").write_text(text[:-1] + ', "y": [1, 1]}')
    (d / "bool_alpha.json").write_text(text[:-1] + ', "alpha": [true, 0]}')
    np.save(d / "W0.npy", np.eye(2))
    np.save(d / "W0_zero.npy", np.zeros((2, 2)))
    np.save(d / "W0_huge.npy", np.full((2, 2), 1e300))
    np.save(d / "W0_int.npy", np.array([[B + 1, 0], [0, 1]]))
    with zipfile.ZipFile(
        d / "bomb.npz", "w", compression=zipfile.ZIP_DEFLATED
    ) as zf:  # X: 16 MB of zeros
        with zf.open("X.npy", "w") as fh:
            np.lib.format.write_array_header_1_0(
                fh, {"descr": "<f8", "fortran_order": False, "shape": (2, 2, 500_000)}
            )
            for _ in range(4):
                fh.write(bytes(4_000_000))
    os.mkfifo(special / "fifo.npz")
    os.mkfifo(special / "fifo.npy")
    os.symlink("/dev/zero", special / "zero.npz")
    os.symlink("/dev/zero", special / "zero.json")
    return d, special


PAT_ROUND = r"X\[0, \d, [01]\] = -?\d+ .*(would round|names a number float64 cannot hold)"
PATHS = [
    "paths",
    "--p",
    "2",
    "--steps",
    "3",
    "--lr",
    "0.1",
    "--workers",
    "0",
    "--progress",
    "off",
    "--no-certify",
    "-o",
    "{o}/run",
]
CASES = [
    *[
        (argv, m)
        for f, m in [
            ("int64.npz", PAT_ROUND),
            ("int.json", PAT_ROUND),
            ("dup.json", r"duplicate key 'y' in a JSON object"),
            ("bool_alpha.json", r"alpha\[0\] = true is a boolean where an integer is expected"),
            ("{s}/fifo.npz", r"is not a regular file \(it is a FIFO"),
            ("{s}/zero.npz", r"is not a regular file \(it is a character device\)"),
            ("{s}/zero.json", r"is not a regular file"),
        ]
        for argv in (
            ["certify", f"{{d}}/{f}", "--p", "2"],
            ["check", f"{{d}}/{f}", "--p", "2"],
            ["info", f"{{d}}/{f}"],
            ["paths", f"{{d}}/{f}", *PATHS[1:]],
        )
    ],
    (
        ["certify", "{d}/bomb.npz", "--p", "2", "--memory-budget", "8M"],
        r"problem .*bomb\.npz' would need about 137 MiB of memory to read \(X\.npy inflates to 15 MiB from .*\), more "
        r"than half of the memory budget 8 MiB",
    ),
    (
        ["certify", "{d}/good.npz", "--p", "2", "--alpha", "\u0660,\u0661"],
        r"invalid alpha .*ASCII digits",
    ),
    (["check", "{d}/good.npz", "--p", "2", "--alpha", "0,\u0661"], r"invalid alpha .*ASCII digits"),
    (["certify", "{d}/good.npz", "--p", "2", "--alpha", "0,1_0"], r"invalid alpha"),
    *[
        (argv, m)
        for w, m in [
            ("W0_zero.npy", r"--init .* is the zero matrix"),
            ("W0_int.npy", r"--init .*\[0, 0\] = 9007199254740993 \(int64\) would round"),
            ("{s}/fifo.npy", r"--init .* is not a regular file"),
        ]
        for argv in (
            ["check", "{d}/good.npz", "--p", "2", "--init", f"{{d}}/{w}", "--lr", "0.1"],
            ["paths", "{d}/good.npz", "--init", f"{{d}}/{w}", *PATHS[1:]],
        )
    ],
    (
        ["paths", "{d}/good.npz", "--init", "{d}/W0_huge.npy", *PATHS[1:]],
        r"--init .*\|\|W0\|\|_p\^p of matrix 0 overflows float64 at p = 2 \(largest entry 1e\+300\)",
    ),
]


@pytest.mark.parametrize("argv,match,rc,prefix", params(CASES))
def test_bad_input_file(argv, match, rc, prefix, inputs, tmp_path, capsys) -> None:
    d, special = inputs
    argv = [a.replace("{d}/{s}", str(special)) for a in argv]
    check_case(argv, match, files=d, out_dir=tmp_path, capsys=capsys, rc=rc, prefix=prefix)


@pytest.mark.parametrize(
    "argv",
    [
        ["certify", "{d}/pad.npz", "--p", "2", "--digits", "5"],
        ["info", "{d}/pad.npz"],
        ["paths", "{d}/pad.npz", *PATHS[1:]],
    ],
)
def test_padding_without_lengths_warns_once(argv, tmp_path, capsys) -> None:
    from certify import AttentionProblem
    from tests.experiments.cli.badinput.kit import expand, run_case

    pr = synthetic_problem(n=3, T=4, d=3, seed=2)
    X = pr.X.copy()
    X[0, 3] = 0.0
    AttentionProblem(X, pr.y, pr.z, pr.v).save(tmp_path / "pad.npz")
    rc, _, err, _ = run_case(expand(argv, tmp_path, tmp_path), capsys)
    lines = err.strip().splitlines()
    assert rc == 0, err
    assert len([ln for ln in lines if "warning:" in ln]) == 1, err
    assert any(
        ln.startswith(f"mdcert {argv[0]}: warning: problem ") and "no 'lengths'" in ln
        for ln in lines
    ), err
