"""benchmarks/paths_gpu.sh and benchmarks/paths_horizons.py: the GPU check's whole code path, run on the
CPU at tiny sizes (the real run is 300 trajectories x 10^6 steps on CUDA)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: the scripts run ``${PYTHON:-python}``: this interpreter, whether or not a venv is activated
ENV = {**os.environ, "PYTHON": sys.executable}


def test_gpu_script_runs_on_cpu_at_tiny_size(tmp_path) -> None:
    out = tmp_path / "run"
    proc = subprocess.run(
        [
            "bash",
            str(ROOT / "benchmarks" / "paths_gpu.sh"),
            "--device",
            "cpu",
            "--trials",
            "1",
            "--steps",
            "120",
            "--short",
            "20",
            "--records",
            "30",
            "--workers",
            "0",
            "--opt-size",
            "70000",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    # the optimizer step ran, in both dtypes
    assert "70,000 float32 parameters on cpu" in proc.stdout
    assert "70,000 float64 parameters on cpu" in proc.stdout
    assert "LpMD p=2 fused" in proc.stdout and "Adam fused" in proc.stdout
    assert (
        "3 trajectories x 20 steps on cpu" in proc.stderr and "projected 120 steps" in proc.stderr
    )
    assert "MEASURED 3 trajectories x 120 steps on cpu: training" in proc.stdout
    assert (
        proc.stdout.count("| **inconclusive** |")
        + proc.stdout.count("| **log** |")
        + proc.stdout.count("| **power** |")
        == 3
    )  # one row per p at the single horizon (120)
    rows = json.loads((out / "horizons.json").read_text())
    assert [r["p"] for r in rows] == ["1.75", "2", "3"] and {r["horizon"] for r in rows} == {120}
    assert all(r["verdict"] in ("log", "power", "inconclusive") and r["reason"] for r in rows)


def test_full_run_is_skipped_when_the_projection_is_too_long(tmp_path) -> None:
    proc = subprocess.run(
        [
            "bash",
            str(ROOT / "benchmarks" / "paths_gpu.sh"),
            "--device",
            "cpu",
            "--trials",
            "1",
            "--steps",
            "10000000",
            "--short",
            "20",
            "--full-limit",
            "1",
            "--out",
            str(tmp_path / "r"),
        ],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "full run skipped: projected" in proc.stdout and not (tmp_path / "r").exists()
    bad = subprocess.run(
        ["bash", str(ROOT / "benchmarks" / "paths_gpu.sh"), "--nope"],
        capture_output=True,
        text=True,
        env=ENV,
    )
    assert bad.returncode == 1 and "unknown option --nope" in bad.stderr
