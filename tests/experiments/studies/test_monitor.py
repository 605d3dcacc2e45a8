"""The estimate line and the progress lines off a terminal (experiments/studies/monitor.py)."""

from __future__ import annotations

import io
import time

import pytest

from experiments.studies.monitor import Estimate, Monitor, duration


@pytest.mark.parametrize(
    "seconds, text",
    [
        (0.4, "0 s"),
        (89, "89 s"),
        (90, "2 min"),
        (3599, "60 min"),
        (5400, "1.5 h"),
        (36000, "10.0 h"),
    ],
)
def test_duration(seconds, text):
    assert duration(seconds) == text


def test_estimate_line():
    assert (
        Estimate(16, 300.0, "timed here").line("sentiment")
        == "study sentiment: 16 run(s) to train, estimated 5 min wall (timed here)"
    )
    assert "already stored" in Estimate(0, 0.0, "x").line("vision")


def test_progress_lines_every_interval_and_only_when_enabled():
    out = io.StringIO()
    with Monitor(
        "sentiment", enabled=True, every=0.05, estimate=Estimate(4, 100.0, "x"), stream=out
    ) as m:
        m.stage("size 3: tuning", 1, 4)
        m.finished(2.0)
        time.sleep(0.3)
    lines = out.getvalue().splitlines()
    assert len(lines) >= 2 and lines[-1].startswith(
        "study sentiment: size 3: tuning: 2/4 runs stored; 1 of 4 trained now in "
    )
    assert "left" in lines[-1]
    quiet = io.StringIO()
    with Monitor("sentiment", enabled=False, every=0.01, stream=quiet):
        time.sleep(0.05)
    assert quiet.getvalue() == ""


def test_time_left_from_the_runs_finished():
    m = Monitor("k", enabled=False, estimate=Estimate(10, 1000.0, "x"))
    m.t0 -= 100.0  # 100 s elapsed
    assert m.line().endswith(
        "about 15 min left"
    )  # no run finished: the estimate minus the elapsed time
    for _ in range(5):
        m.finished(20.0)
    assert m.line().endswith("about 2 min left")  # 5 runs in 100 s, 5 to go: 100 s


def test_a_stage_without_runs_names_only_the_stage():
    m = Monitor("realdata", enabled=False)
    m.stage("text: frontier n=16")
    assert m.line().startswith("study realdata: text: frontier n=16: ") and m.line().endswith(
        " s wall"
    )
