"""``mdcert study pgd`` end to end on a tiny configuration; bad options (experiments/studies/pgd.py,
experiments/studies/pgdreport.py)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from experiments.cli.main import main
from experiments.studies.pgd import chance_baseline

TINY = [
    "--quick",
    "--epochs",
    "2",
    "--width",
    "8",
    "--optimizers",
    "2,3",
    "--seeds",
    "2",
    "--cert-points",
    "40",
    "--timing-repeats",
    "2",
    "--progress",
    "off",
    "--workers",
    "1",
]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    root = tmp_path_factory.mktemp("pgd")
    assert main(["study", "pgd", *TINY, "-o", str(root / "a")]) == 0
    return root


def test_tiny_study_writes_summary_report_and_figures(tiny):
    s = json.loads((tiny / "a" / "summary.json").read_text())
    assert s["kind"] == "pgd" and 0 < s["chance"]["test_acc"] < 0.2
    opts = s["sizes"][0]["optimizers"]
    assert list(opts) == ["p2", "p3"] and opts["p3"]["verdict_vs_gd"]
    for o in opts.values():
        assert o["test_acc"]["n"] == 2 and len(o["margin"]) == 1  # --quick certifies one seed
        assert o["margin"][0]["status"] in (
            "optimal",
            "infeasible",
            "no_verified_result",
            "refused",
        )
        assert o["timing"]["repeats"] == 2 and o["timing"]["pgd_step"]["median"] > 0
        assert set(o["sparsity"]) == {"0.01", "0.05", "0.1"}
    for f in ("accuracy.png", "sparsity.png", "weights.png", "margin.png", "timing.png"):
        assert (tiny / "a" / f).stat().st_size > 1000 and f in s["figures"]
    report = (tiny / "a" / "report.md").read_text()
    assert "Chance baseline" in report and "torch.optim.SGD" in report


def test_rerun_reuses_every_record(tiny, capsys):
    capsys.readouterr()
    assert main(["study", "pgd", *TINY, "-o", str(tiny / "a")]) == 0
    assert "0 run(s) trained" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--optimizers", "adam"], "p-GD only"),
        (["--optimizers", "4"], "no step-size grid"),
        (["--cert-points", "5"], "--cert-points"),
        (["--cert-time-limit", "0"], "--cert-time-limit"),
        (["--width", "1"], "--width"),
    ],
)
def test_bad_options_are_one_line_and_write_nothing(tmp_path, capsys, argv, message):
    assert main(["study", "pgd", *TINY, *argv, "-o", str(tmp_path / "o")]) == 1
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1
    assert not (tmp_path / "o").exists()


def test_chance_is_the_majority_training_label():
    labels = np.array([0, 0, 0, 1, 1, 2, 0, 1])
    c = chance_baseline(labels, np.arange(5), np.arange(5, 8))
    assert c["class"] == 0 and c["test_acc"] == pytest.approx(1 / 3)


def test_a_sweep_point_of_the_study_kind_parses_as_a_pgd_study():
    from experiments.cli.main import build_parser
    from experiments.studies.pgd import build_setups
    from experiments.sweep.kinds import get_kind

    argv = get_kind("study").argv(
        {
            "study": "pgd",
            "optimizers": "1.1,2",
            "lr": "0.1",
            "seed": 3,
            "seeds": 2,
            "quick": True,
            "epochs": 1,
            "width": 8,
        },
        "/r",
    )
    args = build_parser()[0].parse_args(argv)
    cfg = build_setups(args)[0]
    assert (cfg.optimizers, cfg.fixed_lr, cfg.seed_start, cfg.grids) == (
        ("p1.1", "p2"),
        0.1,
        3,
        {"p1.1": [0.1], "p2": [0.1]},
    )


@pytest.mark.slow
def test_quick_is_above_chance_within_90_cpu_seconds(tmp_path):
    """The real --quick: every p above the majority-class baseline on every seed; <= 90 s of CPU in
    one process (the wall time of a quiet machine; a loaded one takes longer)."""
    import time

    c0 = time.process_time()
    assert main(["study", "pgd", "--quick", "--progress", "off", "-o", str(tmp_path / "q")]) == 0
    assert time.process_time() - c0 <= 90
    s = json.loads((tmp_path / "q" / "summary.json").read_text())
    assert all(o["above_chance"]["every_seed"] for o in s["sizes"][0]["optimizers"].values())
