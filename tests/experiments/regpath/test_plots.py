"""Figures of a regpath run directory (experiments/regpath_plots.py)."""

from __future__ import annotations

import json

import pytest

from certify import MdcertError
from experiments.regpath.plots import plot_regpath_run


def _summary(joint: bool) -> dict:
    path = []
    for k, R in enumerate([10.0, 100.0, 1000.0]):
        e = {
            "R": R,
            "bregman_to_svm": 10.0 ** (-1 - 2 * k),
            "loss": 0.5,
            "log_excess_loss": -R / 10,
            "log_loss": -R,
            "stationarity": 0.0 if k else 1e-12,
            "selected_tokens": [0, 1 if k else 2],
            "winner": "svm",
        }
        if joint:
            e.update({"r": R, "bregman_v_to_svm": 10.0 ** (-2 - k)})
        path.append(e)
    s = {
        "kind": "regpath",
        "p": "7/4",
        "p_float": 1.75,
        "alpha": [0, 1],
        "joint": joint,
        "path": path,
    }
    if joint:
        s["r_of_R"] = "R"
        s["joint_md"] = {
            "p_float": 1.75,
            "lr": 0.1,
            "records": [
                {"step": 1, "bregman_W": None, "bregman_v": 0.1},
                {"step": 10, "bregman_W": 0.2, "bregman_v": 0.05},
            ],
        }
    return s


@pytest.mark.parametrize("joint, count", [(False, 3), (True, 4)])
def test_plots_are_written(tmp_path, joint, count) -> None:
    (tmp_path / "summary.json").write_text(json.dumps(_summary(joint)))
    out = plot_regpath_run(tmp_path)
    assert len(out) == count
    for f in out:
        assert f.is_file() and f.stat().st_size > 1000 and f.read_bytes()[:4] == b"\x89PNG"
    assert not list(tmp_path.glob("*.tmp.png"))


def test_bad_run_directories(tmp_path) -> None:
    with pytest.raises(MdcertError, match="no summary.json"):
        plot_regpath_run(tmp_path)
    (tmp_path / "summary.json").write_text(json.dumps({"kind": "paths", "path": []}))
    with pytest.raises(MdcertError, match="not a regpath summary"):
        plot_regpath_run(tmp_path)
    (tmp_path / "summary.json").write_text("{")
    with pytest.raises(MdcertError, match="cannot read"):
        plot_regpath_run(tmp_path)


def test_every_figure_is_labelled_and_marks_the_radii_with_other_tokens(
    tmp_path, monkeypatch
) -> None:
    """Figures fit for a paper (issue 13): axis labels and legends everywhere, the radii where the path
    selects other tokens than alpha marked and counted, and no legend or label overlapping another
    (in regpath_stationarity.png the winners used to be annotated over the curve)."""
    import experiments.regpath.plots as plots

    figures = {}

    def keep(fig, path, **kw):
        fig.canvas.draw()
        figures[path.name] = fig
        return path

    monkeypatch.setattr(plots, "save_png", keep)
    (tmp_path / "summary.json").write_text(json.dumps(_summary(True)))
    plot_regpath_run(tmp_path)
    assert set(figures) == {
        "regpath_bregman.png",
        "regpath_stationarity.png",
        "regpath_tokens.png",
        "regpath_joint_md.png",
    }
    for name, fig in figures.items():
        renderer = fig.canvas.get_renderer()
        boxes = [t.get_window_extent(renderer) for t in fig.legends]
        for ax in fig.axes:
            assert ax.get_xlabel() or ax.get_shared_x_axes().get_siblings(ax) != [ax], (
                name,
                "x label",
            )
            assert ax.get_ylabel(), (name, "y label")
            boxes += [
                t.get_window_extent(renderer)
                for t in (ax.title, ax.xaxis.label, ax.yaxis.label)
                if t.get_text()
            ]
            boxes += [ax.get_legend().get_window_extent(renderer)] if ax.get_legend() else []
            boxes += [t.get_window_extent(renderer) for t in ax.texts]  # annotations
        assert fig.legends or any(ax.get_legend() for ax in fig.axes), (name, "no legend")
        for i, a in enumerate(boxes):
            assert not any(a.overlaps(b) for b in boxes[i + 1 :]), (name, "overlapping labels")
    legend = [t.get_text() for t in figures["regpath_bregman.png"].legends[0].get_texts()]
    assert "R where the path selects other tokens than alpha (1 of 3)" in legend
