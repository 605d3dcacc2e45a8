"""A wall-clock limit for symbolic computations (docs/theory.md section 5.1: the loss check ends UNDECIDED, never hangs).

sympy can run for hours in pure Python on a small input, and a Python thread cannot be stopped from
outside. `call_with_time_limit` therefore uses one of two mechanisms:

* in the main thread (the ``mdcert`` commands, scripts, notebooks) on POSIX: ``setitimer`` /
  SIGALRM, whose handler raises `TimeLimitExceeded` (a BaseException, so that sympy's many
  ``except Exception`` clauses cannot swallow it) and keeps re-firing every 0.25 s until the call
  returns. The handler runs between bytecodes, so it stops Python-level loops (where sympy spends
  its time); the loss parser's bounds (`theorems.loss_parse.LIMITS`) keep every single C-level
  operation (big-integer arithmetic) short. A result computed after the deadline is discarded.
  No process is started, so the limit costs nothing.
* anywhere else (another thread, a platform without SIGALRM, or a caller's own interval timer
  already running): a fresh Python subprocess (``sys.executable``, not multiprocessing, so no
  ``__main__`` re-import) that is killed at the deadline and dies with its parent.

Arguments and results cross the process boundary by pickle; the function is named by module and
qualified name.

Why not mdcert's process pool (`experiments.runtime.pool`): ``theorems`` sits below ``experiments``
(imports point down only, docs/architecture.md) and is part of the base install, which has no
pebble (the ``train`` extra brings it); and a limit needs one throw-away process per call, started
only where SIGALRM cannot serve, not a pool of warm workers. So it stays one subprocess, in one
function (`_in_subprocess`), that dies with its parent (`certify.process.die_with_parent`).
"""

from __future__ import annotations

import json
import os
import pickle
import signal
import subprocess
import sys
import threading
from typing import Any, Callable

__all__ = ["TimeLimitExceeded", "call_with_time_limit", "alarm_usable"]


class TimeLimitExceeded(BaseException):
    """The computation ran past its time limit (a BaseException: library code cannot swallow it)."""


def alarm_usable() -> bool:
    """Whether SIGALRM can bound a call here: POSIX, the main thread, no interval timer of the caller's."""
    if (
        not hasattr(signal, "setitimer")
        or threading.current_thread() is not threading.main_thread()
    ):
        return False
    try:
        return signal.getitimer(signal.ITIMER_REAL)[0] == 0.0
    except (OSError, ValueError):
        return False


def call_with_time_limit(
    fn: Callable, args: tuple = (), *, seconds: float, isolate: bool | None = None
) -> Any:
    """``fn(*args)``, or `TimeLimitExceeded` after ``seconds`` of wall-clock time.

    Args:
        fn: a module-level function (picklable by reference when it runs in a subprocess).
        args: picklable arguments.
        seconds: the limit (> 0).
        isolate: True: always a subprocess; False: always SIGALRM (main thread only); None: SIGALRM
            when `alarm_usable`, else a subprocess.

    Raises:
        TimeLimitExceeded: past the limit (the subprocess is killed; no result is used).
        whatever ``fn`` raises (re-raised from the subprocess when it pickles).
    """
    if not seconds > 0:
        raise ValueError(f"time limit must be > 0 seconds, got {seconds!r}")
    if isolate is None:
        isolate = not alarm_usable()
    if not isolate:
        return _with_alarm(fn, args, float(seconds))
    return _in_subprocess(fn, args, float(seconds))


def _with_alarm(fn: Callable, args: tuple, seconds: float) -> Any:
    if not alarm_usable():
        raise RuntimeError("SIGALRM time limits need the main thread and no running interval timer")
    state = {"active": True, "fired": False}

    def handler(signum, frame) -> None:
        state["fired"] = True
        if state["active"]:
            raise TimeLimitExceeded(f"time limit of {seconds:g} s exceeded")

    old = signal.signal(signal.SIGALRM, handler)
    signal.setitimer(signal.ITIMER_REAL, seconds, 0.25)
    try:
        result = fn(*args)
    finally:
        while True:  # a signal may land inside this block: retry until the timer is disarmed
            try:
                state["active"] = False
                signal.setitimer(signal.ITIMER_REAL, 0)
                signal.signal(signal.SIGALRM, old)
                break
            except TimeLimitExceeded:
                continue
    if state["fired"]:
        raise TimeLimitExceeded(f"time limit of {seconds:g} s exceeded")
    return result


_BOOT = """
import json, os, pickle, sys
sys.path[:] = json.loads(sys.stdin.buffer.readline())
from certify.process import die_with_parent
die_with_parent(int(sys.argv[1]))
out = os.fdopen(os.dup(1), "wb")
os.dup2(2, 1)
module, name = json.loads(sys.stdin.buffer.readline())
import importlib
fn = importlib.import_module(module)
for part in name.split("."):
    fn = getattr(fn, part)
args = pickle.load(sys.stdin.buffer)
try:
    result = ("ok", fn(*args))
except Exception as exc:
    result = ("error", exc)
try:
    data = pickle.dumps(result)
except Exception as exc:
    data = pickle.dumps(("error", RuntimeError(f"{type(exc).__name__}: {exc}")))
out.write(data)
out.flush()
"""


def _in_subprocess(fn: Callable, args: tuple, seconds: float) -> Any:
    payload = (
        json.dumps(sys.path).encode()
        + b"\n"
        + json.dumps([fn.__module__, fn.__qualname__]).encode()
        + b"\n"
        + pickle.dumps(args)
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", _BOOT, str(os.getpid())],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        out, _ = proc.communicate(payload, timeout=seconds)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise TimeLimitExceeded(f"time limit of {seconds:g} s exceeded") from None
    except BaseException:
        proc.kill()
        proc.communicate()
        raise
    if proc.returncode != 0 or not out:
        raise RuntimeError(
            f"the isolated computation ended with exit code {proc.returncode} and no result"
        )
    status, value = pickle.loads(out)
    if status == "error":
        raise value
    return value
