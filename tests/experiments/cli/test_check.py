"""Tests of ``mdcert check`` (experiments/commands/check.py)."""

from __future__ import annotations

import json
import re
import warnings
from fractions import Fraction

import numpy as np
import pytest

from certify.problem import AttentionProblem
from certify.synth import synthetic_problem
from experiments.cli.main import main


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        warnings.simplefilter("ignore", UserWarning)
        yield


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("check")
    prob = synthetic_problem(n=3, T=4, d=3, seed=5)
    prob.save(d / "prob.npz")
    np.save(d / "W0.npy", np.random.default_rng(0).standard_normal((3, 3)) * 0.3)
    np.save(d / "bad.npy", np.ones((2, 3)))
    AttentionProblem([[[0, 0], [-1, -1], [-10, 5]]], [1], [[1, 0]], [0, 1]).save(d / "crafted.json")
    return d


def test_check_without_path_reports_all_hypotheses(files, capsys, tmp_path):
    out = tmp_path / "r.json"
    assert (
        main(
            [
                "check",
                str(files / "crafted.json"),
                "--p",
                "1.75",
                "--alpha",
                "0",
                "--json",
                str(out),
            ]
        )
        == 0
    )
    text = capsys.readouterr().out
    for name in (
        "loss_admissible",
        "svm_feasible",
        "tokens_locally_optimal",
        "init_in_region",
        "step_size_convex_along_path",
    ):
        assert name in text
    assert "verdict: UNDECIDED" in text and "to measure" in text
    rep = json.loads(out.read_text())
    assert set(rep) >= {"theorem", "verdict", "hypotheses", "quantities"}
    assert rep["theorem"] == "10" and rep["verdict"] == "undecided"
    for h in rep["hypotheses"]:
        assert set(h) >= {"name", "verdict", "evidence", "message"}
        assert h["verdict"] in {"holds", "fails", "undecided"}
    by_name = {h["name"]: h["verdict"] for h in rep["hypotheses"]}
    assert by_name["tokens_locally_optimal"] == "holds"
    assert not list(tmp_path.glob("*.tmp*"))


def test_check_runs_and_checks_the_training_path(files, capsys, tmp_path):
    out = tmp_path / "r.json"
    argv = [
        "check",
        str(files / "prob.npz"),
        "--p",
        "1.5",
        "--init",
        str(files / "W0.npy"),
        "--lr",
        "0.1",
        "--steps",
        "40",
        "--mu",
        "2",
        "--R",
        "0.01",
        "--theorem",
        "11",
        "--json",
        str(out),
    ]
    assert main(argv) == 0
    rep = json.loads(out.read_text())
    by_name = {h["name"]: h for h in rep["hypotheses"]}
    step = by_name["step_size_convex_along_path"]
    assert step["verdict"] in {"holds", "fails"}
    assert step["evidence"][0]["data"]["steps"] == 40
    assert by_name["init_in_region"]["verdict"] in {"holds", "fails"}
    assert rep["quantities"]["steps"] == 40 and rep["quantities"]["eta"] == "1/10"
    assert "training_path" in rep["quantities"]["seconds"]


def test_alpha_from_training(files, capsys):
    argv = [
        "check",
        str(files / "prob.npz"),
        "--p",
        "2",
        "--init",
        str(files / "W0.npy"),
        "--lr",
        "0.5",
        "--steps",
        "30",
        "--alpha",
        "locally-optimal-from-training",
    ]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "argmax of the final attention after 30 steps" in text


def test_run_path_matches_plain_mirror_descent(files):
    from experiments.commands.check import run_path

    prob = AttentionProblem.load(files / "prob.npz")
    W0 = np.load(files / "W0.npy")
    for p in ("2", "1.5"):
        traj = run_path(prob, W0, lr=0.1, p=Fraction(p), steps=3)
        W, pf = W0.copy(), float(Fraction(p))
        for k in range(3):
            s = np.einsum("ntd,de,ne->nt", prob.X, W, prob.z)
            sig = np.exp(s - s.max(1, keepdims=True))
            sig /= sig.sum(1, keepdims=True)
            h = prob.X @ prob.v
            f = (sig * h).sum(1)
            c = (-1 / (1 + np.exp(prob.y * f)) * prob.y)[:, None] * sig * (h - f[:, None])
            G = np.einsum("nt,ntd,ne->de", c, prob.X, prob.z) / prob.n
            Q = np.sign(W) * np.abs(W) ** (pf - 1) - 0.1 * G
            W = np.sign(Q) * np.abs(Q) ** (1 / (pf - 1))
            assert np.allclose(traj[k + 1], W, rtol=1e-10, atol=1e-14)


