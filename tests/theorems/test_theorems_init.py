"""Tests of the theorems package: explicit exports and the dependency direction."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import theorems


def test_exports_resolve_inside_this_repository():
    root = Path(__file__).resolve().parents[2]
    assert Path(theorems.__file__).resolve().parent == root / "theorems"
    for name in theorems.__all__:
        assert getattr(theorems, name) is not None
    assert sorted(theorems.__all__) == sorted(set(theorems.__all__))


def test_imports_neither_torch_nor_matplotlib_nor_experiments():
    code = (
        "import sys, theorems, theorems.catalogue, theorems.stepsize, theorems.region, theorems.loss; "
        "bad = [m for m in sys.modules if m.split('.')[0] in ('torch', 'matplotlib', 'experiments')]; "
        "print(bad); sys.exit(1 if bad else 0)"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
