"""The sweep driver (experiments/sweep/runner.py): de-duplication by content, index healing, resumption."""

from __future__ import annotations

import json
import shutil

from experiments.sweep.runner import run_sweep
from experiments.sweep.spec import load_spec

from tests.experiments.sweep.helpers import assert_complete, make_problems, write_spec

SPEC = 'kind = "certify"\n[grid]\nproblem = ["data/*.npz"]\np = ["2"]\nalpha = ["opt"]\ndigits = [20]\n'


def test_same_bytes_under_two_names_is_one_job(tmp_path) -> None:
    a, _ = make_problems(tmp_path, seeds=(1, 2))
    shutil.copy(a, tmp_path / "data" / "p1_copy.npz")
    spec = load_spec(write_spec(tmp_path, SPEC))
    res = run_sweep(spec, tmp_path / "out", workers=1, progress=False)
    assert (res.points, res.distinct, res.done) == (3, 2, 2)
    assert_complete(tmp_path / "out", 2)


def test_a_record_missing_from_the_index_is_indexed_on_the_next_run(tmp_path) -> None:
    make_problems(tmp_path, seeds=(1, 2))
    spec = load_spec(write_spec(tmp_path, SPEC))
    out = tmp_path / "out"
    run_sweep(spec, out, workers=1, progress=False)
    index = out / "index.jsonl"
    first, second = index.read_text().splitlines()
    index.write_text(first + "\n" + second[: len(second) // 2])  # a driver killed mid-line
    res = run_sweep(spec, out, workers=1, progress=False)
    assert (res.skipped, res.done) == (2, 0)
    lines = [
        json.loads(t)
        for t in index.read_text().splitlines()[:1] + index.read_text().splitlines()[2:]
    ]
    assert {ln["key"] for ln in lines} == {json.loads(first)["key"], json.loads(second)["key"]}


def test_a_tampered_record_runs_again_and_a_grown_grid_runs_only_the_new_jobs(tmp_path) -> None:
    make_problems(tmp_path, seeds=(1, 2))
    spec = load_spec(write_spec(tmp_path, SPEC))
    out = tmp_path / "out"
    run_sweep(spec, out, workers=1, progress=False)
    cert = next(out.glob("records/*/*/cert.json"))
    cert.write_text(cert.read_text().replace('"optimal"', '"infeasible"'))  # not what was recorded
    res = run_sweep(spec, out, workers=1, progress=False)
    assert (res.skipped, res.done) == (1, 1)
    assert json.loads(cert.read_text())["status"] == "optimal"
    grown = load_spec(write_spec(tmp_path, SPEC.replace('p = ["2"]', 'p = ["2", "3"]')))
    res = run_sweep(grown, out, workers=1, progress=False)
    assert (res.skipped, res.done, res.distinct) == (2, 2, 4)
    assert "| 3 | 2 | 2 |" in (out / "summary.md").read_text()
    assert json.loads((out / "sweep.json").read_text())["spec_text"] == grown.text


def test_progress_bar_only_on_a_terminal(monkeypatch, capsys) -> None:
    from experiments.sweep import runner

    monkeypatch.setattr("sys.stderr.isatty", lambda: False, raising=False)
    assert not runner._progress(10, None).enabled
    bar = runner._progress(10, True)
    assert bar.enabled
    bar.update(5)
    bar.stage("failed=0", force=True)  # redraws now
    bar.close()
    assert "5/10" in capsys.readouterr().err and not runner._progress(0, True).enabled


class _RecordThenCtrlC:
    """An engine whose worker finishes a job (its record renamed into place) and then Ctrl-C
    arrives before the driver reads the job's line: the race a real sweep can hit."""

    def __init__(self, **_kw) -> None:
        pass

    def start(self) -> float:
        return 0.0

    def run(self, jobs):
        from experiments.sweep.worker import execute

        execute(next(iter(jobs)))  # the record is on disk, its line never reaches the driver
        raise KeyboardInterrupt
        yield  # pragma: no cover - a generator, as engines are

    def close(self, *, kill: bool = False) -> None:
        pass


def test_ctrl_c_after_a_record_landed_counts_and_indexes_it(tmp_path, monkeypatch) -> None:
    import experiments.sweep.runner as runner

    make_problems(tmp_path, seeds=(1, 2))
    spec = load_spec(write_spec(tmp_path, SPEC))
    monkeypatch.setattr(runner, "make_engine", lambda *a, **kw: _RecordThenCtrlC())
    res = run_sweep(spec, tmp_path / "out", workers=1, progress=False)
    assert res.interrupted and (res.done, res.failed, res.pending) == (1, 0, 1)
    assert_complete(tmp_path / "out", 1)  # the index matches the records on disk
