"""``mdcert study pgd`` end to end on a tiny configuration of both tasks (digits, and text on 500
snippets encoded into a test-local cache); bad options (experiments/studies/pgd.py,
experiments/studies/pgdreport.py, experiments/studies/pgdfigures.py)."""

from __future__ import annotations

import json

import pytest

from experiments.cli.main import main

TINY = [
    "--quick",
    "--snippets",
    "500",
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
    cache = ["--cache-dir", str(root / "cache")]
    assert main(["study", "pgd", *TINY, *cache, "-o", str(root / "a")]) == 0
    return root


def test_tiny_study_writes_summary_report_and_figures(tiny):
    s = json.loads((tiny / "a" / "summary.json").read_text())
    assert s["kind"] == "pgd" and 0 < s["chance"]["test_acc"] < 0.2
    assert s["tasks"] == ["digits", "text"] == [e["task"] for e in s["sizes"]]
    for entry in s["sizes"]:
        _check_entry(entry)
    for pre in ("", "text-"):
        for f in ("accuracy.png", "sparsity.png", "weights.png", "margin.png", "timing.png"):
            assert (tiny / "a" / f"{pre}{f}").stat().st_size > 1000 and f"{pre}{f}" in s["figures"]
    report = (tiny / "a" / "report.md").read_text()
    assert "Chance baseline" in report and "torch.optim.SGD" in report
    assert "## Task digits" in report and "## Task text" in report
    assert len(s["headline"]) == 4 and s["headline"][2].startswith("text GD (p=2)")


def _check_entry(entry: dict) -> None:
    opts = entry["optimizers"]
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


def test_the_text_task_beats_the_majority_class_on_500_snippets(tiny):
    s = json.loads((tiny / "a" / "summary.json").read_text())
    text = s["sizes"][1]
    chance = text["chance"]["test_acc"]
    assert text["chance"]["class"] == 1 and 0.5 < chance < 0.75  # fresh is the majority
    assert text["data"]["snippets"] == 500 and text["data"]["test"] == 100
    assert text["data"]["train"] + text["data"]["val"] == 400
    assert text["optimizers"]["p3"]["above_chance"]["every_seed"]
    assert all(o["test_acc"]["mean"] > chance for o in text["optimizers"].values())
    certified = [m for o in text["optimizers"].values() for m in o["margin"]]
    assert certified and all(m["d"] == 33 for m in certified)  # width 32 + the constant 1
    for m in certified:
        if m["status"] == "optimal":
            assert 0 < m["margin_lower"] <= m["margin_upper"]
            assert m["trained_margin"] <= m["margin_upper"]


def test_rerun_reuses_every_record(tiny, capsys):
    capsys.readouterr()
    cache = ["--cache-dir", str(tiny / "cache")]
    assert main(["study", "pgd", *TINY, *cache, "-o", str(tiny / "a")]) == 0
    assert "0 run(s) trained" in capsys.readouterr().out
    s = json.loads((tiny / "a" / "summary.json").read_text())
    assert s["sizes"][1]["data"]["cache"] == {
        "cache_dir": str(tiny / "cache"),
        "chunks": 1,
        "reused": 1,
        "encoded": 0,
    }


def test_one_task_alone_has_the_records_of_that_task_in_both(tiny, capsys):
    capsys.readouterr()
    cache = ["--cache-dir", str(tiny / "cache")]
    assert main(["study", "pgd", *TINY, *cache, "--task", "text", "-o", str(tiny / "a")]) == 0
    assert "0 run(s) trained" in capsys.readouterr().out
    s = json.loads((tiny / "a" / "summary.json").read_text())
    assert s["tasks"] == ["text"] and s["chance"] == s["sizes"][0]["chance"]


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--optimizers", "adam"], "p-GD only"),
        (["--optimizers", "4"], "no step-size grid"),
        (["--cert-points", "5"], "--cert-points"),
        (["--cert-time-limit", "0"], "--cert-time-limit"),
        (["--width", "1"], "--width"),
        (["--snippets", "20"], "--snippets 20"),
        (["--snippets", "500", "--cert-points", "450"], "the text training split"),
        (["--task", "text", "--cache-dir", "/proc/x"], "cannot be written"),
    ],
)
def test_bad_options_are_one_line_and_write_nothing(tmp_path, capsys, argv, message):
    cache = ["--cache-dir", str(tmp_path / "cache")]
    assert main(["study", "pgd", *TINY, *cache, *argv, "-o", str(tmp_path / "o")]) == 1
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1
    assert not (tmp_path / "o").exists()


def test_a_sweep_point_of_the_study_kind_parses_as_a_pgd_study():
    from experiments.cli.main import build_parser
    from experiments.studies.pgd import build_setups
    from experiments.sweep.kinds import get_kind

    argv = get_kind("study").argv(
        {
            "study": "pgd",
            "task": "digits",
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
    [tc] = cfg.tasks
    assert (tc.name, cfg.optimizers, cfg.fixed_lr, cfg.seed_start, tc.grids) == (
        "digits",
        ("p1.1", "p2"),
        0.1,
        3,
        {"p1.1": [0.1], "p2": [0.1]},
    )


@pytest.mark.slow
def test_quick_is_above_chance_on_both_tasks(tmp_path):
    """The real --quick (both tasks, the text embeddings encoded into an empty cache): every p above
    the majority-class baseline on every seed (its time is a benchmark figure, benchmarks/README.md,
    not asserted here)."""
    cache = ["--cache-dir", str(tmp_path / "cache")]
    assert (
        main(["study", "pgd", "--quick", "--progress", "off", *cache, "-o", str(tmp_path / "q")])
        == 0
    )
    s = json.loads((tmp_path / "q" / "summary.json").read_text())
    assert [e["task"] for e in s["sizes"]] == ["digits", "text"]
    for e in s["sizes"]:
        assert all(o["above_chance"]["every_seed"] for o in e["optimizers"].values())


@pytest.mark.parametrize(
    "lo, hi, text",
    [
        (21.43499999, 21.43500001, "[21.4349, 21.4351]"),  # 6 digits would print [21.435, 21.435]
        (0.5, 0.5, "[0.5, 0.5]"),  # exact ends stay exact
        (-1.0000001, -0.99999999, "[-1.00001, -0.999999]"),
    ],
)
def test_printed_enclosures_are_rounded_outward(lo, hi, text) -> None:
    from experiments.studies.pgdreport import outward_interval

    assert outward_interval(lo, hi) == text
