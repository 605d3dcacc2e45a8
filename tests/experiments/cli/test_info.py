"""``mdcert info PROBLEM``: sizes, lengths, padding, ties, optimal and duplicated tokens, N/d^2 and the feasibility
hint; long lists summarized on the terminal, in full with --json (issue 20; issue 21)."""

from __future__ import annotations

import json

import numpy as np

from certify import AttentionProblem, synthetic_problem
from certify.info import Feasibility, problem_info
from experiments.cli.main import main


def test_summary_of_a_variable_length_problem(tmp_path, capsys) -> None:
    pr = synthetic_problem(n=40, T=5, d=3, seed=1, min_T=3)
    pr.save(tmp_path / "p.npz")
    assert main(["info", str(tmp_path / "p.npz"), "--json", str(tmp_path / "info.json")]) == 0
    out = capsys.readouterr()
    assert "n = 40 examples, T = 5 tokens, d = 3" in out.out
    assert (
        f"lengths: {pr.lengths.min()}..{pr.lengths.max()}" in out.out and "(40 in all)" in out.out
    )
    rows = int((pr.lengths - 1).sum())
    assert f"N = {rows} rows, d^2 = 9 variables, N/d^2 = {rows / 9:.3g}" in out.out
    assert (
        "padding detected without lengths: none" in out.out
        and out.err.strip() == f"wrote {tmp_path / 'info.json'}"
    )
    full = json.loads((tmp_path / "info.json").read_text())
    assert (
        full["optimal_tokens"] == list(pr.optimal_indices().indices) and len(full["lengths"]) == 40
    )
    assert full["rows"] == rows and full["feasibility"] == "many rows"


def test_zero_rows_are_proven_infeasible_and_padding_is_reported(tmp_path, capsys) -> None:
    pr = synthetic_problem(n=3, T=4, d=3, seed=2)
    X = pr.X.copy()
    X[1, 3] = 0.0  # trailing zero token, no lengths
    X[2, 1] = X[2, 0]  # two identical tokens ...
    alpha = list(pr.optimal_indices().indices)
    alpha[2] = 0  # ... one of them selected: x_alpha - x_1 = 0
    AttentionProblem(X, pr.y, pr.z, pr.v, alpha=alpha).save(tmp_path / "p.json")
    info = problem_info(AttentionProblem(X, pr.y, pr.z, pr.v, alpha=alpha))
    assert info.feasibility is Feasibility.INFEASIBLE and info.zero_rows == ((2, 1),)
    assert (
        info.padded == ((1, 1),)
        and info.duplicates == ((2, (0, 1)),)
        and info.alpha_source == "stored"
    )
    assert main(["info", str(tmp_path / "p.json")]) == 0
    out = capsys.readouterr()
    assert (
        "feasibility hint (alpha = stored): infeasible for alpha = stored: 1 zero row(s), first example 2 "
        "token 1"
    ) in out.out
    warnings = [ln for ln in out.err.splitlines() if ln.startswith("mdcert info: warning:")]
    assert (
        len(warnings) == 2
        and "end in all-zero tokens" in warnings[0]
        and "identical tokens" in warnings[1]
    )


def test_ties_are_exact() -> None:
    pr = synthetic_problem(n=2, T=3, d=2, seed=1)
    X = pr.X.copy()
    X[:, 0] = np.stack([2.0 * pr.y, np.zeros(2)], axis=1)
    X[:, 1] = np.stack([2.0 * pr.y, np.ones(2)], axis=1)
    X[:, 2, 0] = -pr.y
    info = problem_info(AttentionProblem(X, pr.y, pr.z, pr.v * 0 + np.array([1.0, 0.0])))
    assert info.ties == ((0, (0, 1)), (1, (0, 1))) and info.alpha_source.startswith("optimal, tied")
    assert info.duplicates == () and info.feasibility is Feasibility.FEW_ROWS


def test_classification_and_regression_files_get_their_own_summary(tmp_path, capsys) -> None:
    from certify.classification import ClassificationProblem
    from certify.regression.problem import RegressionProblem

    X = np.array([[1.0, 2.0], [0.5, 0.5], [1.0, 2.0]])
    ClassificationProblem(X, np.array([1.0, -1.0, -1.0])).save(tmp_path / "c.npz")
    assert main(["info", str(tmp_path / "c.npz"), "--json", str(tmp_path / "c.json")]) == 0
    out = capsys.readouterr().out
    assert "binary classification: n = 3 points, d = 2, K = 2 classes" in out
    assert "separability: not separable (proven: points 0 and 2 are equal" in out
    assert json.loads((tmp_path / "c.json").read_text())["duplicates"] == [[0, 2]]
    RegressionProblem(np.array([[0.0, 0.0, 0.0], [1.0, 2.0, 3.0]]), np.array([1.0, 2.0])).save(
        tmp_path / "r.json"
    )
    assert main(["info", str(tmp_path / "r.json")]) == 0
    out = capsys.readouterr().out
    assert "regression: N = 2 rows, D = 3 columns" in out
    assert "consistency of X beta = y: inconsistent (proven: row 0 of X is zero" in out
