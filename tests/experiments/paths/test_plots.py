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
    assert (
        main(
            [
                "paths",
                "--trials",
                "2",
                "--p",
                "1.75,3",
                "--steps",
                "30,40",
                "--normalize",
                "--records",
                "10",
                "--cross",
                "--workers",
                "0",
                "--progress",
                "off",
                "-o",
                str(out),
            ]
        )
        == 0
    )
    return out


def test_plot_paths_run_writes_pngs(run_dir, capsys) -> None:
    assert main(["plot", str(run_dir)]) == 0
    printed = capsys.readouterr().out.split()
    names = {p.rsplit("/", 1)[-1] for p in printed}
    assert names == {
        "bregman.png",
        "rate_fit.png",
        "cross.png",
        "projections.png",
        "norm_growth.png",
    }
    for name in names:
        data = (run_dir / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000
    assert not [p for p in run_dir.iterdir() if ".tmp" in p.name]  # no temporary left
    from experiments.runtime.outputs import run_files

    assert names <= run_files(run_dir, kind="paths")  # recorded: --overwrite may replace them


def test_dispatch_to_regpath_plots(tmp_path, monkeypatch) -> None:
    (tmp_path / "summary.json").write_text(json.dumps({"kind": "regpath"}))
    seen = []
    fake = types.ModuleType("experiments.regpath.plots")
    fake.plot_regpath_run = lambda d: seen.append(d) or [d / "x.png"]
    monkeypatch.setitem(sys.modules, "experiments.regpath.plots", fake)
    assert plot_run(tmp_path) == [tmp_path / "x.png"] and seen == [tmp_path]


@pytest.mark.parametrize(
    "content, pattern",
    [
        ({"kind": "nonsense"}, r"has kind 'nonsense'"),
        ({}, r"has kind None"),
        (None, r"cannot read"),
    ],
)
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


def test_quantile_curves_are_the_median_and_the_10_90_band_of_the_finite_values() -> None:
    import numpy as np

    from experiments.paths.plots import BAND, quantile_curves

    steps = np.array([0, 1, 10, 100])
    curves = np.array([[9.0, 1.0, 2.0, 3.0], [9.0, 2.0, 4.0, np.inf], [9.0, 3.0, 6.0, 9.0]])
    k, med, lo, hi, n = quantile_curves(steps, curves)
    assert list(k) == [1, 10, 100] and BAND == (10, 90)
    assert (
        np.allclose(med, [2, 4, 6])
        and np.allclose(lo, [1.2, 2.4, 3.6])
        and np.allclose(hi, [2.8, 5.6, 8.4])
    )
    assert n == 2  # the row with an inf is not counted as a whole curve
    assert not np.isfinite(quantile_curves(steps, np.full((2, 4), np.nan))[1]).any()


def test_every_panel_names_its_band_markers_and_the_number_of_paths(run_dir) -> None:
    """Figures fit for a paper (issue 13): bands defined in the legend, axis labels, the number of
    paths drawn, the SVM direction and final points named."""
    import numpy as np

    from experiments.runtime.figures import subplots
    from experiments.paths.plots import band, cross_figure, load_run, projections_panel

    summary, arrays = load_run(run_dir)
    rows = np.flatnonzero(arrays["p_exact"] == summary["per_p"][0]["p_exact"])
    fig, ax = subplots()
    band(ax, arrays["record_steps"][rows[0]], arrays["bregman"][rows], "D")
    labels = ax.get_legend_handles_labels()[1]
    assert labels == [f"D: median of {len(rows)} trajectories", "D: 10-90% of them"]
    fig, ax = subplots()
    drawn = projections_panel(
        ax, arrays, rows, float(summary["per_p"][0]["p"]), "p=1.75", max_paths=1
    )
    assert drawn == 1 and ax.get_title() == f"p=1.75: 1 of {len(rows)} paths drawn"
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any("certified SVM direction" in t for t in legend) and any(
        "final iterate" in t for t in legend
    )
    assert ax.get_xlabel() and ax.get_ylabel()
    groups = [("p=1.75", summary["per_p"][0], rows)]
    fig = cross_figure(groups, arrays)
    assert fig.legends and all(a.get_xlabel() for a in fig.axes[-len(arrays["cross_q"]) :])
    assert fig.axes[0].get_ylabel().startswith(r"$D_\psi")
    assert fig.get_suptitle().endswith(f"({len(rows)} trajectories per row)")
