"""experiments.paths.inputs: ``mdcert paths PROBLEM ... [--init W0.npy | --init-std S --inits K]`` - given
problem files and initializations, recorded per trajectory; bad inputs one line, nothing written."""

from __future__ import annotations

import gzip
import json

import numpy as np
import pytest

from certify import AttentionProblem, Certificate, check_certificate, synthetic_problem
from experiments.cli.main import main
from experiments.paths.inputs import file_sha256, load_inits, load_problems

BASE = [
    "--p",
    "1.75,2",
    "--steps",
    "300",
    "--lr",
    "0.1",
    "--normalize",
    "--records",
    "10",
    "--progress",
    "off",
    "--workers",
    "0",
]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("inputs")
    a = synthetic_problem(seed=1, min_T=4)  # variable lengths, T = 8
    b = synthetic_problem(T=6, seed=2)  # full length, T = 6: padded to 8 in the run
    a.save(d / "a.npz")
    b.save(d / "b.json")
    a.padded(11).save(d / "a_padded.npz")
    np.save(d / "W0.npy", np.random.default_rng(0).standard_normal((2, 10, 10)))
    np.save(d / "W0_one.npy", np.random.default_rng(1).standard_normal((10, 10)))
    np.save(d / "W0_d3.npy", np.eye(3))
    W = np.eye(10)
    W[2, 2] = np.nan
    np.save(d / "W0_nan.npy", W)
    np.save(d / "W0_str.npy", np.full((10, 10), "a"))
    synthetic_problem(d=4, seed=3).save(d / "d4.npz")
    synthetic_problem(n=5, seed=3).save(d / "n5.npz")
    return d


@pytest.fixture(scope="module")
def run(files):
    out = files / "run"
    assert (
        main(
            [
                "paths",
                str(files / "a.npz"),
                str(files / "b.json"),
                "--init",
                str(files / "W0.npy"),
                *BASE,
                "-o",
                str(out),
            ]
        )
        == 0
    )
    return out


def test_run_records_each_problem_file_and_init(run, files) -> None:
    s = json.loads((run / "summary.json").read_text())
    recs = s["config"]["problems"]
    assert [r["path"] for r in recs] == [str(files / "a.npz"), str(files / "b.json")]
    assert [r["sha256"] for r in recs] == [
        file_sha256(files / "a.npz"),
        file_sha256(files / "b.json"),
    ]
    a, b = AttentionProblem.load(files / "a.npz"), AttentionProblem.load(files / "b.json")
    assert [r["data_hash"] for r in recs] == [a.data_hash(), b.data_hash()]
    assert (
        recs[0]["lengths"] == [int(k) for k in a.lengths]
        and recs[1]["lengths"] is None
        and recs[1]["T"] == 6
    )
    assert s["config"]["init"] == {
        "source": "file",
        "path": str(files / "W0.npy"),
        "sha256": file_sha256(files / "W0.npy"),
        "count": 2,
    }
    assert s["config"]["trials"] == 2 and s["config"]["inits"] == 2 and s["trajectories"] == 8
    arr = np.load(run / "arrays.npz")
    W0 = np.load(files / "W0.npy")
    for k in range(8):  # trajectory k: problem trial[k], init init[k]
        np.testing.assert_array_equal(arr["W0"][k], W0[arr["init"][k]])
    assert arr["lengths"].tolist() == [list(a.valid_lengths), [6] * 6]
    assert np.all(arr["attention_final"][arr["trial"] == 1][:, :, 6:] == 0)


def test_certificates_name_the_files_data(run, files) -> None:
    """Each problem gets its own certified SVM, about the data its file holds (not the padded copy)."""
    probs = {
        p.data_hash(): p
        for p in (AttentionProblem.load(files / "a.npz"), AttentionProblem.load(files / "b.json"))
    }
    certs = [json.loads(line) for line in gzip.open(run / "certificates.jsonl.gz", "rt")]
    assert {c["data_hash"] for c in certs} == set(probs)
    for c in certs:
        cert = Certificate.from_json(c["certificate"])
        assert check_certificate(probs[c["data_hash"]], cert).ok
    s = json.loads((run / "summary.json").read_text())
    assert all(e["svm_status_counts"] for e in s["per_p"])


