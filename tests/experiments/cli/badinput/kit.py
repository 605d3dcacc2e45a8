"""The shared kit of the bad-command-line tables: one directory of good and hostile input files, a content
digest of it, and the assertion every case makes (issue 11).

Every case runs ``mdcert`` in-process (`experiments.cli.main.main`) under a hard timeout (faulthandler
dumps the stacks and ends the run: a hang is a failure, never a stuck suite) and must: exit with its
documented code (1 for bad input), print exactly one line on stderr that starts ``mdcert CMD: error:``
(or the command's documented prefix) and matches the case's regex, no traceback, no "internal error",
leave every input byte-identical (sha256 of every file) and write nothing.
"""

from __future__ import annotations

import faulthandler
import hashlib
import json
import os
import re
import sys
import time
from pathlib import Path

import numpy as np

from certify import AttentionProblem, synthetic_problem

__all__ = [
    "CASE_TIMEOUT",
    "build_files",
    "digest",
    "expand",
    "run_case",
    "listing",
    "check_case",
    "params",
]

#: seconds a single case may take before the run is ended with a stack dump
CASE_TIMEOUT = 120


def _npz(path: Path, **arrays) -> None:
    with open(path, "wb") as fh:
        np.savez(fh, **{k: v for k, v in arrays.items() if v is not None})


