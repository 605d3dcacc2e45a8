"""Progress bars with ETA on a terminal only (experiments/runtime/progress.py)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pytest

from experiments.runtime.progress import progress, show_progress


def test_shown_only_when_stderr_is_a_terminal(monkeypatch, capsys) -> None:
    monkeypatch.setattr(sys.stderr, "isatty", lambda: False, raising=False)
    assert not show_progress(None) and show_progress(True) and not show_progress(False)
    with progress(10, desc="quiet") as bar:
        bar.update(10)
        bar.stage("x", force=True)
        bar.write("a result line")
    out, err = capsys.readouterr()
    assert err == "" and out == "a result line\n"  # nothing on stderr: pipes and CI logs stay clean
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    assert show_progress(None)


def test_a_shown_bar_has_counts_and_an_eta(monkeypatch, capsys) -> None:
    with progress(10, desc="work", unit="step", enabled=True) as bar:
        bar.update(4)
        bar.stage("phase 1", force=True)
        bar.set(3)  # never backwards
        bar.set(6)
        bar.stage("phase 2", force=True)
    err = capsys.readouterr().err
    assert (
        "work:" in err and "4/10" in err and "6/10" in err and "phase 2" in err and "<" in err
    )  # elapsed<ETA
    with progress(1.0, desc="certify", fraction=True, enabled=True) as bar:
        bar.set(0.5)
        bar.stage("refine", force=True)
    assert "50%" in capsys.readouterr().err


def _tty_run(argv: list[str], tmp_path) -> tuple[int, str, str]:
    """Run the CLI with stderr on a pseudo-terminal (stdout a pipe): what a user at a terminal sees."""
    import fcntl
    import pty
    import struct
    import termios

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 120, 0, 0))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "experiments.cli", *argv],
        stdout=subprocess.PIPE,
        stderr=slave,
        stdin=subprocess.DEVNULL,
        cwd=tmp_path,
        env=env,
    )
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    out = proc.stdout.read().decode()
    proc.wait()
    os.close(master)
    return proc.returncode, out, b"".join(chunks).decode(errors="replace")


ETA = re.compile(r"\d+/\d+ \[\d\d:\d\d<\d\d:\d\d")  # "640/2000 [00:01<00:02": elapsed < remaining


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="pty with a window size")
@pytest.mark.parametrize(
    "argv, bar",
    [
        (
            ["certify", "p.npz", "--p", "1.5", "--digits", "400"],
            re.compile(r"certify: .*\d+%\|.*<"),
        ),
        (
            [
                "check",
                "p.npz",
                "--p",
                "1.5",
                "--theorem",
                "10",
                "--init",
                "W0.npy",
                "--lr",
                "0.1",
                "--mu",
                "0.5",
                "--R",
                "1",
                "--steps",
                "3000",
            ],
            re.compile(r"check: training path: .*" + ETA.pattern),
        ),
        (
            ["regpath", "p.npz", "--p", "1.5", "--radii", "1:100:4", "-o", "rr"],
            re.compile(r"regpath: radii: .*" + ETA.pattern),
        ),
    ],
    ids=["certify-high-digits", "check-with-a-path", "regpath"],
)
def test_commands_show_progress_on_a_terminal_and_not_in_a_pipe(tmp_path, argv, bar) -> None:
    """The long commands draw a bar with an ETA on a terminal (stderr a pty), and nothing on stderr in
    a pipe."""
    import numpy as np

    from certify.synth import synthetic_problem

    synthetic_problem(n=3, T=4, d=3, seed=5).save(tmp_path / "p.npz")
    np.save(tmp_path / "W0.npy", np.random.default_rng(0).standard_normal((3, 3)))
    rc, out, err = _tty_run(argv, tmp_path)
    assert rc == 0 and out.strip()
    assert bar.search(err) and "\r" in err, err[-400:]  # the bar, redrawn in place
    if (tmp_path / "rr").exists():  # regpath refuses to overwrite its run
        shutil.rmtree(tmp_path / "rr")
    piped = subprocess.run(
        [sys.executable, "-m", "experiments.cli", *argv],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert piped.returncode == 0 and piped.stderr == "" and "\r" not in piped.stdout
