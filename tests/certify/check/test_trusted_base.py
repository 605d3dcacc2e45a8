"""The trusted base of `mdcert verify` is what docs/theory.md section 4.6 says: the modules of mdcert
that importing the checkers loads, and their line count."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
_MODULE = re.compile(r"`(certify(?:\.[a-z_]+)*)`")


def _section() -> str:
    text = (ROOT / "docs" / "theory.md").read_text()
    start = text.index("**Trusted base.**")
    return text[start : text.index("**BLAS assumption.**", start)]


def _documented() -> tuple[set[str], int, int, set[str], int, int]:
    """(checker modules, their lines, tolerance %, regression modules, their lines, tolerance %)."""
    section = _section()
    checker, rest = section.split("The regression checker (section 8.3) adds", 1)
    regression = rest.split("It stays beside", 1)[0]
    n1, tol1 = re.search(r"([\d,]+) lines in all \(`wc -l`, within (\d+)%", checker).groups()
    n2, tol2 = re.search(r"these modules, ([\d,]+) lines \(within (\d+)%\)", regression).groups()
    return (
        set(_MODULE.findall(checker)),
        int(n1.replace(",", "")),
        int(tol1),
        set(_MODULE.findall(regression)),
        int(n2.replace(",", "")),
        int(tol2),
    )


def _loaded(first: str, then: str | None = None) -> dict[str, str]:
    """mdcert modules (name -> file) that importing ``first`` (then ``then``, counting only what it
    adds) loads in a fresh interpreter."""
    code = (
        "import json, sys\n"
        f"import {first}\n"
        "before = set(sys.modules)\n"
        + (f"import {then}\n" if then else "before = set()\n")
        + "roots = ('certify', 'theorems', 'experiments')\n"
        "print(json.dumps({m: sys.modules[m].__file__ for m in set(sys.modules) - before\n"
        "                  if m.split('.')[0] in roots}))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return json.loads(out.stdout)


def _lines(files) -> int:
    return sum(len(Path(f).read_text().splitlines()) for f in files)


def test_importing_the_checker_loads_exactly_the_documented_modules() -> None:
    modules, lines, tol, _, _, _ = _documented()
    loaded = _loaded("certify.check")
    assert set(loaded) == modules
    assert all(Path(f).resolve().is_relative_to(ROOT) for f in loaded.values())
    assert abs(_lines(loaded.values()) - lines) <= lines * tol / 100, _lines(loaded.values())


def test_the_regression_checker_adds_exactly_the_documented_modules() -> None:
    _, _, _, modules, lines, tol = _documented()
    added = _loaded("certify.check", "certify.regression.check")
    assert set(added) == modules
    assert abs(_lines(added.values()) - lines) <= lines * tol / 100, _lines(added.values())


def test_the_subpackage_is_the_checker_part_of_the_list() -> None:
    modules = _documented()[0]
    files = {p.stem for p in (ROOT / "certify" / "check").glob("*.py")}
    assert {m for m in modules if m.startswith("certify.check")} == (
        {"certify.check"} | {f"certify.check.{f}" for f in files if f != "__init__"}
    )