def test_padded_file_gives_the_same_paths(run, files, tmp_path) -> None:
    out = tmp_path / "padded"
    assert (
        main(
            [
                "paths",
                str(files / "a_padded.npz"),
                "--init",
                str(files / "W0.npy"),
                *BASE,
                "-o",
                str(out),
            ]
        )
        == 0
    )
    x, y = np.load(run / "arrays.npz"), np.load(out / "arrays.npz")
    mine = x["trial"] == 0
    np.testing.assert_allclose(y["W_final"], x["W_final"][mine], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(y["bregman"], x["bregman"][mine], rtol=1e-9, atol=1e-15)
    assert np.array_equal(y["alpha_final"], x["alpha_final"][mine])


def test_random_inits_with_a_standard_deviation(files, tmp_path) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    args = [str(files / "b.json"), *BASE, "--no-certify", "--steps", "5"]
    assert main(["paths", *args, "--inits", "3", "-o", str(one)]) == 0
    assert main(["paths", *args, "--inits", "3", "--init-std", "0.25", "-o", str(two)]) == 0
    a, b = np.load(one / "arrays.npz"), np.load(two / "arrays.npz")
    np.testing.assert_array_equal(b["W0"], 0.25 * a["W0"])
    s = json.loads((two / "summary.json").read_text())
    assert s["config"]["init"]["source"] == "random" and s["config"]["init"]["std"] == 0.25
    assert s["config"]["init"]["count"] == 3 and s["trajectories"] == 6


def test_synthetic_trials_with_a_given_init(files, tmp_path) -> None:
    out = tmp_path / "syn"
    assert (
        main(
            [
                "paths",
                "--trials",
                "2",
                "--init",
                str(files / "W0_one.npy"),
                *BASE,
                "--no-certify",
                "--steps",
                "5",
                "-o",
                str(out),
            ]
        )
        == 0
    )
    a = np.load(out / "arrays.npz")
    assert np.all(a["W0"] == np.load(files / "W0_one.npy"))
    assert json.loads((out / "summary.json").read_text())["config"]["problems"] is None


@pytest.mark.parametrize(
    ("argv", "pattern"),
    [
        (["{d}/missing.npz"], r"problem file not found: .*missing\.npz"),
        (
            ["{d}/a.npz", "{d}/d4.npz"],
            r"problem files must share d: .* has d = 10, .*d4\.npz.* has d = 4",
        ),
        (["{d}/a.npz", "{d}/n5.npz"], r"must share n \(examples\)"),
        (
            ["{d}/a.npz", "--init", "{d}/W0_d3.npy"],
            r"--init .* has shape \(3, 3\), but the problems have d = 10",
        ),
        (["{d}/a.npz", "--init", "{d}/W0_nan.npy"], r"--init .* contains NaN or Inf"),
        (["{d}/a.npz", "--init", "{d}/W0_str.npy"], r"--init .* must hold real numbers"),
        (["{d}/a.npz", "--init", "{d}/nope.npy"], r"--init file not found"),
        (["{d}/a.npz", "--init", "{d}/a.npz"], r"give a \.npy file"),
        (
            ["{d}/a.npz", "--init", "{d}/W0.npy", "--init-std", "2"],
            r"cannot be combined with --init-std or --inits",
        ),
        (
            ["{d}/a.npz", "--init", "{d}/W0.npy", "--inits", "2"],
            r"cannot be combined with --init-std or --inits",
        ),
        (["{d}/a.npz", "--init-std", "0"], r"--init-std must be finite and > 0"),
        (["{d}/a.npz", "--init-std", "nan"], r"--init-std must be finite and > 0"),
        (["{d}/a.npz", "--trials", "3"], r"--trials describe synthetic trials"),
        (["{d}/a.npz", "--T", "9", "--d", "3"], r"--T, --d describe synthetic trials"),
    ],
)
def test_bad_inputs_exit_1_with_one_line_and_write_nothing(
    files, tmp_path, capsys, argv, pattern
) -> None:
    import re

    before = {p: p.read_bytes() for p in files.iterdir() if p.is_file()}
    out = tmp_path / "run"
    rc = main(["paths", *[a.replace("{d}", str(files)) for a in argv], *BASE, "-o", str(out)])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 1 and len(err) == 1 and re.search(pattern, err[0]), err
    assert not out.exists() and not list(tmp_path.iterdir())
    assert {p: p.read_bytes() for p in files.iterdir() if p.is_file()} == before


def test_run_directory_holding_an_input_is_refused(files, capsys) -> None:
    rc = main(["paths", str(files / "a.npz"), *BASE, "--overwrite", "-o", str(files)])
    assert rc == 1 and "contains the problem file" in capsys.readouterr().err
    assert (files / "a.npz").is_file()


def test_loaders_directly(files) -> None:
    probs, recs, loaded = load_problems([str(files / "b.json"), str(files / "a.npz")])
    assert [p.T for p in probs] == [8, 8] and [p.T for p in loaded] == [6, 8]
    assert probs[0].lengths.tolist() == [6] * 6 and recs[0]["T"] == 6
    assert load_inits(str(files / "W0_one.npy"), 10).shape == (1, 10, 10)
