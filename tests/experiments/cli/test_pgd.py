"""``mdcert pgd``: a run directory with a strict-JSON summary, --check verdicts, inputs untouched."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest

from certify import ClassificationProblem, classification_problem
from experiments.cli.main import main


@pytest.fixture(scope="module")
def points(tmp_path_factory):
    d = tmp_path_factory.mktemp("pgd")
    classification_problem(n=20, d=3, seed=0).save(d / "sep.npz")
    X = np.array([[1.0, 2.0], [1.0, 2.0], [0.5, -1.0], [2.0, 1.0]])
    ClassificationProblem(X=X, y=np.array([1.0, -1.0, 1.0, -1.0])).save(d / "conflict.npz")
    return d


def _sha(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_run_writes_summary_arrays_and_figure(points, tmp_path, capsys) -> None:
    before = _sha(points / "sep.npz")
    rc = main(
        [
            "pgd",
            str(points / "sep.npz"),
            "--p",
            "1.5,2",
            "--lr",
            "1",
            "--inits",
            "2",
            "--steps",
            "300",
            "--normalize",
            "-o",
            str(tmp_path / "run"),
        ]
    )
    out = capsys.readouterr().out
    assert rc == 0 and "p=1.5 lr=1: D_psi median" in out and "wrote" in out
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["kind"] == "pgd" and len(summary["trajectories"]) == 4
    assert all(r["status"] == "optimal" for r in summary["references"].values())
    assert {p.name for p in (tmp_path / "run").iterdir()} == {
        "summary.json",
        "arrays.npz",
        "pgd.png",
        ".mdcert-run",
    }
    assert _sha(points / "sep.npz") == before


def test_check_prints_one_verdict_per_hypothesis(points, capsys) -> None:
    rc = main(
        ["pgd", str(points / "sep.npz"), "--p", "2", "--inits", "1", "--steps", "50", "--check"]
    )
    out = capsys.readouterr().out
    assert rc == 0
    assert "loss_exponential_tail: HOLDS" in out and "p=2 separable: HOLDS" in out
    assert "step_size_measured: UNDECIDED" in out and "2205.12808" in out


def test_check_on_non_separable_data_fails_with_gordan(points, capsys) -> None:
    rc = main(
        [
            "pgd",
            str(points / "conflict.npz"),
            "--p",
            "2",
            "--inits",
            "1",
            "--steps",
            "20",
            "--check",
        ]
    )
    out = capsys.readouterr().out
    assert rc == 0 and "p=2 separable: FAILS" in out and "Gordan" in out and "no reference" in out
