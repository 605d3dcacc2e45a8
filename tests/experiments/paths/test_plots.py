"""Figures of a paths run (experiments/plots.py) and the ``mdcert plot`` dispatcher."""

from __future__ import annotations

import json
import sys
import types

import pytest

from certify import MdcertError
from experiments.cli.main import main
from experiments.cli.plot import plot_run


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("plots") / "run"
    assert main(["paths", "--trials", "2", "--p", "1.75,3", "--steps", "30,40", "--normalize", "--records", "10",
                 "--cross", "--workers", "0", "--progress", "off", "-o", str(out)]) == 0
    return out


def test_plot_paths_run_writes_pngs(run_dir, capsys) -> None:
    assert main(["plot", str(run_dir)]) == 0
    printed = capsys.readouterr().out.split()
    names = {p.rsplit("/", 1)[-1] for p in printed}
    assert names == {"bregman.png", "rate_fit.png", "cross.png", "projections.png", "norm_growth.png"}
    for name in names:
        data = (run_dir / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000
    assert not list(run_dir.glob("*.tmp.png"))


def test_dispatch_to_regpath_plots(tmp_path, monkeypatch) -> None:
    (tmp_path / "summary.json").write_text(json.dumps({"kind": "regpath"}))
    seen = []
    fake = types.ModuleType("experiments.regpath.plots")
    fake.plot_regpath_run = lambda d: seen.append(d) or [d / "x.png"]
    monkeypatch.setitem(sys.modules, "experiments.regpath.plots", fake)
    assert plot_run(tmp_path) == [tmp_path / "x.png"] and seen == [tmp_path]


@pytest.mark.parametrize("content, pattern", [
    ({"kind": "nonsense"}, r"has kind 'nonsense'"),
    ({}, r"has kind None"),
    (None, r"cannot read"),
])
def test_unknown_kind_is_a_clear_error(tmp_path, content, pattern) -> None:
    (tmp_path / "summary.json").write_text("{not json" if content is None else json.dumps(content))
    with pytest.raises(MdcertError, match=pattern):
        plot_run(tmp_path)


def test_missing_run_dir_exits_1_with_one_line(tmp_path, capsys) -> None:
    assert main(["plot", str(tmp_path / "nope")]) == 1
    err = capsys.readouterr().err
    assert err.strip().count("\n") == 0 and "run directory not found" in err
    assert main(["plot", str(tmp_path)]) == 1
    assert "no summary.json" in capsys.readouterr().err


def test_paths_plotter_rejects_other_kinds(tmp_path) -> None:
    from experiments.paths.plots import plot_paths_run

    (tmp_path / "summary.json").write_text(json.dumps({"kind": "regpath"}))
    with pytest.raises(MdcertError, match="not a paths run"):
        plot_paths_run(tmp_path)
