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
