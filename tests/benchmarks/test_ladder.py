"""benchmarks/ladder.py: the exponent fit of the ladder (and the script end to end at a tiny size)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _ladder():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    spec = importlib.util.spec_from_file_location("ladder", ROOT / "benchmarks" / "ladder.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_an_exact_power_law_has_its_exponent_inside_a_narrow_interval() -> None:
    fit = _ladder().fit_exponent
    N = [100.0, 1000.0, 10000.0, 100000.0]
    slope, (lo, hi) = fit(N, [3e-4 * n**2.2 for n in N])
    assert slope == pytest.approx(2.2) and lo <= 2.2 <= hi and hi - lo < 1e-6
    slope, (lo, hi) = fit(N, [n**1.5 * f for n, f in zip(N, (1.3, 0.8, 1.2, 0.9))])
    assert lo < slope < hi and lo < 1.5 < hi and hi - lo > 0.05  # noisy: a real interval


def test_two_points_give_a_slope_without_an_interval_and_one_point_is_refused() -> None:
    fit = _ladder().fit_exponent
    assert fit([10.0, 100.0], [1.0, 100.0]) == (pytest.approx(2.0), None)
    with pytest.raises(ValueError, match="at least two points"):
        fit([10.0], [1.0])


def test_the_script_runs_a_tiny_ladder(tmp_path) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "ladder.py"),
            "--ns",
            "12,24,48",
            "--T",
            "4",
            "--d",
            "4",
            "--json",
            str(tmp_path / "out.json"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("checker") >= 1 and "solve time ~ N^" in proc.stdout
    assert "95% CI" in proc.stdout and (tmp_path / "out.json").is_file()
    assert proc.stdout.count(" ok |") == 3
    table = [
        ln for ln in proc.stdout.splitlines() if ln.startswith("| 12 |") or ln.startswith("| 48 |")
    ]
    assert len(table) == 2 and all(
        "x our wall, " in ln and "x our CPU" in ln for ln in table
    )  # Clarabel and SLSQP at p = 2


def test_the_script_runs_one_ladder_per_p_with_the_peers_cpu_ratio(tmp_path) -> None:
    import json

    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "ladder.py"), "--ns", "12,24", "--T", "4"]
        + ["--d", "4", "--ps", "2,3", "--peers-max-n", "12", "--json", str(tmp_path / "o.json")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("# ladder planted (n, 4, 4) p = ") == 2
    assert proc.stdout.count("solve time ~ N^") == 2
    # n = 12 ran Clarabel at both p and SLSQP at p = 2, each with its CPU ratio to ours
    assert proc.stdout.count("x our CPU") == 3
    assert set(json.loads((tmp_path / "o.json").read_text())) == {"2", "3"}
