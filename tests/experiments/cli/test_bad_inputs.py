"""Every ``mdcert`` command against hostile input: one line on stderr (``mdcert CMD: error: ...``),
exit code 1, no traceback, no "internal error", and nothing written.

The table runs in-process through `experiments.cli.main.main` (fast); a few cases run as subprocesses to
prove that no traceback reaches the terminal.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from certify import AttentionProblem, synthetic_problem
from experiments.cli.main import main


# ------------------------------------------------------------------------------------------ fixtures
@pytest.fixture(scope="module")
def files(tmp_path_factory) -> Path:
    """A directory of good and bad problem files, certificates, W0 files and run directories."""
    d = tmp_path_factory.mktemp("bad_inputs")
    pr = synthetic_problem(n=2, T=3, d=2, seed=1)
    pr.save(d / "good.npz")
    good = {"X": pr.X, "y": pr.y, "z": pr.z, "v": pr.v}

    def npz(name: str, **change) -> None:
        arrays = {**good, **change}
        np.savez(d / name, **{k: v for k, v in arrays.items() if v is not None})

    npz("nokeys.npz", X=None)
    npz("str.npz", X=np.full(pr.X.shape, "a"))
    npz("complex.npz", X=pr.X + 1j)
    npz("zerod.npz", X=np.array(3.0))
    bad = pr.X.copy()
    bad[0, 0, 0] = np.nan
    npz("nan.npz", X=bad)
    bad = pr.X.copy()
    bad[1, 2, 1] = -np.inf
    npz("inf.npz", X=bad)
    npz("y0.npz", y=np.array([1.0, 0.0]))
    npz("y2.npz", y=np.array([2.0, -1.0]))
    npz("yshape.npz", y=np.array([1.0, -1.0, 1.0]))
    npz("T1.npz", X=pr.X[:, :1])
    npz("n0.npz", X=pr.X[:0], y=pr.y[:0], z=pr.z[:0])
    npz("alpha_str.npz", alpha=np.array(["a", "b"]))
    npz("alpha_range.npz", alpha=np.array([0, 7]))
    with open(d / "object.npz", "wb") as fh:
        np.savez(fh, X=np.array([pr.X, 1], dtype=object), y=pr.y, z=pr.z, v=pr.v)
    np.save(d / "npy_named.npy", pr.X)
    os.replace(d / "npy_named.npy", d / "npy_named.npz")
    (d / "empty.npz").write_bytes(b"")
    (d / "corrupt.npz").write_bytes(b"PK\x03\x04garbage")
    (d / "corrupt.json").write_text('{"X": [1, 2')
    (d / "list.json").write_text("[1, 2, 3]")
    (d / "ragged.json").write_text(json.dumps({"X": [[[1, 2], [3]]], "y": [1], "z": [[1, 2]], "v": [1, 2]}))
    data = pr.to_dict()
    data["alpha"] = {"x": 1}
    (d / "alpha_dict.json").write_text(json.dumps(data))
    data = pr.to_dict()
    (d / "nan.json").write_text(json.dumps(data).replace(repr(data["X"][0][0][0]), "NaN", 1))
    (d / "prob.txt").write_text("hello")
    (d / "adir.npz").mkdir()
    (d / "afile").write_text("x")
    X = pr.X.copy()
    X[:, 0] = X[:, 1] = 2.0 * pr.y[:, None] * pr.v  # two tokens with the (equal) largest score
    AttentionProblem(X, pr.y, pr.z, pr.v).save(d / "tie.npz")
    # certificates
    assert main(["certify", str(d / "good.npz"), "--p", "2", "--digits", "10", "-o", str(d / "cert.json")]) == 0
    text = (d / "cert.json").read_text()
    (d / "cert_trunc.json").write_text(text[: len(text) // 2])
    (d / "cert_list.json").write_text("[1, 2]")
    (d / "cert_bin.json").write_bytes(b"\xff\xfe\x00")
    synthetic_problem(n=2, T=3, d=2, seed=2).save(d / "other.npz")
    # W0 files
    np.save(d / "W0.npy", np.eye(2))
    np.save(d / "W0_shape.npy", np.eye(3))
    W = np.eye(2)
    W[0, 1] = np.nan
    np.save(d / "W0_nan.npy", W)
    np.save(d / "W0_complex.npy", np.eye(2) * (1 + 1j))
    np.save(d / "W0_str.npy", np.full((2, 2), "a"))
    np.save(d / "W0_zero.npy", np.zeros((2, 2)))
    np.savez(d / "W0_two.npz", a=np.eye(2), b=np.eye(2))
    (d / "W0.txt").write_text("1 0\n0 1\n")
    # run directories for plot
    for name, summary in (("run_nosummary", None), ("run_corrupt", "{\"kind\": "), ("run_list", "[1]"),
                          ("run_kind", '{"kind": "zzz"}'), ("run_paths_empty", '{"kind": "paths"}'),
                          ("run_nonempty", '{"kind": "paths"}')):
        (d / name).mkdir()
        if summary is not None:
            (d / name / "summary.json").write_text(summary)
    return d


def _run(argv: list[str], capsys) -> tuple[int, str, str]:
    try:
        rc = main(argv)
    except SystemExit as exc:  # argparse errors
        rc = exc.code
    out = capsys.readouterr()
    return rc, out.out, out.err


def _listing(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def _assert_one_line_error(rc, err: str, cmd: str, match: str) -> None:
    assert rc == 1, (rc, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"mdcert {cmd}: error: "), err
    assert "Traceback" not in err and "internal error" not in err
    assert re.search(match, lines[0]), (match, lines[0])


# ------------------------------------------------------------------------------------------ the table
P = "{d}/good.npz"
CASES = [
    # synth: seed, output paths (checked before anything is generated)
    (["synth", "--seed=-1", "-o", "{o}/x.npz"], r"--seed -1"),
    (["synth", "--T", "1", "-o", "{o}/x.npz"], r"invalid T: 1"),
    (["synth", "--n", "99999999999999999999", "-o", "{o}/x.npz"], r"invalid n: .*at most"),
    (["synth", "-o", "{o}/x.txt"], r"\.npz or \.json"),
    (["synth", "-o", "{o}/nodir/x.npz"], r"does not exist"),
    (["synth", "-o", "{d}/adir.npz"], r"is a directory"),
    (["synth", "-o", "{d}/afile/x.npz"], r"not a directory"),
    # problem files (shared loader; through certify)
    (["certify", "{d}/missing.npz", "--p", "2"], r"not found.*mdcert synth"),
    (["certify", "{d}/adir.npz", "--p", "2"], r"is a directory"),
    (["certify", "{d}/prob.txt", "--p", "2"], r"unknown problem format"),
    (["certify", "{d}/nokeys.npz", "--p", "2"], r"lacks X"),
    (["certify", "{d}/str.npz", "--p", "2"], r"X must be a numeric array.*<U1"),
    (["certify", "{d}/complex.npz", "--p", "2"], r"X must be a numeric array.*complex"),
    (["certify", "{d}/object.npz", "--p", "2"], r"cannot read problem.*[Oo]bject"),
    (["certify", "{d}/zerod.npz", "--p", "2"], r"X must have 3 dimensions"),
    (["certify", "{d}/nan.npz", "--p", "2"], r"X contains NaN or Inf"),
    (["certify", "{d}/inf.npz", "--p", "2"], r"X contains NaN or Inf \(first at index \(1, 2, 1\)\)"),
    (["certify", "{d}/y0.npz", "--p", "2"], r"labels must be -1 or \+1; y\[1\] = 0\.0"),
    (["certify", "{d}/y2.npz", "--p", "2"], r"labels must be -1 or \+1; y\[0\] = 2\.0"),
    (["certify", "{d}/yshape.npz", "--p", "2"], r"y must have shape \(2,\)"),
    (["certify", "{d}/T1.npz", "--p", "2"], r"T >= 2"),
    (["certify", "{d}/n0.npz", "--p", "2"], r"n >= 1"),
    (["certify", "{d}/alpha_str.npz", "--p", "2"], r"alpha must be 'opt' or a list of 2 integer"),
    (["certify", "{d}/alpha_range.npz", "--p", "2"], r"alpha\[1\] = 7 is not a token index in 0\.\.2"),
    (["certify", "{d}/alpha_dict.json", "--p", "2"], r"alpha must be 'opt' or a list"),
    (["certify", "{d}/npy_named.npz", "--p", "2"], r"not a \.npz archive"),
    (["certify", "{d}/empty.npz", "--p", "2"], r"not a \.npz archive"),
    (["certify", "{d}/corrupt.npz", "--p", "2"], r"cannot read problem.*zip"),
    (["certify", "{d}/corrupt.json", "--p", "2"], r"not valid JSON"),
    (["certify", "{d}/list.json", "--p", "2"], r"JSON object with keys X, y, z, v"),
    (["certify", "{d}/ragged.json", "--p", "2"], r"ragged"),
    (["certify", "{d}/nan.json", "--p", "2"], r"X contains NaN or Inf"),
    # p, digits, alpha, time limit, output
    *[(["certify", P, "--p", p], match) for p, match in [
        ("1", r"needs p > 1"), ("0.5", r"needs p > 1"), ("inf", r"inf is not supported"), ("nan", r"not a number"),
        ("abc", r"e\.g\. 1\.75"), ("1e400000", r"e\.g\. 1\.75"), ("1/0", r"e\.g\. 1\.75"), ("", r"e\.g\. 1\.75"),
        ("1_5", r"e\.g\. 1\.75"), ("\uff12", r"e\.g\. 1\.75")]],
    (["certify", P, "--p", "-2"], r"needs p > 1"),
    (["certify", P, "--p", "2", "--alpha", "-1,0"], r"expected one argument.*--opt=-1"),
    (["certify", P, "--p=-2"], r"needs p > 1"),
    (["certify", P, "--p", "2", "--digits", "0"], r"invalid digits 0"),
    (["certify", P, "--p", "2", "--digits", "99999"], r"invalid digits"),
    (["certify", P, "--p", "2", "--digits", "abc"], r"invalid int value"),
    (["certify", P, "--p", "2", "--alpha", "junk"], r"invalid alpha 'junk'"),
    (["certify", P, "--p", "2", "--alpha", "0"], r"one token index per example \(2\), got 1: \[0\]"),
    (["certify", P, "--p", "2", "--alpha", "0,,1"], r"invalid alpha"),
    (["certify", P, "--p", "2", "--alpha", "0.5,1"], r"invalid alpha"),
    (["certify", "{d}/tie.npz", "--p", "2"], r"tied in example"),
    (["certify", P, "--p", "2", "--time-limit", "nan"], r"--time-limit"),
    (["certify", P, "--p", "2", "-o", "{o}/c.txt"], r"must be a \.json file"),
    (["certify", P, "--p", "2", "-o", "{o}/nodir/c.json"], r"does not exist"),
    (["certify", P, "--p", "2", "-o", "{d}/afile/c.json"], r"not a directory"),
    # verify: certificates that are not certificates
    (["verify", P, "{d}/missing.json"], r"certificate file not found"),
    (["verify", P, "{d}/adir.npz"], r"is a directory"),
    (["verify", P, "{d}/cert_trunc.json"], r"not valid JSON"),
    (["verify", P, "{d}/cert_bin.json"], r"not valid JSON"),
    (["verify", P, "{d}/cert_list.json"], r"must be a JSON object"),
    (["verify", P, "{d}/cert.json", "--p", "junk"], r"invalid p"),
    # check: theorem, p, path options, W0 files, loss, output
    (["check", P, "--p", "2", "--theorem", "99"], r"unknown theorem"),
    (["check", P, "--p", "1"], r"--p > 1"),
    (["check", P, "--p", "2", "--steps", "0"], r"--steps 0"),
    (["check", P, "--p", "2", "--steps", "99999999999999999999"], r"at most 1e9"),
    (["check", P, "--p", "2", "--init", "{d}/W0.npy"], r"--init and --lr together"),
    (["check", P, "--p", "2", "--mu", "junk"], r"invalid --mu"),
    (["check", P, "--p", "2", "--R=-1"], r"invalid --R.*>= 0"),
    (["check", P, "--p", "2", "--init", "{d}/W0.npy", "--lr", "0"], r"must be > 0"),
    (["check", P, "--p", "2", "--init", "{d}/W0.npy", "--lr", "nan"], r"invalid --lr"),
    (["check", P, "--p", "2", "--init", "{d}/W0.npy", "--lr", "1e400"], r"invalid --lr"),
    (["check", P, "--p", "2", "--init", "{d}/missing.npy", "--lr", "0.1"], r"initialization file not found"),
    (["check", P, "--p", "2", "--init", "{d}/adir.npz", "--lr", "0.1"], r"is a directory"),
    (["check", P, "--p", "2", "--init", "{d}/W0_shape.npy", "--lr", "0.1"], r"shape \(2, 2\)"),
    (["check", P, "--p", "2", "--init", "{d}/W0_nan.npy", "--lr", "0.1"], r"NaN or Inf"),
    (["check", P, "--p", "2", "--init", "{d}/W0_complex.npy", "--lr", "0.1"], r"real numeric.*complex"),
    (["check", P, "--p", "2", "--init", "{d}/W0_str.npy", "--lr", "0.1"], r"real numeric"),
    (["check", P, "--p", "2", "--init", "{d}/W0_zero.npy", "--lr", "0.1"], r"zero matrix"),
    (["check", P, "--p", "2", "--init", "{d}/W0_two.npz", "--lr", "0.1"], r"holds 2 arrays"),
    (["check", P, "--p", "2", "--init", "{d}/W0.txt", "--lr", "0.1"], r"not a NumPy \.npy file"),
    (["check", P, "--p", "2", "--init", "{d}/corrupt.npz", "--lr", "0.1"], r"cannot read --init"),
    (["check", P, "--p", "2", "--loss", "__import__('os').getcwd()"], r"function call .* not allowed"),
    (["check", P, "--p", "2", "--loss", "u.__class__"], r"Attribute is not allowed"),
    (["check", P, "--p", "2", "--loss", "9**9**9**9"], r"tower of powers"),
    (["check", P, "--p", "2", "--loss", "u^2"], r"write powers as \*\*"),
    (["check", P, "--p", "2", "--json", "{o}/nodir/r.json"], r"does not exist"),
    # paths: every option validated before torch runs
    *[(["paths", "--trials", "1", "--n", "2", "--T", "3", "--d", "2", "--workers", "0", "--progress", "off",
        *extra, "-o", "{o}/run"], match) for extra, match in [
        (["--p", "2,3", "--steps", "10,20,30"], r"--steps has 3 values but --p has 2"),
        (["--p", "2,2"], r"lists a value twice"),
        (["--p", "2,"], r"without empty items"),
        (["--trials", "0"], r"--trials must be >= 1"),
        (["--steps", "0"], r"--steps must be >= 1"),
        (["--steps", "99999999999999999999999"], r"--steps must be at most"),
        (["--steps", "1e3"], r"--steps must be integers"),
        (["--records", "0"], r"--records must be >= 2"),
        (["--trials", "99999999999999999999"], r"--trials must be at most"),
        (["--seed", "99999999999999999999"], r"--seed must be in"),
        (["--lr", "0"], r"finite and > 0"),
        (["--lr", "nan"], r"finite and > 0"),
        (["--lr", "1e400"], r"finite and > 0"),
        (["--device", "junk"], r"unknown device 'junk'"),
        (["--device", "cuda:x"], r"unknown device"),
        (["--tail", "nan"], r"--tail"),
        (["--seed=-1"], r"--seed must be in 0\.\.2\*\*63-1"),
        (["--workers=-1"], r"--workers must be >= 0"),
    ]],
    (["paths", "--trials", "1", "--steps", "5", "-o", "{d}/run_nonempty"], r"not empty; use --overwrite"),
    (["paths", "--trials", "1", "--steps", "5", "-o", "{d}/afile"], r"not a directory"),
    (["paths", "--trials", "1", "--steps", "5", "-o", "{d}/afile/run"], r"is a file, not a directory"),
    # regpath
    *[(["regpath", P, "--p", "2", *extra, "-o", "{o}/run"], match) for extra, match in [
        (["--radii", "junk"], r"START:STOP:COUNT"),
        (["--radii", "0:10:3"], r"finite and positive"),
        (["--radii", "10:1:3"], r"START 10\.0 > STOP 1\.0"),
        (["--radii", "1:10:99999999999"], r"at most"),
        (["--starts", "0", "--no-svm-start", "--no-dual-start"], r"no starts"),
        (["--starts", "99999999999"], r"--starts"),
        (["--seed=-1"], r"--seed -1"),
        (["--joint"], r"needs --r-of-R"),
        (["--joint", "--r-of-R", "__import__('os')"], r"function call"),
        (["--joint", "--r-of-R", "R.__class__"], r"Attribute is not allowed"),
        (["--joint", "--r-of-R", "log(R-1)", "--radii", "1:10:2"], r"cannot be evaluated at R = 1"),
        (["--joint", "--r-of-R", "R", "--md-steps", "99999999999999999999"], r"--md-steps"),
        (["--r-of-R", "R"], r"only used with --joint"),
        (["--p", "1"], r"--p > 1"),
    ]],
    (["regpath", "{d}/tie.npz", "--p", "2", "-o", "{o}/run"], r"tied in example"),
    (["regpath", "{d}/corrupt.npz", "--p", "2", "-o", "{o}/run"], r"cannot read problem"),
    (["regpath", P, "--p", "2", "-o", "{d}/run_nonempty"], r"not empty; use --overwrite"),
    (["regpath", P, "--p", "2", "-o", "{d}/afile/run"], r"is a file, not a directory"),
    # plot
    (["plot", "{d}/missing_run"], r"run directory not found"),
    (["plot", "{d}/run_nosummary"], r"has no summary\.json"),
    (["plot", "{d}/run_corrupt"], r"not valid JSON"),
    (["plot", "{d}/run_list"], r"not a JSON object"),
    (["plot", "{d}/run_kind"], r"has kind 'zzz'"),
    (["plot", "{d}/run_paths_empty"], r"per_p"),
    # demo: validated before anything is created
    (["demo", "--quick", "--p", "1", "-o", "{o}/demo"], r"--p > 1"),
    (["demo", "--quick", "--seed=-1", "-o", "{o}/demo"], r"--seed -1"),
    (["demo", "--quick", "-o", "{d}/afile"], r"already exists"),
]


@pytest.mark.parametrize("argv,match", CASES, ids=[" ".join(a)[:70] for a, _ in CASES])
def test_bad_input_is_one_line_and_writes_nothing(argv, match, files, tmp_path, capsys) -> None:
    before = _listing(files)
    argv = [a.replace("{d}", str(files)).replace("{o}", str(tmp_path)) for a in argv]
    rc, _, err = _run(argv, capsys)
    _assert_one_line_error(rc, err, argv[0], match)
    assert _listing(tmp_path) == set(), "a failed command left output behind"
    assert _listing(files) == before, "a failed command changed its inputs' directory"


def test_cuda_request_without_cuda_is_a_clear_error(files, tmp_path, capsys) -> None:
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("CUDA is available here")
    rc, _, err = _run(["paths", "--trials", "1", "--steps", "2", "--device", "cuda", "--workers", "0",
                       "--no-certify", "-o", str(tmp_path / "run")], capsys)
    _assert_one_line_error(rc, err, "paths", r"CUDA is not available; use --device cpu")
    assert _listing(tmp_path) == set()


def test_loss_expression_is_never_executed(files, tmp_path, capsys) -> None:
    marker = tmp_path / "PWNED"
    rc, _, err = _run(["check", str(files / "good.npz"), "--p", "2",
                       "--loss", f"__import__('pathlib').Path(r'{marker}').touch()"], capsys)
    _assert_one_line_error(rc, err, "check", r"not allowed")
    assert not marker.exists()


def test_certificate_for_other_data_is_not_verified(files, capsys) -> None:
    rc, _, err = _run(["verify", str(files / "other.npz"), str(files / "cert.json")], capsys)
    assert rc == 1 and "Traceback" not in err
    assert re.fullmatch(r"NOT verified: data_hash: .*other data\n", err)


def test_overflowing_mirror_step_is_a_clear_error(files, capsys) -> None:
    pytest.importorskip("torch")
    rc, _, err = _run(["check", str(files / "good.npz"), "--p", "1.01", "--init", str(files / "W0.npy"),
                       "--lr", "1e5", "--steps", "50", "--digits", "10"], capsys)
    _assert_one_line_error(rc, err, "check", r"overflow|non-finite|smaller lr|lower --lr")


def test_interrupted_command_leaves_nothing(monkeypatch, tmp_path, capsys) -> None:
    import certify.problem

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(certify.problem.np, "savez", interrupted)
    rc, _, err = _run(["synth", "-o", str(tmp_path / "p.npz")], capsys)
    assert rc == 130 and err.strip() == "mdcert synth: interrupted"
    assert _listing(tmp_path) == set()


def test_atomic_dir_and_file_clean_up_on_interrupt(tmp_path) -> None:
    from experiments.outputs import atomic_dir, write_text_atomic

    with pytest.raises(KeyboardInterrupt):
        with atomic_dir(tmp_path / "run", overwrite=False) as tmp:
            (tmp / "half.npz").write_text("half")
            raise KeyboardInterrupt
    assert _listing(tmp_path) == set()
    with atomic_dir(tmp_path / "run", overwrite=False) as tmp:
        (tmp / "summary.json").write_text("{}")
    assert _listing(tmp_path) == {"run", "run/summary.json"}
    target = tmp_path / "x.json"
    write_text_atomic(target, "1")
    assert target.read_text() == "1" and _listing(tmp_path) == {"run", "run/summary.json", "x.json"}


def test_unexpected_exception_is_one_line_internal_error(monkeypatch, tmp_path, capsys) -> None:
    import certify

    def boom(**kwargs):
        raise KeyError("surprise")

    monkeypatch.setattr(certify, "synthetic_problem", boom)
    rc, _, err = _run(["synth", "-o", str(tmp_path / "p.npz")], capsys)
    assert rc == 70 and len(err.strip().splitlines()) == 1
    assert err.startswith("mdcert synth: internal error: KeyError") and "MDCERT_TRACEBACK=1" in err


# ------------------------------------------------------------------------------------------ subprocess
@pytest.mark.parametrize("argv,match", [
    (["certify", "{d}/corrupt.npz", "--p", "2"], r"cannot read problem"),
    (["check", "{d}/good.npz", "--p", "2", "--loss", "exec('1')"], r"not allowed"),
    (["paths", "--steps", "99999999999999999999999", "-o", "{o}/run"], r"at most"),
    (["certify", "{d}/good.npz", "--p", "2", "--alpha", "-1,0"], r"expected one argument"),
])
def test_no_traceback_reaches_the_terminal(argv, match, files, tmp_path) -> None:
    argv = [a.replace("{d}", str(files)).replace("{o}", str(tmp_path)) for a in argv]
    out = subprocess.run([sys.executable, "-m", "experiments.cli", *argv], capture_output=True, text=True,
                         env={k: v for k, v in os.environ.items() if k != "MDCERT_TRACEBACK"})
    _assert_one_line_error(out.returncode, out.stderr, argv[0], match)
    assert _listing(tmp_path) == set()
