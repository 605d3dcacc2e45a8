"""``mdcert certify``: exit 0 certified, 3 infeasible (certificate written), 2 no verified result, 1 bad input."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from certify import AttentionProblem, Certificate, check_certificate, synthetic_problem
from experiments.cli.main import main


@pytest.fixture(scope="module")
def problem_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("data") / "problem.npz"
    synthetic_problem().save(path)
    return path


def test_certify_writes_a_verified_certificate(problem_file, tmp_path, capsys):
    out = tmp_path / "cert.json"
    assert (
        main(["certify", str(problem_file), "--p", "1.75", "--digits", "40", "-o", str(out)]) == 0
    )
    text = capsys.readouterr().out
    assert "status: optimal" in text and "OPT in [" in text and "undecided" in text
    data = json.loads(out.read_text())
    assert data["status"] == "optimal" and data["p"] == "7/4" and data["svm"] == "attention"
    assert check_certificate(AttentionProblem.load(problem_file), data).ok
    assert not list(tmp_path.glob("*.tmp"))


def test_certify_decoder_with_alpha(problem_file, tmp_path, capsys):
    out = tmp_path / "c.json"
    assert (
        main(
            [
                "certify",
                str(problem_file),
                "--p",
                "2",
                "--svm",
                "decoder",
                "--alpha",
                "0,1,2,3,4,5",
                "-o",
                str(out),
            ]
        )
        == 0
    )
    cert = Certificate.from_json(json.loads(out.read_text()))
    assert cert.svm == "decoder" and cert.alpha == (0, 1, 2, 3, 4, 5)
    assert "exact rational KKT" in capsys.readouterr().out


def test_certify_infeasible_exit_3(tmp_path, capsys):
    X = np.zeros((2, 2, 2))
    X[0, 0], X[1, 0] = [1.0, 2.0], [-2.0, -4.0]
    pr = AttentionProblem(X, np.ones(2), np.ones((2, 2)), np.ones(2), alpha=[0, 0])
    pr.save(tmp_path / "inf.json")
    out = tmp_path / "cert.json"
    assert (
        main(
            [
                "certify",
                str(tmp_path / "inf.json"),
                "--p",
                "1.5",
                "--svm",
                "decoder",
                "-o",
                str(out),
            ]
        )
        == 3
    )
    assert "infeasible" in capsys.readouterr().out
    data = json.loads(out.read_text())
    assert data["status"] == "infeasible" and data["gordan"] is not None


def test_no_verified_result_exit_2(problem_file, tmp_path, capsys, monkeypatch):
    import certify.solve as solve_mod

    monkeypatch.setattr(solve_mod, "ball_bounds", lambda *a, **k: None)  # nothing can be proven
    monkeypatch.setattr(solve_mod, "exact_kkt_p2", lambda *a, **k: None)
    out = tmp_path / "c.json"
    assert main(["certify", str(problem_file), "--p", "1.5", "--digits", "10", "-o", str(out)]) == 2
    assert "nothing proven" in capsys.readouterr().out
    assert json.loads(out.read_text())["status"] == "no_verified_result"


def test_memory_budget_too_small_one_line_exit_2(problem_file, tmp_path, capsys):
    out = tmp_path / "c.json"
    assert (
        main(["certify", str(problem_file), "--p", "2", "--memory-budget", "64K", "-o", str(out)])
        == 2
    )
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1 and "too large for the memory budget" in captured.err
    assert "Traceback" not in captured.err and "MemoryError" not in captured.err
    data = json.loads(out.read_text())
    assert data["status"] == "no_verified_result" and data["info"]["memory_budget_bytes"] == 65536
    assert check_certificate(AttentionProblem.load(problem_file), data).ok


@pytest.mark.parametrize(
    "argv, pattern",
    [
        (["--p", "1"], "p > 1"),
        (["--p", "x"], "invalid p"),
        (["--p", "2", "--alpha", "0,1"], "one token index per example"),
        (["--p", "2", "--digits", "0"], "invalid digits"),
        (["--p", "2", "-o", "cert.txt"], "must be a .json file"),
        (["--p", "2", "--memory-budget", "lots"], "invalid --memory-budget"),
        (["--p", "2", "--memory-budget", "0"], "invalid --memory-budget"),
    ],
)
def test_bad_input_one_line_exit_1(problem_file, tmp_path, capsys, argv, pattern):
    argv = [a if a != "cert.txt" else str(tmp_path / "cert.txt") for a in argv]
    assert main(["certify", str(problem_file), *argv]) == 1
    err = capsys.readouterr().err
    assert pattern in err and err.strip().count("\n") == 0
    assert not list(tmp_path.iterdir())


def test_missing_problem_file(tmp_path, capsys):
    assert main(["certify", str(tmp_path / "nope.npz"), "--p", "2"]) == 1
    assert "not found" in capsys.readouterr().err


def test_command_does_not_import_torch(problem_file, tmp_path):
    code = (
        "import sys; from experiments.cli.main import main; "
        f"rc = main(['certify', {str(problem_file)!r}, '--p', '1.5', '--digits', '10']); "
        "assert 'torch' not in sys.modules, 'torch imported'; sys.exit(rc)"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr


# ------------------------------------------------------------------------------------------ --export-w
def test_export_w_and_direction(problem_file, tmp_path, capsys):
    from certify import certified_solution

    W, U, out = tmp_path / "W.npy", tmp_path / "U.npy", tmp_path / "c.json"
    assert (
        main(
            [
                "certify",
                str(problem_file),
                "--p",
                "1.75",
                "--digits",
                "30",
                "-o",
                str(out),
                "--export-w",
                str(W),
                "--export-direction",
                str(U),
            ]
        )
        == 0
    )
    text = capsys.readouterr().out
    assert "row-major" in text and "||W - W_mm||_p <=" in text and "wrote" in text
    sol = certified_solution(json.loads(out.read_text()))
    assert np.array_equal(np.load(W), sol.point) and np.load(W).shape == (10, 10)
    assert np.array_equal(np.load(U), sol.direction)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["U.npy", "W.npy", "c.json"]


def test_export_w_decoder_is_a_vector(problem_file, tmp_path, capsys):
    v = tmp_path / "v.npy"
    assert (
        main(["certify", str(problem_file), "--p", "3", "--svm", "decoder", "--export-w", str(v)])
        == 0
    )
    assert (
        np.load(v).shape == (10,)
        and "v = certified feasible point of the decoder SVM" in capsys.readouterr().out
    )


def test_export_not_written_when_infeasible(tmp_path, capsys):
    X = np.zeros((2, 2, 2))
    X[0, 0], X[1, 0] = [1.0, 2.0], [-2.0, -4.0]
    AttentionProblem(X, np.ones(2), np.ones((2, 2)), np.ones(2), alpha=[0, 0]).save(
        tmp_path / "inf.json"
    )
    assert (
        main(
            [
                "certify",
                str(tmp_path / "inf.json"),
                "--p",
                "1.5",
                "--svm",
                "decoder",
                "--export-w",
                str(tmp_path / "v.npy"),
            ]
        )
        == 3
    )
    assert "not written" in capsys.readouterr().err and not (tmp_path / "v.npy").exists()


@pytest.mark.parametrize(
    "argv, pattern",
    [
        (["--export-w", "{d}/W.txt"], r"--export-w .*W\.txt': use a \.npy file name"),
        (["--export-w", "{d}/missing/W.npy"], "does not exist; create it first"),
        (["--export-w", "{d}/dir.npy"], "is a directory"),
        (["--export-w", "{d}/link.npy"], "is the problem file; inputs are never overwritten"),
        (["-o", "{d}/link.json"], "is the problem file; inputs are never overwritten"),
        (["--export-w", "{d}/W.npy", "--export-direction", "{d}/./W.npy"], "name the same file"),
        (["--export-direction", "{d}/U.json"], r"use a \.npy file name"),
    ],
)
def test_export_bad_paths_one_line_exit_1(tmp_path, capsys, argv, pattern):
    d = tmp_path / "out"
    d.mkdir()
    (d / "dir.npy").mkdir()
    src = tmp_path / "problem.json"
    synthetic_problem(n=2, T=3, d=2, seed=1).save(src)
    before = src.read_bytes()
    os.symlink(src, d / "link.npy")
    os.symlink(src, d / "link.json")
    argv = [a.format(d=d) for a in argv]
    assert main(["certify", str(src), "--p", "2", *argv]) == 1
    err = capsys.readouterr().err
    assert re.search(pattern, err) and err.strip().count("\n") == 0 and "Traceback" not in err
    assert src.read_bytes() == before
    assert sorted(p.name for p in d.iterdir()) == ["dir.npy", "link.json", "link.npy"]


def test_verify_exports_only_a_verified_certificate(problem_file, tmp_path, capsys):
    cert = tmp_path / "c.json"
    assert main(["certify", str(problem_file), "--p", "2", "-o", str(cert)]) == 0
    assert (
        main(["verify", str(problem_file), str(cert), "--export-w", str(tmp_path / "W.npy")]) == 0
    )
    assert np.load(tmp_path / "W.npy").shape == (10, 10)
    bad = json.loads(cert.read_text())
    bad["opt_lower"] = bad["opt_upper"].replace("/", "0/", 1)  # 10x the upper bound: a false claim
    (tmp_path / "bad.json").write_text(json.dumps(bad))
    assert (
        main(
            [
                "verify",
                str(problem_file),
                str(tmp_path / "bad.json"),
                "--export-w",
                str(tmp_path / "B.npy"),
            ]
        )
        == 1
    )
    assert not (tmp_path / "B.npy").exists()
    assert (
        main(["verify", str(problem_file), str(cert), "--export-w", str(tmp_path / "c.npy")]) == 0
    )
    capsys.readouterr()
    os.symlink(cert, tmp_path / "cl.npy")
    assert (
        main(["verify", str(problem_file), str(cert), "--export-w", str(tmp_path / "cl.npy")]) == 1
    )
    assert "is the certificate" in capsys.readouterr().err


def _reported_digits(out: str) -> int:
    import re

    return int(re.search(r"relative width [^,]+, (\d+) digits\)", out).group(1))


@pytest.mark.parametrize("digits", [330, 400, 1000])
def test_digits_beyond_float64_are_reached_and_reported_exactly(
    problem_file, tmp_path, capsys, digits
):
    """Issue 11 item 3: more than 323 digits (the float64 floor) are reached, and the digits printed
    are exactly those of the certified width (10**-(k+1) < width <= 10**-k)."""
    from fractions import Fraction

    out = tmp_path / "c.json"
    assert (
        main(
            [
                "certify",
                str(problem_file),
                "--p",
                "1.75",
                "--alpha",
                "opt",
                "--digits",
                str(digits),
                "-o",
                str(out),
            ]
        )
        == 0
    )
    k = _reported_digits(capsys.readouterr().out)
    cert = Certificate.from_json(json.loads(out.read_text()))
    rw = cert.relative_width()
    assert k >= digits and rw <= Fraction(10) ** -k and rw > Fraction(10) ** -(k + 1)
    assert check_certificate(AttentionProblem.load(problem_file), json.loads(out.read_text())).ok


def test_digits_not_reached_exit_2_on_stderr(problem_file, tmp_path, capsys, monkeypatch):
    import certify.solve as solve_mod

    monkeypatch.setattr(
        solve_mod, "target_bits", lambda p, digits: 64
    )  # ~19 digits, then the time limit stops
    out = tmp_path / "c.json"
    assert (
        main(
            [
                "certify",
                str(problem_file),
                "--p",
                "1.75",
                "--digits",
                "60",
                "--time-limit",
                "0",
                "-o",
                str(out),
            ]
        )
        == 2
    )
    cap = capsys.readouterr()
    k = _reported_digits(cap.out)
    assert k < 60 and cap.err.count("\n") == 1
    assert "requested 60 digits were not reached" in cap.err and f"{k} digits" in cap.err
    assert json.loads(out.read_text())["status"] == "optimal"  # what is proven is still written


def test_export_refused_when_the_checker_rejects_the_solve(
    problem_file, tmp_path, capsys, monkeypatch
):
    """A solver bug that claims too much: nothing is exported, and nothing else is written either."""
    from dataclasses import replace
    from fractions import Fraction

    import certify.svm as svm_mod

    real = svm_mod.certify_svm

    # a distance bound of 0 without an exact KKT certificate: a false claim the export would pass on
    def fake(*a, **k):
        return replace(real(*a, **k), distance_upper=Fraction(0))

    import certify

    monkeypatch.setattr(svm_mod, "certify_svm", fake)
    monkeypatch.setattr(certify, "certify_svm", fake)  # the lazily resolved package attribute too
    out, W = tmp_path / "c.json", tmp_path / "W.npy"
    assert (
        main(
            [
                "certify",
                str(problem_file),
                "--p",
                "1.75",
                "--digits",
                "20",
                "-o",
                str(out),
                "--export-w",
                str(W),
            ]
        )
        == 1
    )
    err = capsys.readouterr().err
    assert (
        "does not verify against this problem (distance_upper" in err
        and err.strip().count("\n") == 0
    )
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("scale, exponent", [(1e-150, "e+150"), (1e150, "e-150")])
def test_opt_beyond_the_decimal_range_is_printed_with_lower_case_exponents(
    tmp_path, capsys, scale, exponent
):
    """Data scaled by 1e-150 has OPT ~ 4e150: printed '4.12976...E+150' (issue 13: lower-case exponents)."""
    from fractions import Fraction

    pr = synthetic_problem(n=3, T=4, d=3, seed=5)
    AttentionProblem(pr.X * scale, pr.y, pr.z, pr.v).save(tmp_path / "p.npz")
    assert (
        main(
            [
                "certify",
                str(tmp_path / "p.npz"),
                "--p",
                "2",
                "--digits",
                "30",
                "-o",
                str(tmp_path / "c.json"),
            ]
        )
        == 0
    )
    line = next(ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("OPT in ["))
    assert "E" not in line and exponent in line, line
    lo = Fraction(re.search(r"\[([^,]+),", line).group(1))
    cert = Certificate.from_json(json.loads((tmp_path / "c.json").read_text()))
    assert abs(lo - cert.opt_lower) <= cert.opt_lower * Fraction(
        1, 10**20
    )  # the printed value is OPT's


def test_a_long_alpha_and_provenance_are_summarized(tmp_path, capsys):
    """40 examples: the alpha line shows the first items and a count (the certificate keeps them all);
    provenance is printed as key=value lines."""
    import dataclasses

    pr = dataclasses.replace(
        synthetic_problem(n=40, T=6, d=6, seed=3),
        provenance={"source": {"name": "rotten_tomatoes"}, "ids": list(range(40))},
    )
    pr.save(tmp_path / "big.npz")
    out = tmp_path / "c.json"
    assert main(
        ["certify", str(tmp_path / "big.npz"), "--p", "2", "--alpha", "opt", "-o", str(out)]
    ) in (0, 3)
    text = capsys.readouterr().out
    assert "alpha = [4, 4, 3, 1, 5, 0, 3, 4, ...] (40 entries)" in text
    assert (
        "  provenance:\n    ids=[0, 1, 2, 3, 4, 5, 6, 7, ...] (40 entries)\n    source.name=rotten_tomatoes"
        in text
    )
    assert len(json.loads(out.read_text())["alpha"]) == 40


@pytest.fixture(scope="module")
def points_file(tmp_path_factory):
    from certify.synth import classification_problem

    path = tmp_path_factory.mktemp("points") / "points.npz"
    classification_problem(n=80, d=4, seed=3).save(path)
    return path


def test_certify_classification_summarizes_and_exports(points_file, tmp_path, capsys):
    from certify.classification import load_problem

    out, w = tmp_path / "cert.json", tmp_path / "w.npy"
    assert (
        main(
            [
                "certify",
                str(points_file),
                "--p",
                "1.5",
                "--digits",
                "30",
                "-o",
                str(out),
                "--export-w",
                str(w),
            ]
        )
        == 0
    )
    text = capsys.readouterr().out
    assert (
        "l_p max-margin (binary, 4 variables, 80 constraint rows)" in text and "0 undecided" in text
    )
    assert "support examples (a tight row): [" in text and "status: optimal" in text
    data = json.loads(out.read_text())
    assert data["svm"] == "binary" and data["alpha"] == [] and data["d"] == 4
    prob = load_problem(points_file)
    assert check_certificate(prob, data).ok
    assert np.load(w).shape == (4,) and np.all(prob.y * (prob.X @ np.load(w)) >= 1 - 1e-9)


def test_certify_classification_duplicate_is_not_separable(tmp_path, capsys):
    from certify.classification import ClassificationProblem

    path = tmp_path / "dup.json"
    ClassificationProblem(np.array([[1.0, 2.0], [0.5, -1.0], [1.0, 2.0]]), [1.0, -1.0, -1.0]).save(
        path
    )
    out = tmp_path / "c.json"
    assert main(["certify", str(path), "--p", "2", "-o", str(out)]) == 3
    text = capsys.readouterr().out
    assert "not separable" in text and "examples 0 and 2 are the same point" in text
    assert json.loads(out.read_text())["status"] == "infeasible"


@pytest.mark.parametrize(
    ("data", "pattern"),
    [
        (
            {"kind": "classification", "X": [[1.0], [2.0]], "y": [0, 3], "classes": 3},
            r"outside the declared classes 0\.\.2",
        ),
        ({"kind": "classification", "X": [[1.0], [2.0]], "y": [0, 2]}, r"class 1 has no example"),
        ({"kind": "classification", "X": [[]], "y": [1]}, r"n >= 1 and d >= 1; got \(1, 0\)"),
        (
            {"kind": "classification", "X": [[1.0], [float("nan")]], "y": [1, -1]},
            r"X contains NaN or Inf",
        ),
    ],
)
def test_certify_classification_bad_input_one_line(tmp_path, capsys, data, pattern):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    out = tmp_path / "c.json"
    assert main(["certify", str(path), "--p", "2", "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert re.search(pattern, err) and err.strip().count("\n") == 0
    assert not out.exists()


def test_certify_classification_refuses_attention_options(points_file, capsys):
    assert main(["certify", str(points_file), "--p", "2", "--svm", "decoder"]) == 1
    assert "--svm is for attention problems" in capsys.readouterr().err
