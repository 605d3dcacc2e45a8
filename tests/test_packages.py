"""The generic top-level names (certify, theorems, experiments) must resolve to this repository."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("name", ["certify", "theorems", "experiments"])
def test_package_resolves_inside_repository(name: str) -> None:
    module = importlib.import_module(name)
    assert Path(module.__file__).resolve().parent == ROOT / name


@pytest.mark.parametrize("name", ["certify", "theorems", "experiments"])
def test_package_declares_all(name: str) -> None:
    module = importlib.import_module(name)
    assert isinstance(module.__all__, (list, tuple))
    for attr in module.__all__:
        assert getattr(module, attr) is not None


def test_certify_and_theorems_do_not_import_torch_or_matplotlib() -> None:
    import subprocess

    code = (
        "import sys, certify, theorems\n"
        "import certify.check\n"
        "bad = [m for m in ('torch', 'matplotlib', 'experiments') if m in sys.modules]\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True
    )
    assert out.stdout.strip() == ""


def test_checker_imports_no_solver() -> None:
    import subprocess

    code = (
        "import sys, certify.check\n"
        "bad = [m for m in ('cvxpy', 'scipy.optimize', 'torch', 'clarabel') if m in sys.modules]\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True
    )
    assert out.stdout.strip() == ""
