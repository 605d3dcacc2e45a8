"""experiments.diagnet.preset: the run directory of --preset paper (report, parts, figures, resume)."""

from __future__ import annotations

import json

import pytest

from experiments.diagnet import preset
from experiments.diagnet.figures import have_matplotlib
from experiments.diagnet.paper import paper_parts


@pytest.fixture()
def tiny(monkeypatch):
    """The quick preset's fig2 and eps_block parts, 300 steps each."""
    parts = [p for p in paper_parts(quick=True) if p.name in ("fig2", "eps_block")]
    parts = [
        type(p)(p.name, {**p.config, "steps": 300, "eps": p.config["eps"][:2]}, p.run)
        for p in parts
    ]
    monkeypatch.setattr(preset, "paper_parts", lambda *, quick: parts)
    return parts


def test_run_directory_and_resume(tiny, tmp_path) -> None:
    out = tmp_path / "run"
    lines = []
    preset.run_paper(out, quick=True, overwrite=False, echo=lines.append)
    assert [ln.split(":")[0] for ln in lines] == ["part fig2", "part eps_block"] and "ran" in lines[
        0
    ]
    names = {p.name for p in out.iterdir()}
    assert {"summary.json", "report.md", "parts"} <= names and not (tmp_path / "run.parts").exists()
    assert ({"fig2.png", "eps_block.png"} <= names) == have_matplotlib()
    summary = json.loads((out / "summary.json").read_text())
    assert summary["kind"] == "signdescent-paper" and set(summary["parts"]) == {"fig2", "eps_block"}
    report = (out / "report.md").read_text()
    for text in (
        "delta <= (proven)",
        "to min-l3/2 (measured)",
        "certified references: min ||beta||_3/2 =",
        "part wall time",
        "load average",
    ):
        assert text in report
    lines.clear()
    preset.run_paper(
        out, quick=True, overwrite=True, echo=lines.append
    )  # same config: nothing recomputed
    assert all("reused (same config)" in ln for ln in lines)


def test_an_interrupted_run_keeps_its_finished_parts(tiny, tmp_path, monkeypatch) -> None:
    out = tmp_path / "run"

    def boom(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(preset, "_figures", boom)
    with pytest.raises(KeyboardInterrupt):
        preset.run_paper(out, quick=True, overwrite=False, echo=lambda s: None)
    assert not out.exists() and sorted(p.name for p in (tmp_path / "run.parts").iterdir()) == [
        "eps_block.json",
        "fig2.json",
    ]
    monkeypatch.undo()
    monkeypatch.setattr(preset, "paper_parts", lambda *, quick: tiny)
    lines = []
    preset.run_paper(out, quick=True, overwrite=False, echo=lines.append)
    assert all("reused" in ln for ln in lines) and (out / "report.md").is_file()


def test_each_part_says_whether_its_data_and_grid_are_inside_the_assumptions() -> None:
    from experiments.diagnet.preset import assumption_line

    block = assumption_line({"data": "block", "N": 1, "seed": 0, "alpha": 0.1, "eps": [0.001, 0.2]})
    assert "Assumption 3.2: HOLDS; 3.8: HOLDS;" in block
    assert "HOLDS at eps = 0.001" in block and "FAILS at eps = 0.2" in block  # eq. 18 bounds eps
    gauss = assumption_line(
        {"data": "gaussian", "N": 2, "D": 5, "seed": 0, "alpha": 0.1, "eps": [0.01]}
    )
    assert "Assumption 3.2: FAILS; 3.8: FAILS;" in gauss and "UNDECIDED at eps = 0.01" in gauss
