"""``mdcert interpolate`` and ``mdcert verify`` on regression problems: results, exit codes, bad input."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest

from certify.regression import RegressionProblem, regression_problem
from experiments.cli.main import main


def _digest(d):
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(d.iterdir())}


def test_certify_verify_and_export(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    assert (
        main(
            [
                "interpolate",
                "reg.npz",
                "--synth",
                "block",
                "--N",
                "4",
                "--p",
                "1.5",
                "-o",
                "c.json",
                "--export-beta",
                "b.npy",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert (
        "OPT = min ||beta||_p in [" in out and "affine set <= 0" in out
    )  # block data: exact closed form
    pr = RegressionProblem(np.load("reg.npz")["X"], np.load("reg.npz")["y"])
    assert np.allclose(pr.X @ np.load("b.npy"), pr.y, atol=1e-14)
    assert main(["verify", "reg.npz", "c.json", "--p", "1.5"]) == 0
    assert "verified: all 7 claims hold (status optimal" in capsys.readouterr().out
    assert main(["verify", "reg.npz", "c.json", "--p", "1.75"]) == 1
    assert "NOT verified: p: certificate p = 3/2, expected 7/4" in capsys.readouterr().err


def test_inconsistent_system_exits_3_with_its_proof(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    RegressionProblem(
        np.array([[1.0, 1.0], [2.0, 2.0], [0.0, 1.0]]), np.array([1.0, 1.0, 1.0])
    ).save("inc.json")
    assert main(["interpolate", "inc.json", "--p", "2", "-o", "c.json"]) == 3
    assert "X beta = y has no solution: proven" in capsys.readouterr().out
    assert json.loads((tmp_path / "c.json").read_text())["status"] == "inconsistent"
    assert main(["verify", "inc.json", "c.json"]) == 0


def test_overdetermined_data_warn_that_the_theory_needs_d_above_n(
    tmp_path, monkeypatch, capsys
) -> None:
    monkeypatch.chdir(tmp_path)
    X = np.array([[1.0, 0.0], [0.0, 1.0]])
    RegressionProblem(X, np.array([1.0, -2.0])).save("sq.npz")
    assert main(["interpolate", "sq.npz", "--p", "3"]) == 0
    err = capsys.readouterr().err
    assert "warning: N = 2 >= D = 2: the sign-descent theory needs D > N" in err


@pytest.mark.parametrize(
    "argv, message",
    [
        (["interpolate", "reg.npz", "--p", "1"], r"p"),
        (["interpolate", "reg.npz", "--p", "1.5", "--bits", "4"], r"invalid --bits 4"),
        (["interpolate", "missing.npz", "--p", "1.5"], r"missing.npz"),
        (["interpolate", "attn.npz", "--p", "1.5"], r"not a regression problem"),
        (["interpolate", "nan.npz", "--p", "1.5"], r"X entry \(0, 1\) is not finite"),
        (
            ["interpolate", "big.npz", "--p", "1.5"],
            r"X\[0, 0\] = 9007199254740993 \(int64\) would round",
        ),
        (["interpolate", "reg.npz", "--p", "1.5", "-o", "reg.npz"], r"reg.npz"),
        (["verify", "reg.npz", "junk.json"], r"not an interpolation certificate"),
    ],
)
def test_bad_input_is_one_line_exit_1_and_writes_nothing(
    tmp_path, monkeypatch, capsys, argv, message
) -> None:
    import re

    from certify import synthetic_problem

    monkeypatch.chdir(tmp_path)
    regression_problem("gaussian", N=3, D=6, seed=1).save("reg.npz")
    synthetic_problem(n=2, T=3, d=2, seed=1).save(tmp_path / "attn.npz")
    np.savez("nan.npz", kind=np.array("regression"), X=np.array([[1.0, np.nan]]), y=np.array([1.0]))
    np.savez(
        "big.npz",
        kind=np.array("regression"),
        X=np.array([[2**53 + 1, 1]], dtype=np.int64),
        y=np.array([1.0]),
    )
    (tmp_path / "junk.json").write_text('{"status": "optimal"}')
    before = _digest(tmp_path)
    assert main(argv) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and re.search(message, err[0]) and "Traceback" not in err[0], err
    assert _digest(tmp_path) == before
