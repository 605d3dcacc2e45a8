"""``mdcert sweep``: bad SPECs refused before any job, the single commands' certificates, failures
recorded while the others go on, Ctrl-C keeps what finished (exit 130), a rerun resumes."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from experiments.cli.main import main

from tests.experiments.sweep.helpers import (
    CERTIFY_SPEC,
    assert_complete,
    make_problems,
    single_certificate,
    strip_timing,
    sweep_certificates,
    write_spec,
)

ROOT = Path(__file__).resolve().parents[3]

G = 'kind = "certify"\n[grid]\nproblem = ["data/p1.npz"]\n'
BAD_SPECS = [
    (
        'kind = "certify"\nworkers = 2\n[grid]\nproblem = ["data/p1.npz"]\np = ["2"]\n',
        r"unknown key 'workers'",
    ),
    (G + 'p = ["2"]\nsteps = [10]\n', r"unknown key grid\.steps for kind 'certify'"),
    ('kind = "certify"\n[grid]\n', r"empty grid"),
    (G + "p = []\n", r"empty grid: grid\.p is an empty list"),
    (
        'kind = "certify"\n[grid]\nproblem = ["data/p1.npz", "data/gone.npz"]\np = ["2"]\n',
        r"'data/gone\.npz' not found",
    ),
    (G + 'p = ["1.75", "1"]\n', r"greater than 1|> 1"),
    (G + 'p = ["0.9"]\n', r"greater than 1|> 1"),
    (G + 'p = ["2"]\ndigits = [30.5]\n', r"grid\.digits: 30\.5 is not an integer"),
    (G + "p = [[2]]\n", r"is not a decimal"),
]


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    d = tmp_path_factory.mktemp("sweep_cli")
    make_problems(d)
    return d


def _listing(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


@pytest.mark.parametrize("text, pattern", BAD_SPECS)
def test_bad_spec_exits_1_with_one_line_before_any_job(folder, text, pattern, capsys) -> None:
    spec = write_spec(folder, text, name="bad.toml")
    before = _listing(folder)
    assert main(["sweep", str(spec), "-o", str(folder / "out"), "--progress", "off"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert (
        len(err) == 1
        and err[0].startswith("mdcert sweep: error: SPEC bad.toml: ")
        and re.search(pattern, err[0])
    ), err
    assert _listing(folder) == before and not (folder / "out").exists()


PATHS_G = 'kind = "paths"\n[grid]\nproblem = ["data/p1.npz"]\np = ["2"]\n'
PATHS_REFUSED = [  # values `mdcert paths` itself refuses: refused before the run, not in every job (exit 4)
    (
        PATHS_G + 'steps = ["abc"]\n',
        r"grid point \(.*steps=abc\): mdcert paths refuses it: --steps must be integers",
    ),
    (
        PATHS_G + 'steps = ["1000000000000"]\n',
        r"mdcert paths refuses it: --steps must be at most 1e\+09",
    ),
    (PATHS_G + "steps = [1e12]\n", r"grid\.steps: 1000000000000\.0 is not a string"),
    (
        PATHS_G + 'steps = ["10"]\nlr = ["0.1", "-0.1"]\n',
        r"lr=-0\.1\): mdcert paths refuses it: --lr values must be finite and > 0",
    ),
    (
        PATHS_G + 'lr = ["0.1"]\n',
        r"--steps has 3 values but --p has 1",
    ),  # the command's defaults, too
]


@pytest.mark.parametrize("text, pattern", PATHS_REFUSED)
def test_a_paths_value_the_command_refuses_is_refused_before_the_run(
    folder, text, pattern, capsys
) -> None:
    test_bad_spec_exits_1_with_one_line_before_any_job(folder, text, pattern, capsys)


def test_paths_on_cuda_without_cuda_is_refused_before_the_run(folder, capsys) -> None:
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    test_bad_spec_exits_1_with_one_line_before_any_job(
        folder,
        PATHS_G + 'steps = ["10"]\ndevice = ["cpu", "cuda"]\n',
        r"device=cuda\): mdcert paths refuses it: device 'cuda' requested but CUDA is not available",
        capsys,
    )


@pytest.mark.parametrize(
    "argv, pattern",
    [
        (["--workers", "0"], r"invalid --workers 0"),
        (["--retries=-1"], r"invalid --retries -1"),
        (["--address", "auto"], r"--address is for --engine ray"),
        (["--engine", "ray", "--address", "http://x"], r"invalid --address"),
        (["-o", "{d}/data/p1.npz"], r"exists and is not a directory"),
        (["-o", "{d}/data"], r"not a sweep's"),
        (["-o", ""], r"-o is empty"),
    ],
)
def test_bad_options_exit_1(folder, argv, pattern, capsys) -> None:
    spec = write_spec(folder, CERTIFY_SPEC)
    argv = [a.replace("{d}", str(folder)) for a in argv]
    args = (
        ["sweep", str(spec), "-o", str(folder / "o2"), *argv]
        if "-o" not in argv
        else ["sweep", str(spec), *argv]
    )
    before = _listing(folder)
    assert main(args) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert (
        len(err) == 1 and err[0].startswith("mdcert sweep: error: ") and re.search(pattern, err[0])
    ), err
    assert _listing(folder) == before and not (folder / "o2").exists()


def test_no_traceback_reaches_the_terminal(folder) -> None:
    spec = write_spec(folder, G + 'p = ["1"]\n', name="bad.toml")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-m", "experiments.cli", "sweep", str(spec), "-o", str(folder / "o3")],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert proc.stderr.count("\n") == 1 and "p" in proc.stderr


def test_local_sweep_equals_the_single_commands_and_a_rerun_runs_nothing(
    folder, tmp_path, capsys
) -> None:
    spec = write_spec(folder, CERTIFY_SPEC)
    out = tmp_path / "sweep"
    assert main(["sweep", str(spec), "-o", str(out), "--workers", "2", "--progress", "off"]) == 0
    assert "0 already finished, 8 done and 0 failed" in capsys.readouterr().out
    got = sweep_certificates(out)
    for path in sorted((folder / "data").glob("p*.npz")):
        for p in ("1.75", "2"):
            want = single_certificate(path, p, tmp_path / "single.json")
            assert strip_timing(got[(f"data/{path.name}", p)]) == strip_timing(want)
    assert_complete(out, 8)
    summary = (out / "summary.md").read_text()
    assert (
        "| p | jobs | optimal | infeasible | no_verified_result | failed |" in summary
        and "| 1.75 | 4 | 4 |" in summary
    )
    assert (out / "verdicts.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    index = (out / "index.jsonl").read_bytes()
    assert main(["sweep", str(spec), "-o", str(out), "--progress", "off"]) == 0
    assert "8 already finished, 0 done and 0 failed" in capsys.readouterr().out
    assert (out / "index.jsonl").read_bytes() == index  # nothing ran, nothing appended


def test_failed_jobs_are_recorded_and_the_others_go_on(folder, tmp_path, capsys) -> None:
    spec = write_spec(
        folder,
        'kind = "certify"\n[grid]\nproblem = ["data/p1.npz", "data/p2.npz"]\n'
        'p = ["2"]\nalpha = ["opt", "0,1"]\n',
        name="mixed.toml",
    )
    out = tmp_path / "sweep"
    assert main(["sweep", str(spec), "-o", str(out), "--workers", "2", "--progress", "off"]) == 4
    assert "2 done and 2 failed" in capsys.readouterr().out
    lines = [json.loads(t) for t in (out / "index.jsonl").read_text().splitlines()]
    failed = [ln for ln in lines if ln["status"] == "failed"]
    assert len(failed) == 2 and all(
        ln["labels"]["alpha"] == "0,1" and ln["exit_code"] == 1 for ln in failed
    )
    assert all(
        ln["error"].startswith("mdcert certify: error:")
        and "one token index per example" in ln["error"]
        for ln in failed
    )
    summary = (out / "summary.md").read_text()
    assert "## Failed jobs (first 2)" in summary and "one token index per example" in summary
    assert main(["sweep", str(spec), "-o", str(out), "--workers", "1", "--progress", "off"]) == 4
    assert (
        "2 already finished, 0 done and 2 failed" in capsys.readouterr().out
    )  # failed ones are retried


def test_yaml_spec(folder, tmp_path, capsys) -> None:
    spec = write_spec(
        folder,
        "kind: synth\ngrid:\n  seed: {start: 0, stop: 3}\n  n: [2]\n  T: [3]\n  d: [2]\n",
        name="s.yaml",
    )
    out = tmp_path / "synth"
    assert main(["sweep", str(spec), "-o", str(out), "--workers", "1", "--progress", "off"]) == 0
    records = assert_complete(out, 3)
    assert sorted(r["labels"]["seed"] for r in records) == ["0", "1", "2"]
    assert all(
        (out / "records" / r["key"][:2] / r["key"] / "problem.npz").is_file() for r in records
    )
    assert not (out / "verdicts.png").exists()  # synth has no verdicts


def test_ctrl_c_keeps_finished_records_exit_130_and_a_rerun_resumes(tmp_path) -> None:
    make_problems(tmp_path, seeds=range(8), n=20, T=10, d=8)  # a few tenths of a second each
    spec = write_spec(
        tmp_path, 'kind = "certify"\n[grid]\nproblem = ["data/*.npz"]\np = ["1.75"]\n'
    )
    out = tmp_path / "sweep"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [
        sys.executable,
        "-m",
        "experiments.cli",
        "sweep",
        str(spec),
        "-o",
        str(out),
        "--workers",
        "1",
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            index = out / "index.jsonl"
            if index.is_file() and index.read_text().count("\n") >= 1:
                break
            time.sleep(0.02)
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    if proc.returncode == 0:
        pytest.skip("the sweep finished before the interrupt arrived")
    assert proc.returncode == 130, stderr
    err = stderr.strip().splitlines()
    assert len(err) == 1 and re.match(
        r"mdcert sweep: interrupted: \d of 8 job\(s\) recorded and kept in .*rerun", err[0]
    )
    kept = int(re.search(r"interrupted: (\d)", err[0]).group(1))
    assert 1 <= kept < 8
    records = assert_complete(out, kept)  # whole records only, none half-written
    assert all(r["status"] == "done" for r in records)
    rerun = subprocess.run(
        cmd + ["--progress", "off"], capture_output=True, text=True, env=env, timeout=300
    )
    assert rerun.returncode == 0, rerun.stderr
    assert f"{kept} already finished, {8 - kept} done and 0 failed" in rerun.stdout
    assert_complete(out, 8)


def test_engine_ray_without_ray_is_one_line(folder, tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    spec = write_spec(folder, CERTIFY_SPEC)
    assert (
        main(
            ["sweep", str(spec), "-o", str(tmp_path / "s"), "--engine", "ray", "--progress", "off"]
        )
        == 1
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "mdcert sweep: error: --engine ray needs Ray: pip install 'mdcert[ray]' (or use --engine local)"
    ]
    assert not list((tmp_path / "s").glob("records/*/*"))  # no job ran