@pytest.mark.parametrize(
    "extra,match",
    [
        (["--p", "1"], "mirror descent needs --p > 1"),
        (["--p", "2", "--theorem", "7"], "unknown theorem"),
        (["--p", "2", "--init", "W0.npy"], "give --init and --lr together"),
        (["--p", "2", "--lr", "0.1"], "give --init and --lr together"),
        (["--p", "2", "--alpha", "locally-optimal-from-training"], "needs a training path"),
        (["--p", "2", "--init", "bad.npy", "--lr", "0.1"], r"shape \(3, 3\)"),
        (["--p", "2", "--init", "missing.npy", "--lr", "0.1"], "not found"),
        (["--p", "2", "--init", "W0.npy", "--lr", "-1"], "must be >= 0"),
        (
            ["--p", "2", "--steps", "0", "--init", "W0.npy", "--lr", "0.1"],
            "positive number of steps",
        ),
        (["--p", "2", "--mu", "abc"], "invalid --mu"),
        (["--p", "2", "--alpha", "9,9,9"], "not a token index"),
        (["--p", "2", "--normalize"], "--normalize is the step rule of a training path"),
        (["--p", "2", "--trajectory", "0"], "--trajectory K needs --run DIR"),
        (["--p", "2", "--run", "."], "--run DIR needs --trajectory K"),
        (["--p", "2", "--run", ".", "--trajectory", "0"], "drop a problem file, --p"),
    ],
)
def test_bad_input_is_one_line_exit_1(files, capsys, monkeypatch, extra, match):
    import re

    monkeypatch.chdir(files)
    assert main(["check", "prob.npz", *extra]) == 1
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith("mdcert check: error:")
    assert re.search(match, err), err


def test_missing_problem_file(tmp_path, capsys):
    assert main(["check", str(tmp_path / "nope.npz"), "--p", "2"]) == 1
    assert "problem file not found" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.parametrize("p", ["1.1", "1.75", "2", "3"])
def test_paper_size_2000_steps_no_undecided(tmp_path, p):
    prob = synthetic_problem(seed=0)
    prob.save(tmp_path / "prob.npz")
    np.save(tmp_path / "W0.npy", np.random.default_rng(1).standard_normal((10, 10)) * 0.1)
    out = tmp_path / "r.json"
    assert (
        main(
            [
                "check",
                str(tmp_path / "prob.npz"),
                "--p",
                p,
                "--init",
                str(tmp_path / "W0.npy"),
                "--lr",
                "0.1",
                "--mu",
                "0.9",
                "--R",
                "0.1",
                "--json",
                str(out),
            ]
        )
        == 0
    )
    rep = json.loads(out.read_text())
    assert [h["verdict"] for h in rep["hypotheses"]].count("undecided") == 0


@pytest.mark.parametrize("scale_X,scale_z", [(1e-320, 1.0), (1e-160, 1e-160), (1e300, 1e8)])
def test_subnormal_and_huge_data_report(tmp_path, capsys, scale_X, scale_z):
    """Data scaled into the subnormal range (OPT ~ 1e320) or near the float64 maximum: the report is
    formatted from the exact bounds, never through float() (issue 11 item 6)."""
    pr = synthetic_problem(n=3, T=4, d=3, seed=1)
    AttentionProblem(pr.X * scale_X, pr.y, pr.z * scale_z, pr.v).save(tmp_path / "p.npz")
    np.save(tmp_path / "W0.npy", np.eye(3))
    rc = main(
        [
            "check",
            str(tmp_path / "p.npz"),
            "--p",
            "1.5",
            "--init",
            str(tmp_path / "W0.npy"),
            "--lr",
            "0.1",
            "--steps",
            "3",
            "--mu",
            "0.5",
            "--R",
            "1",
            "--json",
            str(tmp_path / "r.json"),
        ]
    )
    out = capsys.readouterr()
    assert rc == 0, out.err
    assert "||W_mm||_p in [" in out.out and "internal error" not in out.err
    rep = json.loads(
        (tmp_path / "r.json").read_text(), parse_constant=lambda c: pytest.fail(f"JSON has {c}")
    )
    assert rep["quantities"]["attention_svm"]["status"] == "optimal"


@pytest.fixture(scope="module")
def failing_report(files):
    """Theorem 10 on a W(0) outside the region (mu = 0.05): init_in_region FAILS; long names and messages."""
    from theorems.catalogue import check_theorem

    W0 = np.load(files / "W0.npy")
    return check_theorem(
        "10", AttentionProblem.load(files / "prob.npz"), p="1.5", W0=W0, mu="0.05", R="0"
    )


