"""``mdcert verify PROBLEM CERT``: exit 0 when every claim is verified, 1 with the first failing claim."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from certify import synthetic_problem
from certify.svm import certify_svm
from experiments.cli.main import main


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("verify")
    pr = synthetic_problem()
    pr.save(d / "problem.npz")
    (d / "cert.json").write_text(json.dumps(certify_svm(pr, "3", digits=30).to_json()))
    return d


def test_verify_accepts(files, capsys):
    assert main(["verify", str(files / "problem.npz"), str(files / "cert.json"), "-v"]) == 0
    out = capsys.readouterr().out
    assert "verified: all" in out and "ok   opt_lower" in out


def test_verify_rejects_corrupted_bound(files, tmp_path, capsys):
    data = json.loads((files / "cert.json").read_text())
    num, den = data["opt_lower"].split("/")
    data["opt_lower"] = f"{int(num) * 2}/{den}"
    (tmp_path / "bad.json").write_text(json.dumps(data))
    assert main(["verify", str(files / "problem.npz"), str(tmp_path / "bad.json")]) == 1
    assert "NOT verified: opt_lower" in capsys.readouterr().err


def test_verify_rejects_other_data_and_p(files, tmp_path, capsys):
    pr = synthetic_problem(seed=1)
    pr.save(tmp_path / "other.npz")
    assert main(["verify", str(tmp_path / "other.npz"), str(files / "cert.json")]) == 1
    assert "data_hash" in capsys.readouterr().err
    assert main(["verify", str(files / "problem.npz"), str(files / "cert.json"), "--p", "2"]) == 1
    assert "p:" in capsys.readouterr().err


@pytest.mark.parametrize("content, pattern", [("{not json", "not valid JSON"), ('{"status": "weird"}', "unknown certificate status"),
                                              ("[1]", "JSON object")])
def test_verify_bad_certificate_file(files, tmp_path, capsys, content, pattern):
    (tmp_path / "c.json").write_text(content)
    assert main(["verify", str(files / "problem.npz"), str(tmp_path / "c.json")]) == 1
    err = capsys.readouterr().err
    assert pattern in err and err.strip().count("\n") == 0


def test_verify_missing_certificate(files, tmp_path, capsys):
    assert main(["verify", str(files / "problem.npz"), str(tmp_path / "none.json")]) == 1
    assert "not found" in capsys.readouterr().err


def test_verify_imports_no_solver_and_no_torch(files):
    code = ("import sys; from experiments.cli.main import main; "
            f"rc = main(['verify', {str(files / 'problem.npz')!r}, {str(files / 'cert.json')!r}]); "
            "bad = [m for m in ('torch', 'cvxpy', 'scipy.optimize', 'certify.svm', 'certify.refine') if m in sys.modules]; "
            "assert not bad, bad; sys.exit(rc)")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr + res.stdout


def test_verify_alpha_option_and_stored_alpha_note(files, tmp_path, capsys):
    pr = synthetic_problem()
    opt = list(pr.optimal_indices().indices)
    other = [(a + 1) % pr.T for a in opt]
    pr.with_alpha(other).save(tmp_path / "stored.npz")
    problem, cert = str(files / "problem.npz"), str(files / "cert.json")  # cert: alpha = opt
    assert main(["verify", problem, cert, "--alpha", "opt"]) == 0
    assert main(["verify", problem, cert, "--alpha", ",".join(map(str, opt))]) == 0
    capsys.readouterr()
    assert main(["verify", problem, cert, "--alpha", ",".join(map(str, other))]) == 1
    assert f"alpha: certificate alpha = {opt}, expected {other}" in capsys.readouterr().err
    # the problem file stores another alpha: still verified (the claims hold), with a note
    assert main(["verify", str(tmp_path / "stored.npz"), cert]) == 0
    captured = capsys.readouterr()
    assert "verified: all" in captured.out and f"stores alpha = {other}" in captured.err
    assert main(["verify", str(tmp_path / "stored.npz"), cert, "--alpha", "problem"]) == 1
    assert "NOT verified: alpha" in capsys.readouterr().err
    assert main(["verify", problem, cert, "--alpha", "problem"]) == 1
    err = capsys.readouterr().err
    assert "stores no alpha" in err and err.strip().count("\n") == 0
    assert main(["verify", problem, cert, "--alpha", "0,x"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("mdcert: error: invalid alpha") or "invalid alpha" in err.splitlines()[0]
    assert "NOT verified" not in err and err.strip().count("\n") == 0
