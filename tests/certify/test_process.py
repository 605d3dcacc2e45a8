"""Tests of certify.process: a worker dies with its parent."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from certify.process import set_parent_death_signal

CHILD = """
import os, sys, time
from certify.process import die_with_parent
die_with_parent(int(sys.argv[1]), poll_s=0.05)
print(os.getpid(), flush=True)
time.sleep(60)
"""

# the middle process starts the worker and exits at once: the worker must follow it
MIDDLE = """
import subprocess, sys, os
child = subprocess.Popen([sys.executable, "-c", sys.argv[1], str(os.getpid())], stdout=subprocess.PIPE)
print(child.stdout.readline().decode().strip(), flush=True)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl is Linux-only")
def test_parent_death_signal_is_available():
    code = "from certify.process import set_parent_death_signal as s; print(s())"
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert out.stdout.strip() == "True"
    assert set_parent_death_signal is not None


def test_worker_exits_when_its_parent_does():
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    out = subprocess.run(
        [sys.executable, "-c", MIDDLE, CHILD], capture_output=True, text=True, env=env, timeout=60
    )
    pid = int(out.stdout.strip())
    deadline = time.monotonic() + 5
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        stat = Path(f"/proc/{pid}/stat").read_text() if Path(f"/proc/{pid}/stat").exists() else ""
        if stat.rsplit(")", 1)[-1].split()[:1] == ["Z"]:
            break
        time.sleep(0.05)
    else:
        if Path(f"/proc/{pid}").exists():
            os.kill(pid, 9)
            pytest.fail("the worker outlived its parent")


def test_worker_started_after_its_parent_died_exits():
    # -1 is never the parent's pid (1 would be, where the test runner is a container's init)
    code = "from certify.process import die_with_parent; die_with_parent(-1); import time; time.sleep(30)"
    t0 = time.monotonic()
    out = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        timeout=30,
    )
    assert out.returncode == 1 and time.monotonic() - t0 < 20
