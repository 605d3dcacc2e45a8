"""``mdcert paths`` with certification workers: SIGKILL of the command kills its workers (stdout and stderr
reach end-of-file at once), Ctrl-C exits 130 with one line and no worker traceback (issue 11 item 12).
Linux only: the process tree is read from /proc."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests.experiments.cli.terminal import as_from_a_terminal

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc (Linux)")

#: certification at 1000 digits keeps both workers busy for seconds, and 10^6 steps keep the command
#: training for minutes even on a quiet machine (the tests stop it after about two seconds)
ARGS = [
    "paths",
    "--trials",
    "4",
    "--steps",
    "1000000",
    "--digits",
    "1000",
    "--workers",
    "2",
    "--progress",
    "off",
]


def _ppid(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()
    return None if fields[0] == "Z" else int(fields[1])  # a zombie is dead


def _descendants(root: int) -> set[int]:
    pids = [int(d) for d in os.listdir("/proc") if d.isdigit()]
    parent = {p: _ppid(p) for p in pids}
    out, frontier = set(), {root}
    while frontier:
        frontier = {p for p, pp in parent.items() if pp in frontier} - out
        out |= frontier
    return out


def _alive(pids: set[int]) -> set[int]:
    return {p for p in pids if _ppid(p) is not None}


def _sigint_state(pid: int) -> set[str]:
    """How process ``pid`` treats SIGINT: a subset of {'caught', 'ignored', 'blocked'} (/proc/PID/status;
    'blocked' is the main thread's mask, set for a moment while workers start)."""
    masks = dict(
        line.split(":\t")
        for line in Path(f"/proc/{pid}/status").read_text().splitlines()
        if ":\t" in line
    )
    bit = 1 << (signal.SIGINT - 1)
    return {
        name
        for name, key in (("blocked", "SigBlk"), ("ignored", "SigIgn"), ("caught", "SigCgt"))
        if int(masks[key], 16) & bit
    }


def _start(tmp_path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "experiments.cli", *ARGS, "-o", str(tmp_path / "run")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        env=env,
        preexec_fn=as_from_a_terminal,
    )
    deadline, kids = (
        time.monotonic() + 180,
        set(),
    )  # torch's import alone takes long on a loaded machine
    while (
        time.monotonic() < deadline and len(kids) < 3 and proc.poll() is None
    ):  # two workers, resource tracker
        time.sleep(0.2)
        kids = _descendants(proc.pid)
    time.sleep(1.5)  # the workers are solving now
    kids = _descendants(proc.pid)
    if len(kids) < 3 or proc.poll() is not None:
        _kill_all(proc)
        proc.communicate()
        pytest.fail(f"mdcert paths did not start its workers: {kids}")
    return proc, kids


def _kill_all(proc) -> None:
    """SIGKILL to the command, its process group and every descendant (a test that gives up)."""
    for pid in _descendants(proc.pid):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _assert_gone(kids: set[int], seconds: float = 30) -> None:
    """Every child ends within a few seconds (multiprocessing's resource tracker exits once the
    pipes of all its clients are closed)."""
    deadline = time.monotonic() + seconds
    while _alive(kids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(kids), f"processes outlived the command: {_alive(kids)}"


def _read_all(proc, seconds: float) -> tuple[bytes, bytes, float]:
    t0 = time.monotonic()
    try:
        out, err = proc.communicate(timeout=seconds)
    except subprocess.TimeoutExpired:
        _kill_all(proc)  # the command too: else communicate waits for it
        proc.communicate()
        pytest.fail(f"stdout/stderr still open {seconds} s after the signal: a worker holds them")
    return out, err, time.monotonic() - t0


def test_sigkill_kills_the_workers_and_closes_the_output(tmp_path):
    proc, kids = _start(tmp_path)
    os.kill(proc.pid, signal.SIGKILL)
    out, err, waited = _read_all(proc, 10)
    assert proc.returncode == -signal.SIGKILL and waited < 10
    _assert_gone(kids)
    assert not (tmp_path / "run").exists()


def test_ctrl_c_is_one_line_and_exit_130(tmp_path):
    proc, kids = _start(tmp_path)
    assert "caught" in _sigint_state(proc.pid)  # the command handles Ctrl-C
    os.killpg(proc.pid, signal.SIGINT)  # a terminal's Ctrl-C reaches the whole group
    out, err, waited = _read_all(
        proc, 120
    )  # bounds, not expectations: under 1 s on a quiet machine
    assert proc.returncode == 130, err
    assert err.decode().strip() == "mdcert paths: interrupted"
    _assert_gone(kids)
    assert (
        sorted(p.name for p in tmp_path.iterdir()) == []
    )  # no run directory, no temporary left behind
