"""``mdcert study``: a tiny end-to-end study, determinism, resumability, refused directories (experiments/cli/study.py;
the bad command lines: tests/experiments/cli/badinput/test_study.py)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from experiments.cli.main import main
from tests.experiments.figcheck import capture_figures
from tests.experiments.cli.terminal import as_from_a_terminal

TINY = [
    "--optimizers",
    "1.1,2",
    "--seeds",
    "2",
    "--train-limit",
    "100",
    "--test-limit",
    "40",
    "--width",
    "3",
    "--epochs",
    "1",
    "--finetune-steps",
    "1",
    "--progress",
    "off",
    "--workers",
    "1",
]


def _results(root: Path) -> dict:
    """Every record's result without its wall-clock times."""

    def strip(x):
        if isinstance(x, dict):
            return {k: strip(v) for k, v in x.items() if "seconds" not in k}
        if isinstance(x, list):
            return [strip(v) for v in x]
        return x

    return {
        p.name: strip(json.loads(p.read_text())["result"])
        for p in sorted((root / "runs").iterdir())
    }


FIGURES: dict = {}  # figure file -> layout problems (tests/experiments/figcheck.py), filled by `tiny`


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    root = tmp_path_factory.mktemp("study")
    with pytest.MonkeyPatch.context() as mp:
        seen = capture_figures(mp)
        assert main(["study", "sentiment", "--quick", *TINY, "-o", str(root / "a")]) == 0
    FIGURES.update(seen)
    return root


def test_figures_have_a_clean_layout(tiny):
    """No clipped or overlapping text, legends outside the data, every axis labelled."""
    assert set(FIGURES) == {
        "accuracy.png",
        "curves_size3.png",
        "weights_size3.png",
        "prune_size3.png",
        "causal_size3.png",
    }
    assert {name: p for name, p in FIGURES.items() if p} == {}


def test_tiny_study_writes_the_report(tiny):
    a = tiny / "a"
    summary = json.loads((a / "summary.json").read_text())
    assert {
        "accuracy.png",
        "curves_size3.png",
        "weights_size3.png",
        "prune_size3.png",
        "causal_size3.png",
    } <= set(summary["figures"])
    for name in summary["figures"]:
        assert (a / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    size = summary["sizes"][0]
    assert set(size["optimizers"]) == {"p1.1", "p2"}
    assert size["optimizers"]["p1.1"]["minus_gd"]["n"] == 2
    report = (a / "report.md").read_text()
    assert "minus GD" in report and "Causal token tests" in report and "Magnitude pruning" in report
    for key in size["optimizers"]["p2"]["runs"]:
        assert key[:12] in report and (a / "runs" / f"{key}.json").is_file()
    assert len(list((a / "runs").iterdir())) == 8  # 2 x 2 tuning + 2 x 2 final
    assert json.loads((a / "study.json").read_text())["status"] == "finished"


def test_tiny_study_states_the_baseline_and_warns_at_chance(tiny):
    """A width-3 model after one epoch on 100 reviews predicts one class: the study says so."""
    summary = json.loads((tiny / "a" / "summary.json").read_text())
    size = summary["sizes"][0]
    b = size["baseline"]
    assert (
        b["rule"] == "always predict the training split's majority class"
        and 0.5 <= b["train_share"] <= 1
    )
    assert 0 <= b["test_acc"] <= b["best_constant_test_acc"] <= 1
    assert size["all_at_baseline"] and all(o["at_baseline"] for o in size["optimizers"].values())
    assert summary["smoke_run"] and summary["headline"][0].startswith("--quick is a smoke run")
    assert summary["headline"][1].startswith(
        "WARNING size 3: every run of every optimizer sits on the majority-class"
    )
    report = (tiny / "a" / "report.md").read_text()
    assert (
        f"scores {100 * b['test_acc']:.2f}% on the test split" in report
        and "**Warning: every run" in report
    )
    for o in size["optimizers"].values():  # intervals inside the quantity's range
        assert 0 <= o["test_acc"]["low"] <= o["test_acc"]["high"] <= 1
        for iv in o["weights"]["count_ge_threshold"].values():
            assert iv["low"] is None or iv["low"] >= 0
    t = summary["timings"]
    assert t["workers"] == 1 and t["wall_s"] > 0 and t["runs_wall_summed_s"] > 0


def test_second_run_does_no_work(tiny, capsys):
    before = {p.name: p.stat().st_mtime_ns for p in (tiny / "a" / "runs").iterdir()}
    assert main(["study", "sentiment", "--quick", *TINY, "-o", str(tiny / "a")]) == 0
    out = capsys.readouterr().out
    assert "0 run(s) trained now, 8 reused" in out and "s wall (as in report.md)" in out
    assert "summed over" not in out  # nothing trained: no summed run times
    assert {p.name: p.stat().st_mtime_ns for p in (tiny / "a" / "runs").iterdir()} == before


def test_deterministic_from_the_seed(tiny):
    assert main(["study", "sentiment", "--quick", *TINY, "-o", str(tiny / "b")]) == 0
    assert _results(tiny / "a") == _results(tiny / "b")


@pytest.mark.slow
def test_worker_processes_give_the_same_records(tiny):
    assert (
        main(["study", "sentiment", "--quick", *TINY, "--workers", "2", "-o", str(tiny / "c")]) == 0
    )
    assert _results(tiny / "a") == _results(tiny / "c")


def test_refuses_a_non_study_directory_and_another_kind(tiny, tmp_path, capsys):
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep")
    assert main(["study", "sentiment", "--quick", *TINY, "-o", str(tmp_path / "mine")]) == 1
    assert "holds no study.json" in capsys.readouterr().err
    assert [p.name for p in (tmp_path / "mine").iterdir()] == ["notes.txt"]
    assert main(["study", "vision", "--quick", "--progress", "off", "-o", str(tiny / "a")]) == 1
    assert "not 'vision'" in capsys.readouterr().err


def test_cuda_missing_is_one_line(tmp_path, capsys):
    import torch

    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present")
    assert main(["study", "vision", "--quick", "--device", "cuda", "-o", str(tmp_path / "o")]) == 1
    assert "no CUDA device" in capsys.readouterr().err and not (tmp_path / "o").exists()


def test_no_traceback_in_a_subprocess(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[3])}
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "experiments.cli",
            "study",
            "sentiment",
            "--size",
            "7",
            "-o",
            str(tmp_path / "o"),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert (
        r.returncode == 1
        and len(r.stderr.strip().splitlines()) == 1
        and "Traceback" not in r.stderr
    )


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["sentiment", "vision"])
def test_the_real_quick_study_finishes(kind, tmp_path):
    """The real --quick finishes in one process and one thread and writes its summary (its time is
    a benchmark figure in benchmarks/README.md, not asserted here)."""
    assert (
        main(
            [
                "study",
                kind,
                "--quick",
                "--progress",
                "off",
                "--workers",
                "1",
                "-o",
                str(tmp_path / kind),
            ]
        )
        == 0
    )
    assert (tmp_path / kind / "summary.json").is_file()