@pytest.mark.parametrize("width", [60, 80, 200])
def test_table_fits_the_width_and_cuts_nothing(failing_report, width):
    from experiments.commands.check import format_table

    text = format_table(failing_report, width=width)
    lines = text.splitlines()
    assert max(len(ln) for ln in lines) <= width, [ln for ln in lines if len(ln) > width]
    assert "..." not in text
    words = " ".join(text.split())
    for h in failing_report.hypotheses:  # every message is there in full (wrapped, never cut)
        assert " ".join(h.message.split()) in words or all(w in words for w in h.message.split())
        assert h.name in text


@pytest.mark.parametrize("width", [60, 80, 200])
def test_a_fails_row_names_the_relation_that_failed(failing_report, width):
    from experiments.commands.check import format_table

    assert failing_report.hypothesis("init_in_region").verdict.value == "fails"
    words = " ".join(format_table(failing_report, width=width).split())
    assert re.search(
        r"D_psi\(Wbar_mm, Wbar\(0\)\): needs <= 0\.05, is (\[[^]]+\]|\S+): fails \(interval\)",
        words,
    ), words


@pytest.mark.parametrize("columns", ["60", "200"])
def test_the_command_follows_COLUMNS(files, capsys, monkeypatch, columns):
    monkeypatch.setenv("COLUMNS", columns)
    assert (
        main(
            [
                "check",
                str(files / "prob.npz"),
                "--p",
                "1.5",
                "--init",
                str(files / "W0.npy"),
                "--lr",
                "0.1",
                "--steps",
                "3",
                "--mu",
                "0.05",
                "--R",
                "0",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert max(len(ln) for ln in out.splitlines()) <= int(columns)
    assert "needs <= 0.05" in " ".join(out.split()) and "..." not in out


def test_normalized_path_checks_the_step_rule_it_ran(files, tmp_path):
    out = tmp_path / "r.json"
    argv = [
        "check",
        str(files / "prob.npz"),
        "--p",
        "1.75",
        "--init",
        str(files / "W0.npy"),
        "--lr",
        "0.1",
        "--steps",
        "30",
        "--normalize",
        "--json",
        str(out),
    ]
    assert main(argv) == 0
    rep = json.loads(out.read_text())
    step = {h["name"]: h for h in rep["hypotheses"]}["step_size_convex_along_path"]
    assert step["evidence"][0]["data"]["step_rule"] == "normalized"
    assert (
        rep["quantities"]["step_rule"] == "normalized"
        and rep["inputs"]["step_rule"] == "normalized"
    )
    assert rep["path_notes"]["step_rule"] == "normalized"


def test_train_path_normalized_is_the_paths_engine_path(files):
    """check --normalize and paths --normalize train the same algorithm: same iterates from the same W(0)."""
    from experiments.commands.check import train_path
    from experiments.paths.engine import run_paths

    prob = AttentionProblem.load(files / "prob.npz")
    W0 = np.load(files / "W0.npy")
    traj, etas = train_path(prob, W0, lr=0.1, p=Fraction(7, 4), steps=50, normalize=True)
    res = run_paths(
        [prob],
        data_index=[0],
        p=[Fraction(7, 4)],
        lr=[0.1],
        steps=[50],
        W0=W0[None],
        normalize=True,
        device="cpu",
        records=4,
        progress=False,
    )
    assert np.allclose(traj[-1], res.W_final[0], rtol=1e-9, atol=1e-12)
    assert len(etas) == 50 and all(e > 0 for e in etas)
    plain = train_path(prob, W0, lr=0.1, p=Fraction(7, 4), steps=50)
    assert plain[1] is None and not np.allclose(plain[0][-1], traj[-1])


def test_training_ending_at_non_locally_optimal_tokens_is_said(tmp_path, capsys):
    synthetic_problem(n=3, T=4, d=3, seed=2).save(tmp_path / "p.npz")
    np.save(tmp_path / "w.npy", np.random.default_rng(0).standard_normal((3, 3)))
    out = tmp_path / "r.json"
    argv = [
        "check",
        str(tmp_path / "p.npz"),
        "--p",
        "1.75",
        "--init",
        str(tmp_path / "w.npy"),
        "--lr",
        "0.1",
        "--steps",
        "40",
        "--normalize",
        "--alpha",
        "locally-optimal-from-training",
        "--json",
        str(out),
    ]
    assert main(argv) == 0
    text = " ".join(capsys.readouterr().out.split())
    rep = json.loads(out.read_text())
    assert {h["name"]: h["verdict"] for h in rep["hypotheses"]}["tokens_locally_optimal"] == "fails"
    assert "training ended at a non-locally-optimal selection" in text
    assert rep["path_notes"]["training_ended_non_locally_optimal"] is True


def test_check_on_a_paths_run_trajectory(tmp_path, capsys):
    run = tmp_path / "run"
    assert (
        main(
            [
                "paths",
                "--trials",
                "1",
                "--p",
                "1.75,2",
                "--steps",
                "30",
                "--lr",
                "0.1",
                "--normalize",
                "--records",
                "8",
                "--progress",
                "off",
                "--no-certify",
                "-o",
                str(run),
            ]
        )
        == 0
    )
    capsys.readouterr()
    out = tmp_path / "r.json"
    assert (
        main(
            [
                "check",
                "--run",
                str(run),
                "--trajectory",
                "1",
                "--alpha",
                "locally-optimal-from-training",
                "--json",
                str(out),
            ]
        )
        == 0
    )
    text = " ".join(capsys.readouterr().out.split())
    rep = json.loads(out.read_text())
    assert (
        rep["inputs"]["p"] == "2/1"
        and rep["inputs"]["step_rule"] == "normalized"
        and rep["inputs"]["steps"] == 30
    )
    notes = rep["path_notes"]["run"]
    assert notes["trajectory"] == 1 and notes["same_final_tokens"] is True
    assert notes["relative_distance_W_final"] < 1e-9
    assert f"trajectory 1 of {run}: the re-run ends at the run's final tokens" in text
    a = np.load(run / "arrays.npz")
    assert rep["quantities"]["alpha"] == [int(x) for x in a["alpha_final"][1]]


@pytest.mark.parametrize(
    "extra,match",
    [
        (["--trajectory", "5"], r"--trajectory 5 is not in the run; give an index from 0 to 1"),
        (["--trajectory", "0", "--lr", "0.1"], "drop --lr"),
        (["--trajectory", "0", "--normalize"], "drop --normalize"),
    ],
)
def test_bad_run_options_are_one_line(tmp_path, capsys, extra, match):
    run = tmp_path / "run"
    assert (
        main(
            [
                "paths",
                "--trials",
                "1",
                "--p",
                "1.75,2",
                "--steps",
                "10",
                "--lr",
                "0.1",
                "--records",
                "4",
                "--progress",
                "off",
                "--no-certify",
                "-o",
                str(run),
            ]
        )
        == 0
    )
    capsys.readouterr()
    assert main(["check", "--run", str(run)] + extra) == 1
    err = capsys.readouterr().err
    assert re.search(match, err) and err.count("\n") == 1


@pytest.mark.parametrize("name", ["arrays.npz", "summary.json"])
def test_json_never_overwrites_a_file_of_the_run_it_reads(tmp_path, capsys, name):
    """``--json RUN/arrays.npz`` named the run's own data: refused before any work, the run intact."""
    run = tmp_path / "run"
    assert (
        main(
            [
                "paths",
                "--trials",
                "1",
                "--p",
                "2",
                "--steps",
                "10",
                "--lr",
                "0.1",
                "--records",
                "4",
                "--progress",
                "off",
                "--no-certify",
                "-o",
                str(run),
            ]
        )
        == 0
    )
    capsys.readouterr()
    before = (run / name).read_bytes()
    assert main(["check", "--run", str(run), "--trajectory", "0", "--json", str(run / name)]) == 1
    err = capsys.readouterr().err
    assert re.search(
        rf"--json '.*{name}' is the --run directory's {name}; inputs are never overwritten", err
    )
    assert err.count("\n") == 1 and (run / name).read_bytes() == before


def test_run_that_is_not_a_paths_run(tmp_path, capsys):
    assert main(["check", "--run", str(tmp_path), "--trajectory", "0"]) == 1
    assert "no summary.json" in capsys.readouterr().err


def test_long_alpha_and_provenance_fit_the_terminal(tmp_path, capsys, monkeypatch):
    """40 examples: alpha is summarized (first items and a count) in every line, provenance is short
    key=value lines never cut; the JSON keeps the full list."""
    import dataclasses

    monkeypatch.setenv("COLUMNS", "100")
    sha = "ab" * 32
    pr = dataclasses.replace(
        synthetic_problem(n=40, T=6, d=6, seed=3),
        provenance={"source": {"name": "rotten_tomatoes", "sha256": sha}, "ids": list(range(40))},
    )
    pr.save(tmp_path / "big.npz")
    out = tmp_path / "r.json"
    assert (
        main(["check", str(tmp_path / "big.npz"), "--p", "2", "--alpha", "opt", "--json", str(out)])
        == 0
    )
    text = capsys.readouterr().out
    assert all(len(ln) <= 100 for ln in text.splitlines())
    assert text.startswith("problem: n=40 T=6 d=6\n  provenance:\n")
    assert (
        f"    source.sha256={sha}\n" in text
        and "    ids=[0, 1, 2, 3, 4, 5, 6, 7, ...] (40 entries)\n" in text
    )
    assert "(40 entries)" in text and not re.search(
        r"\[(\d+, ){9,}", text
    )  # no list of more than 8 items
    rep = json.loads(out.read_text())
    assert len(rep["quantities"]["alpha"]) == 40
