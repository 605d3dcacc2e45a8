"""``mdcert study realdata``: the ``--quick`` run end to end (both modalities), its resumption, the option
checks and the command line's bad inputs. The ``--quick`` time (<= 60 s) is asserted in the slow test."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import subprocess
import sys
from dataclasses import asdict, replace
from pathlib import Path

import pytest

from certify import MdcertError
from experiments.studies.realdata.study import (
    DEFAULT,
    QUICK,
    check_inputs,
    config_from_args,
    run_study,
)
from tests.experiments.figcheck import capture_figures

FIGURES: dict = {}  # figure file -> layout problems (tests/experiments/figcheck.py), filled by `quick_run`


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    """``mdcert study realdata --quick`` in this process (the CLI path, 2 certification workers)."""
    from experiments.cli.main import main

    import torch

    root = tmp_path_factory.mktemp("realdata") / "quick"
    saved = (
        torch.are_deterministic_algorithms_enabled(),
        torch.is_deterministic_algorithms_warn_only_enabled(),
        torch.get_num_threads(),
    )
    try:
        with pytest.MonkeyPatch.context() as mp:
            seen = capture_figures(mp)
            with contextlib.redirect_stdout(io.StringIO()) as out:
                assert main(["study", "realdata", "--quick", "-o", str(root)]) == 0
            FIGURES.update(seen, stdout=out.getvalue())
    finally:  # mdcert study sets process-wide torch state; leave the test session as it was
        torch.use_deterministic_algorithms(saved[0], warn_only=saved[1])
        torch.set_num_threads(saved[2])
    return root, json.loads((root / "summary.json").read_text())


def test_quick_run_writes_every_output(quick_run) -> None:
    root, on_disk = quick_run
    assert sorted(p.name for p in root.iterdir()) == [
        "frontier.png",
        "paths_digits.png",
        "paths_text.png",
        "report.md",
        "runs",
        "study.json",
        "summary.json",
    ]
    assert on_disk["quick"] and on_disk["config"] == json.loads(json.dumps(asdict(QUICK)))
    assert on_disk["kind"] == "realdata" and set(on_disk["modalities"]) == {"text", "digits"}
    assert (
        on_disk["machine"]["cpus"] == os.cpu_count()
        and len(on_disk["machine"]["load_average"]) == 3
    )
    report = (root / "report.md").read_text()
    for name, e in on_disk["modalities"].items():
        spec = next(m for m in QUICK.modalities if m.name == name)
        assert e["provenance"]["source"] == name and e["provenance"]["n"] == spec.paths_n
        fr = e["frontier"]
        assert len(fr["records"]) == QUICK.subsets * len(spec.sizes)
        for r in fr["records"]:
            for kind in ("opt", "trained"):
                v = r[kind]
                assert v["verdict"] in ("feasible", "infeasible", "undecided")
                if (
                    v["verdict"] != "undecided"
                ):  # a verdict only with a certificate the checker accepted
                    assert (
                        v["checked"]
                        and v["status"]
                        == {"feasible": "optimal", "infeasible": "infeasible"}[v["verdict"]]
                    )
            assert r["trained"]["locally_optimal"] in ("holds", "fails", "undecided")
            if r["trained"]["locally_optimal"] == "holds":
                assert r["trained"]["verdict"] == "feasible"
        for f in fr["fractions"]:
            assert f"| {f['n']} | {f['nominal_ratio']:.2f} |" in report
        per_p = e["paths"]["per_p"]
        assert list(per_p) == list(QUICK.ps)
        for p, r in per_p.items():
            assert sum(r["locally_optimal"].values()) == QUICK.inits
            assert f"| {p} | {r['steps']} |" in report
    assert (root / "frontier.png").stat().st_size > 10_000


def test_figures_have_a_clean_layout(quick_run) -> None:
    """No clipped or overlapping text, legends outside the data, every axis labelled."""
    figures = {k: v for k, v in FIGURES.items() if k.endswith(".png")}
    assert set(figures) == {"frontier.png", "paths_text.png", "paths_digits.png"}
    assert {name: p for name, p in figures.items() if p} == {}


def test_wall_time_is_the_reports(quick_run) -> None:
    """The terminal's wall time is the one report.md states (writing the report apart), and no summed
    time is called "trained in"."""
    root, summary = quick_run
    wall = summary["timings"]["wall_s"]
    assert (
        wall == summary["timings"]["total_s"]
        and f"total wall time {wall:.1f} s" in (root / "report.md").read_text()
    )
    first = FIGURES["stdout"].splitlines()[0]
    assert f"; {wall:.1f} s wall (as in report.md) + " in first and "trained in" not in first


def test_rerun_reuses_rechecked_certificates(quick_run) -> None:
    root, summary = quick_run
    stored = sorted(p.name for p in (root / "runs").iterdir())
    assert stored and all(n.startswith("verdict-") for n in stored)
    again = run_study(replace(QUICK, modalities=QUICK.modalities[1:]), root, workers=0)
    recs = again["modalities"]["digits"]["frontier"]["records"]
    first = summary["modalities"]["digits"]["frontier"]["records"]
    assert all(r["opt"]["cached"] for r in recs if r["opt"]["verdict"] != "undecided")
    assert not any(
        r["trained"]["cached"] for r in recs
    )  # their locality verdict needs the solve itself
    assert [(r["opt"]["verdict"], r["trained"]["verdict"]) for r in recs] == [
        (r["opt"]["verdict"], r["trained"]["verdict"]) for r in first
    ]


def _args(**kw) -> argparse.Namespace:
    base = {
        "quick": False,
        "modalities": "text,digits",
        "seeds": None,
        "workers": 2,
        "embed": "static",
        "cache_dir": None,
        "out": None,
    }
    return argparse.Namespace(**{**base, **kw})


def test_presets() -> None:
    assert config_from_args(_args()) == DEFAULT and config_from_args(_args(quick=True)) == QUICK
    c = config_from_args(_args(modalities="digits", seeds=3))
    assert [m.name for m in c.modalities] == ["digits"] and c.subsets == 3
    assert set(DEFAULT.ps) == {"1.1", "1.75", "2", "3"} and DEFAULT.threshold == 0.06


@pytest.mark.parametrize(
    "kw, message",
    [
        ({"modalities": "text,audio"}, r"invalid --modalities 'text,audio'; give text, digits"),
        ({"modalities": "text,text"}, r"invalid --modalities"),
        ({"modalities": ""}, r"invalid --modalities"),
        ({"seeds": 0}, r"--seeds 0: give between 1 and 100"),
        (
            {"workers": -1},
            r"--workers -1: give a number of certification processes between 0 and 64",
        ),
    ],
)
def test_bad_options(kw, message) -> None:
    with pytest.raises(MdcertError, match=message):
        config_from_args(_args(**kw))


def test_missing_extra_is_one_line(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "tokenizers", None)
    with pytest.raises(MdcertError, match=r"need the Python package 'tokenizers'.*pip install"):
        check_inputs(DEFAULT)
    check_inputs(
        replace(DEFAULT, modalities=DEFAULT.modalities[1:])
    )  # digits alone needs no tokenizer


def test_inputs_name_the_files_read() -> None:
    inputs = check_inputs(DEFAULT)
    assert {"the corpus file", "the encoder weights", "scikit-learn's digits file"} <= set(inputs)
    assert all(p.is_file() for p in inputs.values())


@pytest.mark.slow
def test_quick_run_end_to_end(tmp_path) -> None:
    """``mdcert study realdata --quick`` end to end in a fresh process: exit 0, report and summary
    written (its time is a benchmark figure, benchmarks/README.md, not a test's pass condition)."""
    out = tmp_path / "quick"
    proc = subprocess.run(
        [sys.executable, "-m", "experiments.cli", "study", "realdata", "--quick", "-o", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert (out / "report.md").is_file() and (out / "summary.json").is_file()


# ---------------------------------------------------------------------- the command line: bad inputs
def _cli(argv, capsys) -> tuple[int, list[str]]:
    from experiments.cli.main import main

    rc = main(argv)
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    return rc, err


def _snapshot(folder):
    return {p.relative_to(folder): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def test_cli_refuses_a_directory_that_is_not_a_study(tmp_path, capsys) -> None:
    out = tmp_path / "taken"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    rc, err = _cli(["study", "realdata", "--quick", "-o", str(out)], capsys)
    assert (
        rc == 1 and len(err) == 1 and "exists, is not empty" in err[0] and "Traceback" not in err[0]
    )
    assert _snapshot(out) == {Path("notes.txt"): b"mine"}


def test_cli_refuses_an_output_that_contains_an_input(tmp_path, capsys, monkeypatch) -> None:
    data = tmp_path / "data"
    data.mkdir()
    corpus = data / "rotten_tomatoes_corpus_full.csv.bz2"
    corpus.write_bytes(b"corpus bytes")
    monkeypatch.setattr("experiments.data.corpus.corpus_path", lambda: corpus)
    before = _snapshot(data)
    rc, err = _cli(["study", "realdata", "--quick", "-o", str(data)], capsys)
    assert (
        rc == 1 and len(err) == 1 and "is not empty and holds no study.json" in err[0]
    )  # mdcert study's check
    assert _snapshot(data) == before
    (data / "study.json").write_text(
        json.dumps({"kind": "realdata"})
    )  # a study directory holding an input
    before = _snapshot(data)
    rc, err = _cli(["study", "realdata", "--quick", "-o", str(data)], capsys)
    assert rc == 1 and len(err) == 1 and "contains the corpus file" in err[0]
    assert _snapshot(data) == before


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--modalities", "audio"], r"invalid --modalities 'audio'"),
        (["--lr", "0.1"], r"--lr and --seed-start are options of the transformer studies"),
        (["--seeds", "0"], r"--seeds 0"),
        (["--workers", "0"], r"--workers 0"),
    ],
)
def test_cli_bad_options_write_nothing(tmp_path, capsys, argv, message) -> None:
    import re

    out = tmp_path / "run"
    rc, err = _cli(["study", "realdata", "--quick", "-o", str(out), *argv], capsys)
    assert rc == 1 and len(err) == 1 and re.search(message, err[0]) and not out.exists()


def test_cli_missing_extra_writes_nothing(tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "tokenizers", None)
    out = tmp_path / "run"
    rc, err = _cli(["study", "realdata", "--quick", "-o", str(out)], capsys)
    assert (
        rc == 1
        and len(err) == 1
        and "need the Python package 'tokenizers'" in err[0]
        and not out.exists()
    )