def _children(pid: int) -> set[int]:
    """Pids whose parent is ``pid`` (Linux /proc)."""
    out = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.add(int(stat.parent.name))
    return out


def _workers(pid: int) -> set[int]:
    """The live worker processes of ``pid`` (multiprocessing's spawned children; its resource tracker is not one)."""
    out = set()
    for child in _children(pid):
        try:
            cmd = Path(f"/proc/{child}/cmdline").read_bytes()
        except OSError:
            continue
        if b"spawn_main" in cmd and b"resource_tracker" not in cmd and _alive(child):
            out.add(child)
    return out


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_ctrl_c_with_two_runs_in_flight(tmp_path):
    """Ctrl-C (SIGINT to the process group, as a terminal sends it) while two workers train: exit 130
    within 5 s, one line on stderr, every finished run kept whole, status "interrupted", no worker left."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[3])}
    out = tmp_path / "s"
    args = [
        sys.executable,
        "-m",
        "experiments.cli",
        "study",
        "sentiment",
        "--quick",
        "--optimizers",
        "2,adam",
        "--train-limit",
        "100",
        "--test-limit",
        "40",
        "--width",
        "3",
        "--epochs",
        "60",
        "--seeds",
        "1",
        "--workers",
        "2",
        "--progress",
        "off",
        "-o",
        str(out),
    ]
    proc = subprocess.Popen(
        args,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
        preexec_fn=as_from_a_terminal,
    )
    try:
        deadline = time.monotonic() + 600  # 4 tuning runs, then 2 final runs, 2 workers
        while not (list(out.glob("runs/*.json")) and len(_workers(proc.pid)) >= 2):
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "no run finished with two workers busy within 600 s"
            time.sleep(0.1)
        workers = _workers(proc.pid)
        t0 = time.monotonic()
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=30)
        elapsed = time.monotonic() - t0
        print(f"SIGINT to exit: {elapsed:.2f} s, load {os.getloadavg()[0]:.1f}")
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 130 and elapsed <= 5.0, (proc.returncode, elapsed, err)
    assert len(err.strip().splitlines()) == 1 and "interrupted" in err and "Traceback" not in err
    records = sorted((out / "runs").glob("*.json"))
    assert 1 <= len(records) < 6  # 6 runs: some were in flight
    for r in records:
        assert json.loads(r.read_text())["result"]["curves"]  # whole records
    assert not list((out / "runs").glob("*.tmp*"))
    assert json.loads((out / "study.json").read_text())["status"] == "interrupted"
    time.sleep(0.5)
    assert not [w for w in workers if _alive(w)], "a worker outlived the study"
    assert not _children(proc.pid)


def test_study_signdescent_runs_the_sign_descent_preset(monkeypatch, tmp_path) -> None:
    """`mdcert study signdescent` is `mdcert signdescent --preset paper` under the study name."""
    from experiments.cli import signdescent
    from experiments.cli.main import main

    seen = {}
    monkeypatch.setattr(signdescent, "run", lambda args: seen.update(vars(args)) or 0)
    out = str(tmp_path / "sd")
    assert main(["study", "signdescent", "--quick", "--threads", "1", "-o", out]) == 0
    assert seen["preset"] == "paper" and seen["quick"] and seen["output"] == out
    assert seen["threads"] == 1 and seen.get("problem") is None
