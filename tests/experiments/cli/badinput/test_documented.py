"""Hostile but valid command lines: the documented outcome (0 ran, 2 nothing verified), never a crash,
a hang or an internal error, at most one line on stderr, inputs byte-identical, outputs only where asked.
Plus the general guarantees: a loss is never executed, Ctrl-C leaves nothing, an internal error is one
line (exit 70), and no traceback reaches the terminal (subprocesses)."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from experiments.cli.main import COMMANDS
from tests.experiments.cli.badinput import (
    test_certify,
    test_check,
    test_data,
    test_info,
    test_input_files,
    test_paths,
    test_pgd,
    test_plot,
    test_problem_files,
    test_regpath,
    test_regression,
    test_study,
    test_synth_demo,
    test_verify,
)
from tests.experiments.cli.badinput.kit import digest, expand, listing, run_case

P = "{d}/good.npz"
INIT = ["--init", "{d}/W0.npy", "--lr", "0.1", "--steps", "3"]
PATHS = [
    "paths",
    "--trials",
    "1",
    "--n",
    "2",
    "--T",
    "3",
    "--d",
    "2",
    "--steps",
    "5",
    "--workers",
    "0",
    "--progress",
    "off",
    "--no-certify",
]
DOCUMENTED = [
    # (argv, exit code, regex the stdout must match)
    (["check", P, "--p", "2", "--loss", "-u + frac(u)"], 0, r"loss_admissible\s+FAILS"),
    (["check", P, "--p", "2", "--loss", "-u + sqrt(u)"], 0, r"loss_admissible\s+FAILS"),
    (["check", P, "--p", "2", "--loss", "-u + sin(u)/2"], 0, r"loss_admissible\s+UNDECIDED"),
    # issue 20: the loss as written (no parse-time simplification), the breaking point in the report
    (
        ["check", P, "--p", "2", "--loss=-exp(log(u))"],
        0,
        r"loss_admissible\s+FAILS[\s\S]*l\(0\) = zoo is not defined",
    ),
    (
        ["check", P, "--p", "2", "--loss=-u + log(u**2 + 1)"],
        0,
        r"loss_admissible\s+FAILS[\s\S]*l'\(1\) = 0 exactly",
    ),
    (["check", P, "--p", "1e400"], 0, r"Theorem 10"),
    (["check", P, "--p", "2", "--mu", "1e400", "--R", "0"], 0, r"init_in_region"),
    (
        ["check", "{d}/tiny.npz", "--p", "1.5", *INIT[:4], "--steps", "1", "--mu", "1", "--R", "0"],
        0,
        r"\|\|W_mm\|\|_p in \[\d",
    ),
    (
        ["check", P, "--p", "2", *INIT[:3], "1e299", "--steps", "3"],
        0,
        r"step_size_convex_along_path\s+FAILS",
    ),
    (["certify", P, "--p", "1e400", "-o", "{o}/c.json"], 2, r"status: no_verified_result"),
    (
        ["certify", P, "--p", "1.0000000000000000000000000001", "-o", "{o}/c.json"],
        2,
        r"no_verified_result",
    ),
    (["certify", "{d}/tiny.npz", "--p", "1.5", "--digits", "20"], 0, r"status: optimal"),
    (["certify", "{d}/huge_val.npz", "--p", "2", "--digits", "20"], 0, r"status: optimal"),
    (["certify", "{d}/f16.npz", "--p", "2", "--digits", "20"], 0, r"status: optimal"),
    ([*PATHS, "--p", "1025", "-o", "{o}/run"], 0, r"note: .*stopped early"),
    ([*PATHS, "--p", "1.0009765625", "-o", "{o}/run"], 0, r"paths: 1 trajectories"),
    ([*PATHS, "--lr", "1e300", "-o", "{o}/run"], 0, r"note: "),
    ([*PATHS, "--lr", "1e-300", "-o", "{o}/run"], 0, r"paths: 3 trajectories"),
    (
        ["regpath", P, "--p", "2", "--radii", "1e-300:1e300:3", "--starts", "1", "-o", "{o}/run"],
        0,
        r"wrote",
    ),
]


@pytest.mark.parametrize(
    "argv,rc,match", [pytest.param(*c, id=" ".join(c[0])[:80]) for c in DOCUMENTED]
)
def test_documented_outcome(argv, rc, match, files, tmp_path, capsys) -> None:
    before = digest(files)
    got, out, err, _ = run_case(expand(argv, files, tmp_path), capsys)
    assert got == rc, (got, err)
    assert (
        len(err.strip().splitlines()) <= 1
        and "Traceback" not in err
        and "internal error" not in err
    ), err
    assert re.search(match, out), out[-2000:]
    assert digest(files) == before


def test_every_command_has_a_table() -> None:
    tables = [
        test_certify.CASES,
        test_check.CASES,
        test_data.CASES,
        test_info.CASES,
        test_input_files.CASES,
        test_paths.CASES,
        test_pgd.CASES,
        test_plot.CASES,
        test_problem_files.CASES,
        test_regpath.CASES,
        test_regression.CASES,
        test_study.CASES,
        test_synth_demo.CASES,
        test_verify.CASES,
    ]
    counts = {
        name: sum(1 for t in tables for argv, *_ in t if argv[0] == name) for name in COMMANDS
    }
    assert all(k >= 8 for k in counts.values()), (
        counts
    )  # a new command (e.g. study) adds its table here


def test_loss_expression_is_never_executed(files, tmp_path, capsys) -> None:
    marker = tmp_path / "PWNED"
    rc, _, err, _ = run_case(
        [
            "check",
            str(files / "good.npz"),
            "--p",
            "2",
            "--loss",
            f"__import__('pathlib').Path(r'{marker}').touch()",
        ],
        capsys,
    )
    assert rc == 1 and "not allowed" in err and not marker.exists()


def test_overflowing_mirror_step_is_a_clear_error(files, capsys) -> None:
    pytest.importorskip("torch")
    rc, _, err, _ = run_case(
        [
            "check",
            str(files / "good.npz"),
            "--p",
            "1.01",
            "--init",
            str(files / "W0.npy"),
            "--lr",
            "1e5",
            "--steps",
            "50",
            "--digits",
            "10",
        ],
        capsys,
    )
    assert rc == 1 and len(err.strip().splitlines()) == 1
    assert re.search(r"overflow|non-finite|smaller lr|lower --lr", err)


def test_interrupted_command_leaves_nothing(monkeypatch, tmp_path, capsys) -> None:
    import certify.problem

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(certify.problem.np, "savez", interrupted)
    rc, _, err, _ = run_case(["synth", "-o", str(tmp_path / "p.npz")], capsys)
    assert rc == 130 and err.strip() == "mdcert synth: interrupted"
    assert listing(tmp_path) == set()


def test_atomic_dir_and_file_clean_up_on_interrupt(tmp_path) -> None:
    from experiments.runtime.outputs import run_dir, write_text_atomic

    with pytest.raises(KeyboardInterrupt):
        with run_dir(tmp_path / "run", kind="paths", overwrite=False) as tmp:
            (tmp / "half.npz").write_text("half")
            raise KeyboardInterrupt
    assert listing(tmp_path) == set()
    with run_dir(tmp_path / "run", kind="paths", overwrite=False) as tmp:
        (tmp / "summary.json").write_text("{}")
    assert listing(tmp_path) == {"run", "run/summary.json", "run/.mdcert-run"}
    target = tmp_path / "x.json"
    write_text_atomic(target, "1")
    assert target.read_text() == "1" and listing(tmp_path) == {
        "run",
        "run/summary.json",
        "run/.mdcert-run",
        "x.json",
    }


def test_unexpected_exception_is_one_line_internal_error(monkeypatch, tmp_path, capsys) -> None:
    import certify

    def boom(**kwargs):
        raise KeyError("surprise")

    monkeypatch.setattr(certify, "synthetic_problem", boom)
    rc, _, err, _ = run_case(["synth", "-o", str(tmp_path / "p.npz")], capsys)
    assert rc == 70 and len(err.strip().splitlines()) == 1
    assert err.startswith("mdcert synth: internal error: KeyError") and "MDCERT_TRACEBACK=1" in err


@pytest.mark.parametrize(
    "argv,match",
    [
        (["certify", "{d}/corrupt.npz", "--p", "2"], r"cannot read problem"),
        (["check", "{d}/good.npz", "--p", "2", "--loss", "exec('1')"], r"not allowed"),
        (["check", "{d}/good.npz", "--p", "2", "--loss", "exp(-u) + I"], r"the name 'I'"),
        (["paths", "--steps", "99999999999999999999999", "-o", "{o}/run"], r"at most"),
        (["certify", "{d}/good.npz", "--p", "2", "--alpha", "-1,0"], r"expected one argument"),
        (["plot", "{d}/run_deep"], r"nested too deeply"),
    ],
)
def test_no_traceback_reaches_the_terminal(argv, match, files, tmp_path) -> None:
    argv = expand(argv, files, tmp_path)
    out = subprocess.run(
        [sys.executable, "-m", "experiments.cli", *argv],
        capture_output=True,
        text=True,
        timeout=300,
        env={k: v for k, v in os.environ.items() if k != "MDCERT_TRACEBACK"},
    )
    lines = out.stderr.strip().splitlines()
    assert (
        out.returncode == 1
        and len(lines) == 1
        and lines[0].startswith(f"mdcert {argv[0]}: error: ")
    ), out.stderr
    assert re.search(match, lines[0]) and listing(tmp_path) == set()
