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


@pytest.mark.parametrize(
    ("argv", "pattern"),
    [
        (["--n", "0"], "invalid n"),
        (["--T", "1"], "invalid T"),
        (["-o", "x.csv"], "use a .npz or .json"),
    ],
)
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


def test_synth_never_removes_a_file_it_did_not_create(tmp_path, capsys) -> None:
    """Issue 21's reproducer: ``same.npz.tmp.npz`` was the fixed temporary name and was deleted."""
    (tmp_path / "same.npz.tmp.npz").write_text("precious")
    assert main(["synth", "--seed", "2", "-o", str(tmp_path / "same.npz")]) == 0
    assert (tmp_path / "same.npz.tmp.npz").read_text() == "precious"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["same.npz", "same.npz.tmp.npz"]
    np.testing.assert_array_equal(
        AttentionProblem.load(tmp_path / "same.npz").X, synthetic_problem(seed=2).X
    )


def test_concurrent_synth_to_one_path_leaves_one_writers_problem(tmp_path) -> None:
    """Four processes with different seeds each run ``mdcert synth -o same.npz`` ten times: every run
    succeeds, and the file is one complete problem, exactly one seed's."""
    import os
    import subprocess
    import sys

    out = tmp_path / "same.npz"
    code = (
        "import sys\nfrom experiments.cli.main import main\n"
        "sys.exit(max(main(['synth', '--seed', sys.argv[1], '-o', sys.argv[2]]) for _ in range(10)))"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code, str(seed), str(out)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=env,
        )
        for seed in range(4)
    ]
    errs = [p.communicate(timeout=300)[1] for p in procs]
    assert [p.returncode for p in procs] == [0] * 4, errs
    got = AttentionProblem.load(out)
    assert [
        seed for seed in range(4) if got.data_hash() == synthetic_problem(seed=seed).data_hash()
    ] != []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["same.npz"]


@pytest.mark.parametrize(
    ("extra", "kind", "K"), [([], "binary", 2), (["--classes", "4", "--random"], "multiclass", 4)]
)
def test_synth_classification(tmp_path, capsys, extra, kind, K) -> None:
    from certify.classification import load_problem
    from certify.synth import classification_problem

    out = tmp_path / "points.npz"
    assert (
        main(
            [
                "synth",
                "--classification",
                "--n",
                "50",
                "--d",
                "3",
                "--seed",
                "2",
                *extra,
                "-o",
                str(out),
            ]
        )
        == 0
    )
    prob = load_problem(out)
    assert (prob.kind, prob.K, prob.n, prob.d) == (kind, K, 50, 3)
    again = classification_problem(
        n=50, d=3, classes=None if K == 2 else K, separable="--random" not in extra, seed=2
    )
    assert prob.data_hash() == again.data_hash()
    assert f"{kind} classification, n=50 d=3" in capsys.readouterr().out


def test_synth_classes_needs_classification(tmp_path, capsys) -> None:
    assert main(["synth", "--classes", "3", "-o", str(tmp_path / "p.npz")]) == 1
    assert "--classes needs --classification" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


def test_a_large_problem_gets_one_short_line_without_its_token_list(tmp_path, capsys) -> None:
    """n = 2,000: the summary is one line of bounded length (no 2,000-entry list, no exact token
    scores computed for it) and points to `mdcert info`."""
    out = tmp_path / "big.npz"
    assert (
        main(["synth", "--n", "2000", "--T", "4", "--d", "3", "--min-T", "2", "-o", str(out)]) == 0
    )
    text = capsys.readouterr().out.strip()
    assert text.count("\n") == 0 and len(text) < 300
    assert "not listed for n > 20" in text and "mdcert info big.npz" in text
    assert "lengths 2..4" in text
    assert AttentionProblem.load(out).n == 2000
