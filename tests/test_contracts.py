"""The import contracts declared in pyproject.toml ([tool.importlinter], docs/architecture.md) hold,
and the base install (no torch, no matplotlib) can synthesize, certify, verify and check."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_import_contracts_are_kept() -> None:
    pytest.importorskip("importlinter")
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from importlinter.cli import lint_imports_command;"
            " sys.exit(lint_imports_command())",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    assert "BROKEN" not in out.stdout and "KEPT" in out.stdout


def test_the_code_is_formatted() -> None:
    """``ruff format`` at line length 100 ([tool.ruff] in pyproject.toml) leaves every file as it is."""
    pytest.importorskip("ruff")
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "ruff",
            "format",
            "--check",
            "certify",
            "theorems",
            "experiments",
            "tests",
            "benchmarks",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, "run `ruff format` (line length 100):\n" + out.stdout[-3000:]


def test_ruff_finds_no_pyflakes_error() -> None:
    """Unused imports, undefined names and the like ([tool.ruff.lint] in pyproject.toml)."""
    pytest.importorskip("ruff")
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "ruff",
            "check",
            "--output-format",
            "concise",
            "certify",
            "theorems",
            "experiments",
            "tests",
            "benchmarks",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-1000:]


_BLOCKED = (
    "torch",
    "matplotlib",
    "hypothesis",
    "ray",
    "yaml",
    "sklearn",
    "transformers",
    "tokenizers",
    "safetensors",
)
_RUN = (
    "import sys\nfor m in {blocked!r}: sys.modules[m] = None\n"
    "from experiments.cli.main import main\nsys.exit(main(sys.argv[1:]))\n"
)


def _mdcert_without_extras(tmp_path: Path, *argv: str) -> subprocess.CompletedProcess:
    code = _RUN.format(blocked=_BLOCKED)
    return subprocess.run(
        [sys.executable, "-c", code, *argv],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )


def test_base_install_certifies_and_verifies_without_torch(tmp_path: Path) -> None:
    for argv in (
        ["synth", "--n", "5", "--T", "6", "--d", "6", "--seed", "3", "-o", "problem.npz"],
        ["certify", "problem.npz", "--p", "1.75", "-o", "cert.json"],
        ["verify", "problem.npz", "cert.json", "--p", "1.75"],
        ["check", "problem.npz", "--p", "1.75", "--theorem", "10", "--alpha", "opt"],
        ["synth", "--classification", "--n", "12", "--d", "3", "-o", "points.npz"],
        ["check", "points.npz", "--p", "1.5", "--theorem", "pgd"],  # no path: no torch
    ):
        out = _mdcert_without_extras(tmp_path, *argv)
        assert out.returncode == 0, (argv, out.stderr)
    assert (
        "verified"
        in _mdcert_without_extras(
            tmp_path, "verify", "problem.npz", "cert.json", "--p", "1.75"
        ).stdout
    )


def test_a_command_needing_an_extra_says_which(tmp_path: Path) -> None:
    out = _mdcert_without_extras(
        tmp_path, "paths", "--trials", "2", "--p", "2", "--steps", "5", "-o", "run"
    )
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert out.stderr.strip().splitlines() == [
        "mdcert paths: error: this command needs torch, which is not installed; install it with: "
        "pip install 'mdcert[train]'"
    ]
    assert not (tmp_path / "run").exists()
