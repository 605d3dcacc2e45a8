"""The documents run and resolve: every Python block of README.md and docs/formats.md runs, the bash
blocks of docs/formats.md marked ``<!-- runnable -->`` run (``mdcert`` as ``python -m experiments.cli``, called
in-process),
every citation of a section of docs/theory.md in the project names one of its headings, and
nothing refers to a file outside the project."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
THEORY = ROOT / "docs" / "theory.md"
FORMATS = ROOT / "docs" / "formats.md"
README = ROOT / "README.md"

_BLOCK = re.compile(r"(<!--\s*runnable\s*-->\s*\n)?```(\w+)\n(.*?)```", re.S)
#: "docs/theory.md section 4.2", "sections 2 and 5", "sections 3-4", "section 1 and section 3", "sections 4.1, 4.3"
_CITE = re.compile(
    r"docs/theory\.md,?\s+sections?\s+(\d+(?:\.\d+)*(?:\s*(?:,|and|-|to)\s*(?:section\s+)?\d+(?:\.\d+)*)*)"
)
#: what follows "docs/theory.md section(s)" must be a section number ("section 1.x" names no heading)
_CITED_TOKEN = re.compile(r"docs/theory\.md,?\s+sections?\s+(\S+)")
_HEADING = re.compile(r"^#{2,4}\s+(\d+(?:\.\d+)*)\s", re.M)


def blocks(text: str) -> list[tuple[str, str, bool]]:
    """``(language, code, marked runnable)`` for every fenced block, in document order."""
    return [(m.group(2), m.group(3), m.group(1) is not None) for m in _BLOCK.finditer(text)]


def cited_sections(text: str) -> list[str]:
    """Section numbers cited as "docs/theory.md section(s) ..." (ranges of whole sections expanded)."""
    out: list[str] = []
    for m in _CITE.finditer(text):
        parts = re.split(r"\s*(,|and|-|to)\s*(?:section\s+)?", m.group(1))
        nums, seps = parts[0::2], parts[1::2]
        out.append(nums[0])
        for sep, num in zip(seps, nums[1:]):
            prev = out[-1]
            if sep in ("-", "to") and prev.isdigit() and num.isdigit():
                out.extend(str(k) for k in range(int(prev) + 1, int(num) + 1))
            else:
                out.append(num)
    return out


def headings() -> set[str]:
    return set(_HEADING.findall(THEORY.read_text()))


def project_files() -> list[Path]:
    """Tracked text files of the project (git ls-files), else every .py/.md file under ROOT."""
    try:
        names = subprocess.run(
            ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.split()
        files = [ROOT / n for n in names]
    except (OSError, subprocess.CalledProcessError):
        files = [p for p in ROOT.rglob("*") if ".venv" not in p.parts and ".git" not in p.parts]
    return [f for f in files if f.is_file() and f.suffix in {".py", ".md", ".toml", ".sh", ""}]


# ------------------------------------------------------------------------------------------ helpers
def test_block_and_citation_parsers() -> None:
    text = "a\n<!-- runnable -->\n```bash\nls\n```\n```python\nx = 1\n```\n"
    assert blocks(text) == [("bash", "ls\n", True), ("python", "x = 1\n", False)]
    cite = (
        "(docs/theory.md section 4.2) docs/theory.md sections 2 and 5; docs/theory.md sections 3-5, "
        "docs/theory.md section 1 and section 3; docs/theory.md sections 4.1, 4.3. docs/theory.md section 6"
    )
    assert cited_sections(cite) == ["4.2", "2", "5", "3", "4", "5", "1", "3", "4.1", "4.3", "6"]


def test_theory_has_the_protocol_numbering() -> None:
    have = headings()
    want = {
        "1",
        "1.3",
        "2",
        "3",
        "4",
        "4.1",
        "4.2",
        "4.3",
        "4.4",
        "4.5",
        "4.6",
        "5",
        "5.1",
        "5.2",
        "5.3",
        "5.4",
        "5.5",
        "5.6",
        "5.7",
        "6",
    }
    assert want <= have, sorted(want - have)
    text = THEORY.read_text()
    assert re.search(r"^### 1\.3 Variable-length sequences \(padding\)$", text, re.M)


# ------------------------------------------------------------------------------------------ citations
def test_every_theory_citation_resolves() -> None:
    have = headings()
    bad = []
    n = 0
    for f in project_files():
        try:
            text = f.read_text()
        except UnicodeDecodeError:
            continue
        for sec in cited_sections(text):
            n += 1
            if sec not in have:
                bad.append(f"{f.relative_to(ROOT)}: section {sec}")
        for m in _CITED_TOKEN.finditer(text):
            token = m.group(1).rstrip(".,;:)'\"`")
            if not re.fullmatch(r"\d+(\.\d+)*(-\d+)?", token):
                bad.append(f"{f.relative_to(ROOT)}: 'section {m.group(1)}' is not a section number")
    assert n > 50  # the docstrings do cite it
    assert not bad, bad[:10]


def test_every_predicate_and_certificate_docstring_cites_theory() -> None:
    """Each predicate class, the certificate record and the checker say, in their own docstring, which
    section of docs/theory.md they implement."""
    import inspect

    import certify
    import certify.certificate
    import certify.check
    import certify.export
    import theorems
    from theorems.context import Predicate

    predicates = [
        getattr(theorems, name)
        for name in theorems.__all__
        if inspect.isclass(getattr(theorems, name))
        and issubclass(getattr(theorems, name), Predicate)
        and getattr(theorems, name) is not Predicate
    ]
    assert len(predicates) >= 7
    certificate_side = [
        getattr(certify, name)
        for name in (
            "Certificate",
            "CertStatus",
            "ExactVector",
            "SupportClass",
            "CheckResult",
            "ClaimCheck",
            "check_certificate",
            "certify_svm",
            "feasibility",
            "FeasibilityResult",
            "CertifiedSolution",
            "certified_solution",
        )
    ]
    modules = [certify.certificate, certify.check, certify.export]
    missing = [
        getattr(o, "__name__", repr(o))
        for o in predicates + certificate_side + modules
        if not cited_sections(o.__doc__ or "")
    ]
    assert not missing, missing


def test_nothing_refers_outside_the_project() -> None:
    # pieces joined at run time, so that this file does not match itself
    outside = [
        "/work/" + "shared",
        "../" + "shared",
        "SPEC" + ".md",
        "CERTIFICATES" + ".md",
        "NOTES" + ".md",
        "shared" + "/clients",
    ]
    hits = [
        f"{f.relative_to(ROOT)}: {s}"
        for f in project_files()
        for s in outside
        if s in f.read_text(errors="replace")
    ]
    assert not hits, hits


def test_readme_links_both_documents_near_the_top() -> None:
    top = "\n".join(README.read_text().splitlines()[:20])
    assert "(docs/theory.md)" in top and "(docs/formats.md)" in top
    assert (ROOT / "docs" / "theory.md").is_file() and (ROOT / "docs" / "formats.md").is_file()


# ------------------------------------------------------------------------------------------ blocks run
def _run_python(code: str, name: str) -> None:
    exec(compile(code, name, "exec"), {"__name__": "__docs__"})


def _run_bash(code: str, name: str) -> None:
    """Run a runnable bash block line by line in this process: ``mdcert ARGS`` is
    ``experiments.cli.main.main(ARGS)`` (what ``python -m experiments.cli ARGS`` runs) and must exit 0;
    ``python -c CODE`` is executed. Any other line is refused, so the block stays runnable as written."""
    import shlex

    from experiments.cli.main import main

    for line in code.splitlines():
        argv = shlex.split(line, comments=True)
        if not argv:
            continue
        if argv[0] == "mdcert":
            rc = main(argv[1:])
            assert rc == 0, f"{name}: {line!r} exited {rc}"
        elif argv[:2] == ["python", "-c"] and len(argv) == 3:
            _run_python(argv[2], f"{name}: python -c")
        else:
            raise AssertionError(
                f"{name}: a runnable block may hold only mdcert and python -c lines, got {line!r}"
            )


def test_readme_python_blocks_run(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    py = [code for lang, code, _ in blocks(README.read_text()) if lang == "python"]
    assert py
    for k, code in enumerate(py[1:], start=1):  # the first one is run by tests/test_readme.py
        _run_python(code, f"README.md python block {k}")


def test_formats_blocks_run_in_order(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    todo = [(lang, code, run) for lang, code, run in blocks(FORMATS.read_text())]
    assert sum(lang == "python" for lang, _, _ in todo) >= 5 and sum(run for _, _, run in todo) >= 5
    for k, (lang, code, runnable) in enumerate(todo):
        name = f"docs/formats.md block {k} ({lang})"
        if lang == "python":
            _run_python(code, name)
        elif lang == "bash" and runnable:
            _run_bash(code, name)
    assert (tmp_path / "W_mm.npy").is_file() and (tmp_path / "run" / "summary.json").is_file()


@pytest.mark.parametrize("doc", [README, FORMATS, THEORY])
def test_relative_links_exist(doc: Path) -> None:
    for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", doc.read_text()):
        assert (doc.parent / target).exists(), f"{doc.name} links to missing {target}"
