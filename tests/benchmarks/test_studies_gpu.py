"""benchmarks/studies_gpu.sh: its code path on the CPU at tiny size (the GPU run is the same script)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _run(out: Path, env: dict, *, timeout: int) -> subprocess.CompletedProcess:
    script = str(ROOT / "benchmarks" / "studies_gpu.sh")
    return subprocess.run(
        ["bash", script, str(out)], env=env, capture_output=True, text=True, timeout=timeout
    )


def test_studies_gpu_script_runs_on_cpu_at_tiny_size(tmp_path):
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "PYTHON": sys.executable,
        "DEVICE": "cpu",
        "SIZES": "3",
        "SEEDS": "2",
        "EPOCHS": "1",
        "EXTRA": "--quick --optimizers 2,adam --width 3 --max-len 64 --train-limit 60 --test-limit 20 --finetune-steps 1",
    }
    r = _run(tmp_path / "out", env, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "study exited" not in r.stdout, r.stdout[-2000:]
    table = (tmp_path / "out" / "epoch_times.md").read_text()
    assert "| 3 | 3 | adam |" in table and "| 3 | 3 | p2 |" in table
    summary = (tmp_path / "out" / "summary.json").read_text()
    assert (
        '"dropout": 0.2' in summary and '"max_len": 64' in summary
    )  # --paper-width, narrowed by EXTRA


def test_defaults_with_no_knob_set(tmp_path):
    """With no knob in the environment (EXTRA unset, as on a GPU machine) the script passes its
    defaults to the study (here a stand-in that prints its command line) and still writes the table."""
    stub = tmp_path / "python"
    stub.write_text(
        "#!/usr/bin/env bash\n"
        'if [ "$1" = -m ] && [ "$2" = experiments.cli ]; then echo "STUDY $*"; exit 0; fi\n'
        f'exec "{sys.executable}" "$@"\n'
    )
    stub.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k not in ("EXTRA", "DEVICE", "SIZES", "SEEDS")}
    env.update(PYTHONPATH=str(ROOT), PYTHON=str(stub))
    r = _run(tmp_path / "out", env, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    line = next(x for x in r.stdout.splitlines() if x.startswith("STUDY "))
    assert (
        line.split()[3:]
        == (
            "study sentiment --paper-width --size 3,4,6 --seeds 5 --epochs 4 --device cuda "
            f"--progress off -o {tmp_path / 'out'}"
        ).split()
    )
    assert (tmp_path / "out" / "epoch_times.md").read_text().startswith("| size | width |")
