"""``mdcert study``: a tiny end-to-end study, determinism, resumability, refused directories (experiments/cli/study.py;
the bad command lines: tests/experiments/cli/badinput/test_study.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from experiments.cli.main import main

TINY = ["--optimizers", "1.1,2", "--seeds", "2", "--train-limit", "100", "--test-limit", "40", "--width", "3",
        "--epochs", "1", "--finetune-steps", "1", "--progress", "off", "--workers", "1"]


def _results(root: Path) -> dict:
    """Every record's result without its wall-clock times."""
    def strip(x):
        if isinstance(x, dict):
            return {k: strip(v) for k, v in x.items() if "seconds" not in k}
        if isinstance(x, list):
            return [strip(v) for v in x]
        return x
    return {p.name: strip(json.loads(p.read_text())["result"]) for p in sorted((root / "runs").iterdir())}


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    root = tmp_path_factory.mktemp("study")
    assert main(["study", "sentiment", "--quick", *TINY, "-o", str(root / "a")]) == 0
    return root


def test_tiny_study_writes_the_report(tiny):
    a = tiny / "a"
    summary = json.loads((a / "summary.json").read_text())
    assert {"accuracy.png", "curves_size3.png", "weights_size3.png", "prune_size3.png", "causal_size3.png"} <= set(summary["figures"])
    for name in summary["figures"]:
        assert (a / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    size = summary["sizes"][0]
    assert set(size["optimizers"]) == {"p1.1", "p2"}
    assert size["optimizers"]["p1.1"]["minus_gd"]["n"] == 2
    report = (a / "report.md").read_text()
    assert "minus GD" in report and "Causal token tests" in report and "Magnitude pruning" in report
    for key in size["optimizers"]["p2"]["runs"]:
        assert key[:12] in report and (a / "runs" / f"{key}.json").is_file()
    assert len(list((a / "runs").iterdir())) == 8            # 2 x 2 tuning + 2 x 2 final


def test_second_run_does_no_work(tiny, capsys):
    before = {p.name: p.stat().st_mtime_ns for p in (tiny / "a" / "runs").iterdir()}
    assert main(["study", "sentiment", "--quick", *TINY, "-o", str(tiny / "a")]) == 0
    assert "0 run(s) trained" in capsys.readouterr().out
    assert {p.name: p.stat().st_mtime_ns for p in (tiny / "a" / "runs").iterdir()} == before


def test_deterministic_from_the_seed(tiny):
    assert main(["study", "sentiment", "--quick", *TINY, "-o", str(tiny / "b")]) == 0
    assert _results(tiny / "a") == _results(tiny / "b")


@pytest.mark.slow
def test_worker_processes_give_the_same_records(tiny):
    assert main(["study", "sentiment", "--quick", *TINY, "--workers", "2", "-o", str(tiny / "c")]) == 0
    assert _results(tiny / "a") == _results(tiny / "c")


def test_refuses_a_non_study_directory_and_another_kind(tiny, tmp_path, capsys):
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep")
    assert main(["study", "sentiment", "--quick", *TINY, "-o", str(tmp_path / "mine")]) == 1
    assert "holds no study.json" in capsys.readouterr().err
    assert [p.name for p in (tmp_path / "mine").iterdir()] == ["notes.txt"]
    assert main(["study", "vision", "--quick", "--progress", "off", "-o", str(tiny / "a")]) == 1
    assert "not 'vision'" in capsys.readouterr().err


def test_cuda_missing_is_one_line(tmp_path, capsys):
    import torch

    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present")
    assert main(["study", "vision", "--quick", "--device", "cuda", "-o", str(tmp_path / "o")]) == 1
    assert "no CUDA device" in capsys.readouterr().err and not (tmp_path / "o").exists()


def test_no_traceback_in_a_subprocess(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[3])}
    r = subprocess.run([sys.executable, "-m", "experiments.cli", "study", "sentiment", "--size", "7", "-o",
                        str(tmp_path / "o")], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 1 and len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["sentiment", "vision"])
def test_quick_finishes_within_90_seconds(kind, tmp_path):
    """The real --quick finishes; its CPU time in one process and one thread (the wall time of a quiet
    machine, which two workers would halve) is <= 90 s."""
    t0, c0 = time.perf_counter(), time.process_time()
    assert main(["study", kind, "--quick", "--progress", "off", "--workers", "1", "-o", str(tmp_path / kind)]) == 0
    cpu, wall = time.process_time() - c0, time.perf_counter() - t0
    assert cpu <= 90, f"--quick used {cpu:.1f} s of CPU ({wall:.1f} s wall at load {os.getloadavg()[0]:.1f})"
