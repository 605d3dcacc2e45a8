"""``mdcert synth``."""

from __future__ import annotations

import numpy as np
import pytest

from certify import AttentionProblem, synthetic_problem
from experiments.cli.main import main


@pytest.mark.parametrize("suffix", [".npz", ".json"])
def test_synth_writes_the_seeded_problem(tmp_path, capsys, suffix) -> None:
    out = tmp_path / f"problem{suffix}"
    assert main(["synth", "--n", "6", "--T", "8", "--d", "10", "--seed", "7", "-o", str(out)]) == 0
    prob = AttentionProblem.load(out)
    np.testing.assert_array_equal(prob.X, synthetic_problem(seed=7).X)
    assert "globally optimal tokens" in capsys.readouterr().out


@pytest.mark.parametrize(("argv", "pattern"), [(["--n", "0"], "invalid n"), (["--T", "1"], "invalid T"),
                                               (["-o", "x.csv"], "use a .npz or .json")])
def test_synth_bad_input_one_line(tmp_path, capsys, argv, pattern) -> None:
    argv = ["synth", *argv] + ([] if "-o" in argv else ["-o", str(tmp_path / "p.npz")])
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert pattern in err and err.strip().count("\n") == 0
    assert not list(tmp_path.iterdir())


def test_synth_min_T_writes_variable_lengths(tmp_path, capsys) -> None:
    out = tmp_path / "var.npz"
    assert main(["synth", "--seed", "3", "--min-T", "3", "-o", str(out)]) == 0
    prob = AttentionProblem.load(out)
    assert prob.lengths is not None and prob.lengths.min() >= 3 and prob.lengths.max() <= 8
    assert f"lengths={[int(k) for k in prob.lengths]}" in capsys.readouterr().out
    full = synthetic_problem(seed=3)
    np.testing.assert_array_equal(prob.X[prob.token_mask], full.X[prob.token_mask])
    assert prob.data_hash() == synthetic_problem(seed=3, min_T=3).data_hash()


@pytest.mark.parametrize("min_T", ["1", "9"])
def test_synth_bad_min_T_one_line(tmp_path, capsys, min_T) -> None:
    assert main(["synth", "--min-T", min_T, "-o", str(tmp_path / "p.npz")]) == 1
    err = capsys.readouterr().err
    assert "invalid --min-T" in err and err.strip().count("\n") == 0
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize(("extra", "kind", "K"), [([], "binary", 2), (["--classes", "4", "--random"], "multiclass", 4)])
def test_synth_classification(tmp_path, capsys, extra, kind, K) -> None:
    from certify.classification import load_problem
    from certify.synth import classification_problem

    out = tmp_path / "points.npz"
    assert main(["synth", "--classification", "--n", "50", "--d", "3", "--seed", "2", *extra, "-o", str(out)]) == 0
    prob = load_problem(out)
    assert (prob.kind, prob.K, prob.n, prob.d) == (kind, K, 50, 3)
    again = classification_problem(n=50, d=3, classes=None if K == 2 else K, separable="--random" not in extra, seed=2)
    assert prob.data_hash() == again.data_hash()
    assert f"{kind} classification, n=50 d=3" in capsys.readouterr().out


def test_synth_classes_needs_classification(tmp_path, capsys) -> None:
    assert main(["synth", "--classes", "3", "-o", str(tmp_path / "p.npz")]) == 1
    assert "--classes needs --classification" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())
