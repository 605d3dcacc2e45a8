"""Tests of theorems.timelimit: SIGALRM in the main thread, a killed subprocess elsewhere."""

from __future__ import annotations

import signal
import threading
import time

import pytest

from theorems.timelimit import TimeLimitExceeded, alarm_usable, call_with_time_limit


def spin(seconds: float) -> str:
    """Pure-Python busy loop (what sympy does when it hangs)."""
    end = time.perf_counter() + seconds
    n = 0
    while time.perf_counter() < end:
        n += 1
    return "done"


def swallow(seconds: float) -> str:
    """A loop that catches Exception, as sympy's code often does: the limit must still stop it."""
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        try:
            spin(0.01)
        except Exception:
            pass
    return "done"


def fail() -> None:
    raise ValueError("bad")


@pytest.mark.parametrize("isolate", [False, True])
def test_result_and_exception_pass_through(isolate):
    assert call_with_time_limit(spin, (0.01,), seconds=30, isolate=isolate) == "done"
    with pytest.raises(ValueError, match="bad"):
        call_with_time_limit(fail, seconds=30, isolate=isolate)


@pytest.mark.parametrize("fn", [spin, swallow])
def test_alarm_stops_python_loops(fn):
    t0 = time.perf_counter()
    with pytest.raises(TimeLimitExceeded):
        call_with_time_limit(fn, (30.0,), seconds=0.3, isolate=False)
    assert time.perf_counter() - t0 < 3
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    assert signal.getsignal(signal.SIGALRM) in (signal.SIG_DFL, None, signal.default_int_handler)
    spin(0.6)  # no stray alarm afterwards


def test_subprocess_is_killed_at_the_deadline():
    t0 = time.perf_counter()
    with pytest.raises(TimeLimitExceeded):
        call_with_time_limit(spin, (60.0,), seconds=1.0, isolate=True)
    assert time.perf_counter() - t0 < 10


def test_worker_thread_uses_a_subprocess():
    out = {}

    def work():
        out["usable"] = alarm_usable()
        try:
            call_with_time_limit(spin, (60.0,), seconds=1.0)
        except TimeLimitExceeded:
            out["stopped"] = True

    t = threading.Thread(target=work)
    t.start()
    t.join(30)
    assert out == {"usable": False, "stopped": True}


def test_invalid_limit():
    with pytest.raises(ValueError):
        call_with_time_limit(spin, (0.0,), seconds=0)
