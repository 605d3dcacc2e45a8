"""``mdcert paths``: an end-to-end run, its outputs, reproducibility and one-line errors."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from fractions import Fraction

import numpy as np
import pytest

from certify import AttentionProblem, Certificate, check_certificate, synthetic_problem
from certify.lp import bregman, lp_normalize
from experiments.cli.main import main

SMALL = [
    "paths",
    "--trials",
    "2",
    "--p",
    "1.75,3",
    "--steps",
    "40,60",
    "--lr",
    "0.1",
    "--normalize",
    "--records",
    "12",
    "--progress",
    "off",
]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("paths") / "run"
    assert main(SMALL + ["--cross", "--workers", "0", "-o", str(out)]) == 0
    return out


def test_summary_keys_and_per_p(run_dir) -> None:
    s = json.loads((run_dir / "summary.json").read_text())
    assert s["kind"] == "paths" and s["device"] == "cpu" and s["elapsed_s"] > 0
    assert [e["p"] for e in s["per_p"]] == [1.75, 3.0]
    for e, K in zip(s["per_p"], (40, 60)):
        assert e["steps"] == K and e["trials"] == 2
        for key in ("bregman_final_mean", "bregman_final_std", "rate_fit"):
            assert key in e
        assert e["bregman_final_mean"] > 0
        assert e["direction_error_upper_max"] < 1e-12
        assert (
            e["rate_fit"]["verdict"] in ("log", "power", "inconclusive") and e["rate_fit"]["reason"]
        )
        assert e["rate_fit"]["state"] in ("asymptotic", "transient", "flat", "float_floor")
        assert e["norm_fit"]["law"] == "power" and e["norm_fit"]["expected"] == pytest.approx(
            1 / (e["p"] - 1)
        )
        assert e["norm_fit"]["bound_ratio_max"] <= 1 + 1e-9
        assert len(e["cross"]["q"]) == 2
    assert s["certificates"]["direction_error_upper_max"] < 1e-12
    assert not list(run_dir.parent.glob(".run.tmp-*"))  # written atomically, nothing left over


def test_bregman_is_against_the_certified_direction(run_dir) -> None:
    """Recompute D_psi(Wbar_mm, Wbar(final)) from the stored certificate of one trajectory."""
    a = np.load(run_dir / "arrays.npz")
    b = 1  # p = 7/4, trial 1
    assert a["p_exact"][b] == "7/4" and a["trial"][b] == 1
    pr = AttentionProblem(a["X"][1], a["y"][1], a["z"][1], a["v"][1])
    alpha = [int(x) for x in a["alpha_final"][b]]
    assert np.array_equal(alpha, np.argmax(a["attention_final"][b], axis=-1))
    certs = [json.loads(line) for line in gzip.open(run_dir / "certificates.jsonl.gz", "rt")]
    match = [
        c
        for c in certs
        if c["alpha"] == alpha and c["p"] == "7/4" and c["data_hash"] == pr.data_hash()
    ]
    assert len(match) == 1
    cert = Certificate.from_json(match[0]["certificate"])
    assert check_certificate(pr, cert).ok
    assert cert.direction_error_upper < Fraction(1, 10**12)
    last = int(np.sum(a["record_steps"][b] >= 0)) - 1
    D = bregman(
        lp_normalize(cert.direction_float(), "7/4"), lp_normalize(a["W"][b, last], "7/4"), "7/4"
    )
    assert a["bregman"][b, last] == pytest.approx(D, rel=1e-12)
    # the cross grid's diagonal is the trajectory's own curve
    assert np.allclose(a["cross"][b, 0], a["bregman"][b], equal_nan=True)


def test_same_seed_same_arrays(run_dir, tmp_path) -> None:
    out = tmp_path / "again"
    assert main(SMALL + ["--cross", "--workers", "0", "-o", str(out)]) == 0
    a, b = np.load(run_dir / "arrays.npz"), np.load(out / "arrays.npz")
    assert set(a.files) == set(b.files)
    for k in a.files:
        assert np.array_equal(a[k], b[k], equal_nan=a[k].dtype.kind == "f"), k


def test_data_is_the_seeded_synthetic_problem(run_dir) -> None:
    a = np.load(run_dir / "arrays.npz")
    pr = synthetic_problem(seed=1)
    assert np.array_equal(a["X"][1], pr.X) and np.array_equal(a["v"][1], pr.v)
    import torch

    W0 = torch.randn(
        (2, 1, 10, 10), generator=torch.Generator().manual_seed(0), dtype=torch.float64
    ).numpy()
    assert np.array_equal(a["W0"][0], W0[0, 0]) and np.array_equal(
        a["W0"][2], W0[0, 0]
    )  # shared across p


def test_worker_pool_gives_the_same_result(run_dir, tmp_path) -> None:
    out = tmp_path / "pool"
    argv = [
        "paths",
        "--trials",
        "2",
        "--p",
        "1.75,3",
        "--steps",
        "40,60",
        "--normalize",
        "--records",
        "12",
        "--cross",
        "--workers",
        "2",
        "--progress",
        "off",
        "-o",
        str(out),
    ]
    assert main(argv) == 0
    a, b = np.load(run_dir / "arrays.npz"), np.load(out / "arrays.npz")
    assert np.array_equal(a["bregman"], b["bregman"], equal_nan=True)
    assert json.loads((out / "summary.json").read_text())["certificates"]["workers"] == 2


def test_no_certify_and_plain_steps(tmp_path) -> None:
    out = tmp_path / "plain"
    assert (
        main(
            [
                "paths",
                "--trials",
                "2",
                "--p",
                "2",
                "--steps",
                "20",
                "--no-certify",
                "--progress",
                "off",
                "-o",
                str(out),
            ]
        )
        == 0
    )
    s = json.loads((out / "summary.json").read_text())
    assert s["per_p"][0]["bregman_final_mean"] is None and s["certificates"] is None
    assert not (out / "certificates.jsonl.gz").exists()


BAD = [
    (["--p", "1"], r"p > 1"),
    (["--p", "0.9,2"], r"p > 1"),
    (["--p", "1.75,2", "--steps", "10,20,30"], r"--steps has 3 values but --p has 2"),
    (["--p", "2,2"], r"twice"),
    (["--steps", "abc"], r"integers"),
    (["--lr", "-1"], r"finite and > 0"),
    (["--lr", "0.1,,0.2"], r"without empty"),
    (["--device", "tpu"], r"unknown device"),
    (["--trials", "0"], r"--trials must be >= 1"),
    (["--records", "1"], r"records"),
]


@pytest.mark.parametrize("extra, pattern", BAD)
def test_bad_configurations_exit_1_with_one_line(tmp_path, capsys, extra, pattern) -> None:
    out = tmp_path / "bad"
    argv = ["paths", "--trials", "1", "--p", "2", "--steps", "5"] + extra + ["-o", str(out)]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.strip().count("\n") == 0 and err.startswith("mdcert paths: error:")
    import re

    assert re.search(pattern, err), err
    assert not out.exists()


def test_cuda_requested_without_cuda(tmp_path, capsys) -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("CUDA is available")
    assert (
        main(
            [
                "paths",
                "--trials",
                "1",
                "--p",
                "2",
                "--steps",
                "5",
                "--device",
                "cuda",
                "-o",
                str(tmp_path / "x"),
            ]
        )
        == 1
    )
    assert "CUDA is not available" in capsys.readouterr().err


def test_existing_run_dir_needs_overwrite(run_dir, capsys) -> None:
    assert main(SMALL + ["-o", str(run_dir)]) == 1
    assert "--overwrite" in capsys.readouterr().err


def test_no_traceback_from_the_console_script(tmp_path) -> None:
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "experiments.cli",
            "paths",
            "--p",
            "1.75,2",
            "--steps",
            "1,2,3",
            "-o",
            str(tmp_path / "r"),
        ],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert out.stderr.strip().count("\n") == 0


def test_grid_of_inits_and_step_sizes(tmp_path) -> None:
    out = tmp_path / "grid"
    assert (
        main(
            [
                "paths",
                "--trials",
                "2",
                "--inits",
                "2",
                "--p",
                "1.5,3",
                "--steps",
                "10",
                "--lr",
                "0.1,0.05",
                "--no-certify",
                "--progress",
                "off",
                "-o",
                str(out),
            ]
        )
        == 0
    )
    s = json.loads((out / "summary.json").read_text())
    assert s["trajectories"] == 2 * 2 * 2 * 2
    assert [(e["p_text"], e["lr"]) for e in s["per_p"]] == [
        ("1.5", 0.1),
        ("1.5", 0.05),
        ("3", 0.1),
        ("3", 0.05),
    ]
    a = np.load(out / "arrays.npz")
    assert a["W"].shape[0] == 16 and set(a["init"]) == {0, 1}
    assert not np.array_equal(a["W0"][0], a["W0"][1])  # two initializations of trial 0


@pytest.mark.slow
def test_paper_setup_subset_converges_to_its_own_svm(tmp_path) -> None:
    """20 trials of the paper's study at full length: every SVM certified, D decays, and each path is
    closest to the SVM of its own exponent in the cross grid (slow: ~15-30 s)."""
    out = tmp_path / "paper"
    assert (
        main(
            [
                "paths",
                "--trials",
                "20",
                "--p",
                "1.75,2,3",
                "--steps",
                "1500,2000,20000",
                "--lr",
                "0.1",
                "--normalize",
                "--cross",
                "--progress",
                "off",
                "-o",
                str(out),
            ]
        )
        == 0
    )
    s = json.loads((out / "summary.json").read_text())
    assert s["certificates"]["status_counts"] == {"optimal": s["certificates"]["unique"]}
    a = np.load(out / "arrays.npz")
    for i, e in enumerate(s["per_p"]):
        assert e["svm_status_counts"] == {"optimal": 20}
        assert e["bregman_final_mean"] < 0.05
        assert int(np.argmin(e["cross"]["bregman_final_mean"])) == i
        rows = np.flatnonzero(a["p_exact"] == e["p_exact"])
        D = a["bregman"][rows]
        first = D[:, 1]
        last = np.array([d[np.isfinite(d)][-1] for d in D])
        assert np.median(last / first) < 0.1


def test_per_p_lines_name_the_reference_and_count_the_optimal_endings(tmp_path, capsys) -> None:
    out = tmp_path / "run"
    assert main(SMALL + ["--workers", "0", "-o", str(out)]) == 0
    text = " ".join(capsys.readouterr().out.split())  # wrapped to the terminal's width
    s = json.loads((out / "summary.json").read_text())
    for e in s["per_p"]:
        assert e["references"] == {
            "bregman": "SVM(alpha_final)",
            "bregman_opt": "SVM(opt)",
            "rate_fit": "SVM(alpha_final)",
            "rate_fit_opt": "SVM(opt)",
        }
        assert (
            e["ended_at_optimal_tokens"]
            == f"{e['alpha_final_is_opt']} of 2 trajectories ended at the optimal tokens"
        )
        assert e["ended_at_optimal_tokens"] in text
        assert e["references_coincide"] == (e["alpha_final_is_opt"] == 2)
        assert "bregman_final_mean" in e and "rate_fit" in e  # the old keys stay
    assert "D_final vs SVM(alpha_final)" in text and "D_final 1" not in text
    if not all(e["references_coincide"] for e in s["per_p"]):
        assert "; vs SVM(opt) " in text
    assert (
        "a verdict needs >= 8 trajectories (--inits K >= 8" in text
    )  # 2 trajectories cannot decide
    assert "nan" not in text and "+- 0.0e+00" not in text