def build_files(d: Path) -> Path:
    """Good and hostile inputs in ``d`` (problems, certificates, W0 files, run directories)."""
    pr = synthetic_problem(n=2, T=3, d=2, seed=1)
    pr.save(d / "good.npz")
    pr.save(d / "good.json")
    good = {"X": pr.X, "y": pr.y, "z": pr.z, "v": pr.v}

    def npz(name: str, **change) -> None:
        _npz(d / name, **{**good, **change})

    npz("nokeys.npz", X=None)
    npz("str.npz", X=np.full(pr.X.shape, "a"))
    npz("complex.npz", X=pr.X + 1j)
    npz("zerod.npz", X=np.array(3.0))
    npz("f16.npz", X=pr.X.astype(np.float16))
    npz("int.npz", X=np.ones(pr.X.shape, dtype=np.int64))
    bad = pr.X.copy()
    bad[0, 0, 0] = np.nan
    npz("nan.npz", X=bad)
    bad = pr.X.copy()
    bad[1, 2, 1] = -np.inf
    npz("inf.npz", X=bad)
    npz("huge_val.npz", X=pr.X * 1e308)
    npz("y0.npz", y=np.array([1.0, 0.0]))
    npz("y2.npz", y=np.array([2.0, -1.0]))
    npz("yshape.npz", y=np.array([1.0, -1.0, 1.0]))
    npz("T1.npz", X=pr.X[:, :1])
    npz("n0.npz", X=pr.X[:0], y=pr.y[:0], z=pr.z[:0])
    npz("alpha_str.npz", alpha=np.array(["a", "b"]))
    npz("alpha_range.npz", alpha=np.array([0, 7]))
    npz("alpha_neg.npz", alpha=np.array([0, -1]))
    npz("lengths_bad.npz", lengths=np.array([0, 9]))
    with open(d / "object.npz", "wb") as fh:
        np.savez(fh, X=np.array([pr.X, 1], dtype=object), y=pr.y, z=pr.z, v=pr.v)
    np.save(d / "npy_named.npy", pr.X)
    os.replace(d / "npy_named.npy", d / "npy_named.npz")
    raw = (d / "good.npz").read_bytes()
    (d / "trunc.npz").write_bytes(raw[: len(raw) // 2])
    (d / "empty.npz").write_bytes(b"")
    (d / "empty.json").write_text("")
    (d / "space.json").write_text("   \n")
    (d / "corrupt.npz").write_bytes(b"PK\x03\x04garbage")
    (d / "corrupt.json").write_text('{"X": [1, 2')
    (d / "list.json").write_text("[1, 2, 3]")
    (d / "deep.json").write_text("[" * 200_000)
    (d / "deep_obj.json").write_text('{"X": ' * 100_000 + "1" + "}" * 100_000)
    data = pr.to_dict()
    (d / "bigint.json").write_text(
        json.dumps({**data, "X": [[["BIG", 0]] * 3] * 2}).replace('"BIG"', "9" * 5000)
    )
    (d / "bigexp.json").write_text(json.dumps(data).replace(repr(data["X"][0][0][0]), "1e999", 1))
    (d / "nan.json").write_text(json.dumps(data).replace(repr(data["X"][0][0][0]), "NaN", 1))
    (d / "binary.json").write_bytes(b"\xff\xfe\x00\x01")
    (d / "ragged.json").write_text(
        json.dumps({"X": [[[1, 2], [3]]], "y": [1], "z": [[1, 2]], "v": [1, 2]})
    )
    (d / "alpha_dict.json").write_text(json.dumps({**data, "alpha": {"x": 1}}))
    (d / "prob.txt").write_text("hello")
    (d / "adir.npz").mkdir()
    (d / "afile").write_text("x")
    os.symlink(d / "missing_target.npz", d / "dangling.npz")
    os.symlink("/proc/self/mem", d / "unreadable.npz")  # reading fails with EIO, even as root
    os.symlink("/proc/self/mem", d / "unreadable.json")
    X = pr.X.copy()  # two distinct tokens with the (equal) largest score
    X[:, 0] = np.stack([2.0 * pr.y, np.zeros(2)], axis=1)
    X[:, 1] = np.stack([2.0 * pr.y, np.ones(2)], axis=1)
    X[:, 2, 0] = -pr.y
    AttentionProblem(X, pr.y, pr.z, np.array([1.0, 0.0])).save(d / "tie.npz")
    AttentionProblem(pr.X * 1e-320, pr.y, pr.z, pr.v).save(d / "tiny.npz")
    # certificates
    from experiments.cli.main import main

    assert (
        main(
            [
                "certify",
                str(d / "good.npz"),
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
    text = (d / "cert.json").read_text()
    (d / "cert_trunc.json").write_text(text[: len(text) // 2])
    (d / "cert_list.json").write_text("[1, 2]")
    (d / "cert_bin.json").write_bytes(b"\xff\xfe\x00")
    (d / "cert_deep.json").write_text("[" * 200_000)
    (d / "cert_empty.json").write_text("")
    synthetic_problem(n=2, T=3, d=2, seed=2).save(d / "other.npz")
    # W0 files
    np.save(d / "W0.npy", np.eye(2))
    np.save(d / "W0_shape.npy", np.eye(3))
    W = np.eye(2)
    W[0, 1] = np.nan
    np.save(d / "W0_nan.npy", W)
    np.save(d / "W0_inf.npy", np.full((2, 2), np.inf))
    np.save(d / "W0_complex.npy", np.eye(2) * (1 + 1j))
    np.save(d / "W0_str.npy", np.full((2, 2), "a"))
    np.save(d / "W0_zero.npy", np.zeros((2, 2)))
    np.save(d / "W0_scalar.npy", np.array(1.0))
    np.savez(d / "W0_two.npz", a=np.eye(2), b=np.eye(2))
    (d / "W0.txt").write_text("1 0\n0 1\n")
    raw = (d / "W0.npy").read_bytes()
    (d / "W0_trunc.npy").write_bytes(raw[: len(raw) - 8])
    with open(d / "W0_object.npy", "wb") as fh:
        np.save(fh, np.array([[1, None], [0, 1]], dtype=object), allow_pickle=True)
    os.symlink(d / "good.npz", d / "good_link.npz")
    os.link(d / "good.json", d / "good_hard.json")
    # run directories for plot
    for name, summary in (
        ("run_nosummary", None),
        ("run_corrupt", '{"kind": '),
        ("run_list", "[1]"),
        ("run_kind", '{"kind": "zzz"}'),
        ("run_paths_empty", '{"kind": "paths"}'),
        ("run_nonempty", '{"kind": "paths"}'),
        ("run_deep", "[" * 200_000),
        ("run_deep_ok", "[" * 500 + "]" * 500),
        ("run_bigint", '{"kind": ' + "9" * 5000 + "}"),
        ("run_empty_file", ""),
        ("run_regpath_empty", '{"kind": "regpath"}'),
        ("run_paths_junk", '{"kind": "paths", "per_p": [{"p_exact": "2/1", "lr": 0.1}]}'),
        ("run_nan", '{"kind": NaN}'),
    ):
        (d / name).mkdir()
        if summary is not None:
            (d / name / "summary.json").write_text(summary)
    (d / "userdir").mkdir()  # a directory of the user's files, not a run
    (d / "userdir" / "notes.txt").write_text("mine")
    (d / "study_dir" / "runs").mkdir(parents=True)  # a study directory: never replaced by a run
    (d / "study_dir" / "study.json").write_text('{"format": "mdcert-study-1", "kind": "synthetic"}')
    (d / "study_dir" / "summary.json").write_text('{"kind": "synthetic"}')
    (d / "run_paths_junk" / "arrays.npz").write_bytes(b"PK\x03\x04junk")
    (d / "run_summary_dir").mkdir()
    (d / "run_summary_dir" / "summary.json").mkdir()
    (d / "run_unreadable").mkdir()
    os.symlink("/proc/self/mem", d / "run_unreadable" / "summary.json")
    (d / "run_sparse").mkdir()
    with open(d / "run_sparse" / "summary.json", "wb") as fh:  # 300 MB, sparse: no disk used
        fh.truncate(300 * 2**20)
    (d / "run_linked").mkdir()
    (d / "run_linked" / "summary.json").write_text('{"kind": "paths", "per_p": []}')
    os.link(d / "run_linked" / "summary.json", d / "run_linked" / "bregman.png")
    (d / "sweep_dir.toml").mkdir()
    (d / "sweep_bad.toml").write_text("kind = [[[")
    (d / "sweep_deep.toml").write_text("x = " + "[" * 100_000)
    # regression problems (mdcert interpolate / signdescent)
    from certify.regression import RegressionProblem, regression_problem

    regression_problem("block", N=2, seed=1).save(d / "reg.npz")
    regression_problem("gaussian", N=2, D=5, seed=1).save(d / "reg.json")
    _npz(
        d / "reg_nan.npz",
        kind=np.array("regression"),
        X=np.array([[1.0, np.nan, 0.0]]),
        y=np.array([1.0]),
    )
    _npz(
        d / "reg_bigint.npz",
        kind=np.array("regression"),
        X=np.array([[2**53 + 1, 1, 0]], dtype=np.int64),
        y=np.array([1.0]),
    )
    _npz(d / "reg_noy.npz", kind=np.array("regression"), X=np.ones((1, 3)))
    _npz(d / "reg_shape.npz", kind=np.array("regression"), X=np.ones((2, 3)), y=np.ones(3))
    (d / "reg_dupkey.json").write_text('{"kind": "regression", "X": [[1, 2]], "y": [1], "y": [2]}')
    RegressionProblem(
        np.array([[1.0, 1.0], [2.0, 2.0], [0.0, 1.0]]), np.array([1.0, 1.0, 1.0])
    ).save(d / "reg_inc.json")
    return d


def digest(root: Path) -> dict[str, str]:
    """sha256 of every file under ``root`` (symlinks by their target, not followed; sparse files by size)."""
    out = {}
    for p in sorted(root.rglob("*")):
        rel = str(p.relative_to(root))
        if p.is_symlink():
            out[rel] = "link:" + os.readlink(p)
        elif p.is_dir():
            out[rel] = "dir"
        elif p.stat().st_size > 2**26:
            out[rel] = f"size:{p.stat().st_size}:{p.stat().st_mtime_ns}"
        else:
            out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def listing(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def expand(argv: list[str], d: Path, o: Path) -> list[str]:
    return [a.replace("{d}", str(d)).replace("{o}", str(o)) for a in argv]


def run_case(argv: list[str], capsys) -> tuple[int, str, str, float]:
    """``mdcert ARGV`` in-process under `CASE_TIMEOUT`: (exit code, stdout, stderr, seconds)."""
    from experiments.cli.main import main

    capsys.readouterr()  # drop what the fixtures printed
    faulthandler.dump_traceback_later(CASE_TIMEOUT, exit=True, file=sys.__stderr__)
    t0 = time.perf_counter()
    try:
        try:
            rc = main(argv)
        except SystemExit as exc:  # argparse errors
            rc = exc.code
    finally:
        faulthandler.cancel_dump_traceback_later()
    out = capsys.readouterr()
    return rc, out.out, out.err, time.perf_counter() - t0


def check_case(
    argv: list[str],
    match: str,
    *,
    files: Path,
    out_dir: Path,
    capsys,
    rc: int = 1,
    prefix: str | None = None,
) -> str:
    """Run one case and make every assertion of the table; returns the stderr line."""
    before = digest(files)
    argv = expand(argv, files, out_dir)
    got, _, err, _ = run_case(argv, capsys)
    lines = err.strip().splitlines()
    assert got == rc, (got, err)
    assert len(lines) == 1, err
    assert "Traceback" not in err and "internal error" not in err, err
    assert lines[0].startswith(prefix or f"mdcert {argv[0]}: error: "), err
    assert "error: " in lines[0] or lines[0].startswith("NOT verified: "), err
    assert re.search(match, lines[0]), (match, lines[0])
    assert listing(out_dir) == set(), "a failed command left output behind"
    assert digest(files) == before, "a failed command changed an input or wrote next to it"
    return lines[0]


def params(cases: list[tuple]) -> list:
    """pytest params ``(argv, match, rc, prefix)`` from ``(argv, match[, rc[, prefix]])`` tuples."""
    import pytest

    out = []
    for case in cases:
        argv, match, rc, prefix = list(case) + [1, None][len(case) - 2 :]
        out.append(pytest.param(argv, match, rc, prefix, id=" ".join(argv)[:80]))
    return out
