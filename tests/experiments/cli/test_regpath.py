"""``mdcert regpath`` end to end (experiments/commands/regpath.py)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from certify import AttentionProblem, synthetic_problem
from experiments.cli.main import main


@pytest.fixture(scope="module")
def small_problem(tmp_path_factory):
    path = tmp_path_factory.mktemp("regpath") / "small.npz"
    synthetic_problem(n=3, T=4, d=4, seed=1).save(path)
    return path


def _one_line_error(capsys, rc, match: str) -> None:
    assert rc == 1
    err = capsys.readouterr().err
    assert err.strip().count("\n") == 0, err
    assert "Traceback" not in err and match in err, err


def test_regpath_writes_summary(small_problem, tmp_path, capsys) -> None:
    run = tmp_path / "run"
    rc = main(
        [
            "regpath",
            str(small_problem),
            "--p",
            "1.75",
            "--radii",
            "10:1000:3",
            "--starts",
            "1",
            "-o",
            str(run),
        ]
    )
    assert rc == 0
    summary = json.loads((run / "summary.json").read_text())
    assert summary["kind"] == "regpath" and summary["p"] == "7/4" and summary["joint"] is False
    assert [e["R"] for e in summary["path"]] == pytest.approx([10.0, 100.0, 1000.0])
    for e in summary["path"]:
        assert {
            "R",
            "bregman_to_svm",
            "loss",
            "stationarity",
            "selected_tokens",
            "winner",
            "starts",
        } <= set(e)
    b = [e["bregman_to_svm"] for e in summary["path"]]
    assert b[-1] < b[0] / 10
    assert summary["reference"]["certified"] is True
    assert sorted(p.name for p in run.iterdir()) == [
        ".mdcert-run",
        "path.npz",
        "summary.json",
    ]  # no temporaries
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]
    with np.load(run / "path.npz") as f:
        assert f["W"].shape == (3, 4, 4)
    assert "wrote" in capsys.readouterr().out


def test_overwrite_replaces_a_regpath_run_and_its_figures(small_problem, tmp_path, capsys) -> None:
    """--overwrite replaces a regpath run with the figures `mdcert plot` added; a paths run is refused."""
    import os

    from experiments.runtime.outputs import read_marker

    run = tmp_path / "run"
    argv = [
        "regpath",
        str(small_problem),
        "--p",
        "2",
        "--radii",
        "10:100:2",
        "--starts",
        "1",
        "-o",
        str(run),
    ]
    assert main(argv) == 0 and main(["plot", str(run)]) == 0
    figures = sorted(p.name for p in run.glob("*.png"))
    assert figures and set(figures) <= set(read_marker(run)["files"])
    assert main(argv) == 1 and "use --overwrite" in capsys.readouterr().err
    assert main([*argv, "--overwrite"]) == 0
    assert sorted(os.listdir(run)) == [".mdcert-run", "path.npz", "summary.json"]
    assert sorted(os.listdir(tmp_path)) == ["run"]
    capsys.readouterr()
    paths = tmp_path / "paths"
    assert (
        main(
            [
                "paths",
                "--trials",
                "1",
                "--n",
                "2",
                "--T",
                "3",
                "--d",
                "2",
                "--steps",
                "5",
                "--no-certify",
                "--progress",
                "off",
                "-o",
                str(paths),
            ]
        )
        == 0
    )
    before = sorted(os.listdir(paths))
    assert main([*argv[:-1], str(paths), "--overwrite"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "holds a 'paths' run, not a 'regpath' run" in err
    assert sorted(os.listdir(paths)) == before


@pytest.mark.parametrize(
    "radii, match",
    [
        ("0:10:3", "positive"),
        ("10:1:3", "START"),
        ("1:10:0", "COUNT"),
        ("1:10", "START:STOP:COUNT"),
        ("x:y:z", "numbers"),
        ("=-1:10:3", "positive"),
    ],
)
def test_bad_radii_fail_before_writing(small_problem, tmp_path, capsys, radii, match) -> None:
    run = tmp_path / "run"
    rc = main(
        ["regpath", str(small_problem), "--p", "2", f"--radii={radii.lstrip('=')}", "-o", str(run)]
    )
    _one_line_error(capsys, rc, match)
    assert not run.exists()


def test_infeasible_alpha_and_ties_fail_clearly(tmp_path, capsys) -> None:
    a, b, z = np.array([1.0, 0.0]), np.array([0.0, 1.0]), np.array([1.0, 0.5])
    infeasible = tmp_path / "inf.json"
    AttentionProblem(
        np.array([[a, b], [b, a]]), np.array([1.0, 1.0]), np.array([z, z]), np.array([1.0, -1.0])
    ).save(infeasible)
    rc = main(
        ["regpath", str(infeasible), "--p", "2", "--alpha", "0,0", "-o", str(tmp_path / "r1")]
    )
    _one_line_error(capsys, rc, "infeasible")
    tied = tmp_path / "tie.json"
    x = np.array([1.0, 0.0])
    x2 = np.array([1.0, 1.0])  # tied with x in score, not identical (that would warn)
    AttentionProblem(
        np.array([[x, x2, -x]]), np.array([1.0]), np.array([[0.0, 1.0]]), np.array([1.0, 0.0])
    ).save(tied)
    rc = main(["regpath", str(tied), "--p", "2", "-o", str(tmp_path / "r2")])
    _one_line_error(capsys, rc, "tied")
    assert not (tmp_path / "r1").exists() and not (tmp_path / "r2").exists()


@pytest.mark.parametrize(
    "extra, match",
    [
        (["--joint"], "--r-of-R"),
        (["--joint", "--r-of-R", "os.system('x')"], "not allowed"),
        (["--r-of-R", "R"], "only used with --joint"),
        (["--md-steps", "5"], "--joint"),
        (["--joint", "--r-of-R", "log(R)"], "finite and positive"),
        (["--starts", "0", "--no-svm-start", "--no-dual-start"], "no starts"),
        (["--p", "1"], "p > 1"),
    ],
)
def test_bad_options_fail_clearly(small_problem, tmp_path, capsys, extra, match) -> None:
    argv = [
        "regpath",
        str(small_problem),
        "--p",
        "2",
        "--radii",
        "1:10:2",
        "-o",
        str(tmp_path / "r"),
    ] + extra
    rc = main(argv)
    _one_line_error(capsys, rc, match)


def test_joint_example_run(tmp_path) -> None:
    run = tmp_path / "joint"
    rc = main(
        [
            "regpath",
            "joint-example",
            "--p",
            "2",
            "--radii",
            "1:100:2",
            "--starts",
            "1",
            "--joint",
            "--r-of-R",
            "sqrt(R)",
            "--md-steps",
            "20",
            "-o",
            str(run),
        ]
    )
    assert rc == 0
    s = json.loads((run / "summary.json").read_text())
    assert s["joint"] is True and s["r_of_R"] == "sqrt(R)" and s["alpha"] == [0, 0]
    assert [e["r"] for e in s["path"]] == pytest.approx([1.0, 10.0])
    assert {"bregman_v_to_svm", "stationarity_W", "stationarity_v"} <= set(s["path"][0])
    assert s["joint_md"]["steps"] == 20 and s["joint_md"]["skipped_W_steps"] == [1]
    assert "theorem31_quantities" in s


def test_a_theorem_31_run_says_where_the_path_picks_other_tokens(tmp_path, capsys) -> None:
    """Joint (W, v) regularization path (Theorem 31) on data whose path selects tokens [1, 0, 1], not the
    SVM's alpha = [0, 1, 0]: the run says so on stdout and in summary.json, with the divergence to the
    SVMs of the selected tokens; D_W to alpha's SVM alone would read as non-convergence (issue 13)."""
    synthetic_problem(n=3, T=4, d=3, seed=5).save(tmp_path / "p.npz")
    run = tmp_path / "run"
    assert (
        main(
            [
                "regpath",
                str(tmp_path / "p.npz"),
                "--p",
                "2",
                "--joint",
                "--r-of-R",
                "sqrt(R)",
                "--radii",
                "1:100:3",
                "-o",
                str(run),
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    s = json.loads((run / "summary.json").read_text())
    other = [r["R"] for r in s["path"] if r["selected_tokens"] != s["alpha"]]
    assert other and s["alpha"] == [0, 1, 0]
    notes = s["token_notes"]
    assert len(notes) == 1 and notes[0] in out
    assert len(other) == 3 and notes[0].startswith(
        "note: at every R (1 to 100) the path selects tokens [1, 0, 1] "
    )
    assert (
        "instead of the SVM's alpha = [0, 1, 0]" in notes[0]
        and "bregman_to_selected_svm" in notes[0]
    )
    assert all("bregman_to_selected_svm" in r for r in s["path"])


def test_token_notes_are_empty_when_the_path_selects_alpha() -> None:
    from experiments.commands.regpath import token_notes

    path = [{"R": 1.0, "selected_tokens": [0, 2]}, {"R": 10.0, "selected_tokens": [0, 2]}]
    assert token_notes({"alpha": [0, 2], "path": path}) == []
    path[0]["selected_tokens"] = [1, 2]
    (note,) = token_notes({"alpha": [0, 2], "path": path})
    assert note.startswith(
        "note: at R = 1 the path selects tokens [1, 2] instead of the SVM's alpha = [0, 2]"
    )
    md = {
        "records": [
            {
                "step": 5,
                "selected_tokens": [1, 2],
                "bregman_W": 0.5,
                "bregman_v": 0.4,
                "bregman_W_to_selected_svm": 1e-3,
                "bregman_v_to_selected_svm": 2e-3,
            }
        ]
    }
    notes = token_notes({"alpha": [0, 2], "path": path[1:], "joint_md": md})
    assert notes == [
        "note: joint mirror descent ends on tokens [1, 2], not the SVM's alpha = [0, 2] (examples [0]): "
        "it converges toward the SVMs of its own tokens (D_W = 1.000e-03, D_v = 2.000e-03), not those "
        "of alpha (D_W = 5.000e-01, D_v = 4.000e-01)"
    ]
