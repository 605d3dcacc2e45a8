"""A census of the source tree (issue 22): the shape every module keeps, checked on each test run.

Source modules (certify, theorems, experiments) stay under 400 lines at line length 100 (the
formatter's width, `test_contracts`); no module imports another module's private names or reaches
into another object's ``_cache``; nothing below ``experiments/cli/`` takes an ``argparse.Namespace``;
no CLI ``run`` passes 40 lines; no library code switches matplotlib's backend.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("certify", "theorems", "experiments")
MAX_LINES = 400
MAX_CLI_RUN = 40


def _sources() -> list[Path]:
    return sorted(p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py"))


def _rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def test_no_source_module_passes_400_lines() -> None:
    long = {_rel(p): n for p in _sources() if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert not long, f"modules over {MAX_LINES} lines (split them by job): {long}"


def test_no_import_of_another_modules_private_names() -> None:
    bad = []
    for path in _sources():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                if node.module.split(".")[0] not in PACKAGES:
                    continue
                bad += [
                    f"{_rel(path)}: from {node.module} import {a.name}"
                    for a in node.names
                    if a.name.startswith("_") and not a.name.startswith("__")
                ]
    assert not bad, bad


def test_no_module_reaches_into_another_objects_cache() -> None:
    pattern = re.compile(r"\b(?!self\b)(\w+(?:\.\w+)*)\._cache\b")
    bad = [
        f"{_rel(p)}:{i}: {ln.strip()}"
        for p in _sources()
        for i, ln in enumerate(p.read_text().splitlines(), 1)
        if pattern.search(ln)
    ]
    assert not bad, bad


def test_nothing_below_the_cli_takes_an_argparse_namespace() -> None:
    bad = []
    for path in _sources():
        if "experiments/cli/" in _rel(path) + "/":
            continue
        names = {n.id for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.Name)}
        attrs = {
            n.attr for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.Attribute)
        }
        if "Namespace" in names | attrs:  # code, annotations; docstrings may name it
            bad.append(_rel(path))
    assert not bad, f"below experiments/cli/, these mention argparse.Namespace: {bad}"


def test_every_cli_run_is_short() -> None:
    long = {}
    for path in sorted((ROOT / "experiments" / "cli").glob("*.py")):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.FunctionDef) and node.name == "run":
                if (n := node.end_lineno - node.lineno + 1) > MAX_CLI_RUN:
                    long[_rel(path)] = n
    assert not long, (
        f"CLI run() over {MAX_CLI_RUN} lines (move the work to experiments.commands): {long}"
    )


@pytest.mark.parametrize("needle", ["matplotlib.use(", "pyplot.switch_backend("])
def test_no_library_module_switches_the_matplotlib_backend(needle: str) -> None:
    bad = [_rel(p) for p in _sources() if needle in p.read_text()]
    assert not bad, bad
