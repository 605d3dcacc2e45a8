"""The local Ray instance of a sweep (experiments/sweep/ray_local.py) and how the driver stops it:
SIGINT and SIGTERM give one line and exit 130 / 143 with no Ray process left 5 s later, an address
where nothing listens fails in seconds, a dead raylet stops the sweep with one line.

Each test runs ``mdcert sweep --engine ray`` as a subprocess whose environment carries a tag
(`tagged_pids`): every process it starts, Ray's included, inherits it, so the test finds exactly its
own processes, checks that none is left, and kills (by pid) only those. HOME and TMPDIR point into
the test's folder.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

pytest.importorskip("ray")

from tests.experiments.sweep.helpers import (
    TAG_VAR,
    assert_complete,
    make_problems,
    tagged_pids,
    write_spec,
)  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]
SPEC = 'kind = "certify"\n[grid]\nproblem = ["data/*.npz"]\np = ["1.75", "2"]\n'


def _driver(tmp_path: Path, tag: str, *extra: str) -> subprocess.Popen:
    (tmp_path / "home").mkdir(exist_ok=True)
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "HOME": str(tmp_path / "home"),
        "TMPDIR": str(tmp_path),
        TAG_VAR: tag,
    }
    cmd = [
        sys.executable,
        "-m",
        "experiments.cli",
        "sweep",
        str(tmp_path / "sweep.toml"),
        "-o",
        str(tmp_path / "SWEEP"),
        "--engine",
        "ray",
        "--workers",
        "2",
        "--progress",
        "off",
        *extra,
    ]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def _wait_for(predicate, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def _finish(
    proc: subprocess.Popen, tag: str, *, after_s: float = 5.0
) -> tuple[str, dict[int, str]]:
    """The driver's stderr and the tagged processes alive ``after_s`` after it exited (then killed, by pid)."""
    try:
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    time.sleep(after_s)
    left = tagged_pids(tag)
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    return err, left


def _jobs_indexed(out: Path) -> int:
    index = out / "index.jsonl"
    return index.read_text().count("\n") if index.is_file() else 0


@pytest.mark.parametrize(
    "sig, when",
    [(signal.SIGINT, "start-up"), pytest.param(signal.SIGTERM, "jobs", marks=pytest.mark.slow)],
)
def test_a_signal_gives_one_line_its_exit_code_and_leaves_no_ray_process(
    tmp_path, sig, when
) -> None:
    make_problems(tmp_path, seeds=range(6), n=30, T=12, d=10)
    write_spec(tmp_path, SPEC)
    tag = f"signal-{os.getpid()}-{sig}"
    proc = _driver(tmp_path, tag)
    if when == "start-up":  # Ray's raylet exists: the driver is starting Ray or connecting to it
        seen = _wait_for(
            lambda: "raylet" in tagged_pids(tag).values() or proc.poll() is not None, 120
        )
    else:  # jobs are running
        seen = _wait_for(
            lambda: _jobs_indexed(tmp_path / "SWEEP") >= 1 or proc.poll() is not None, 180
        )
    assert seen and proc.poll() is None, "the sweep ended before the signal"
    proc.send_signal(sig)
    err, left = _finish(proc, tag)
    assert proc.returncode == 128 + sig, err
    lines = err.strip().splitlines()
    word = "interrupted" if sig == signal.SIGINT else r"terminated \(SIGTERM\)"
    assert len(lines) == 1 and re.match(
        rf"mdcert sweep: {word}[:;] .*rerun the same command to resume", lines[0]
    ), err
    assert left == {}, f"processes left 5 s after the driver exited: {left}"
    if when == "jobs":  # every indexed job has its whole record; a job that finished while the
        out = (
            tmp_path / "SWEEP"
        )  # driver stopped may have a record the index lacks (the next run indexes it)
        kept = int(re.search(r": (\d+) of 12 job", lines[0]).group(1))
        indexed = {json.loads(t)["key"] for t in (out / "index.jsonl").read_text().splitlines()}
        records = {
            r["key"]: r
            for r in map(json.loads, map(Path.read_text, out.glob("records/*/*/record.json")))
        }
        assert kept >= 1 and len(indexed) == kept and indexed <= set(records)
        assert all(r["status"] == "done" for r in records.values()), [
            r["error"] for r in records.values()
        ]
        assert not list(out.glob("records/*/.*"))


@pytest.mark.slow
def test_a_dead_raylet_stops_the_sweep_with_one_line(tmp_path) -> None:
    make_problems(tmp_path, seeds=range(6), n=30, T=12, d=10)
    write_spec(tmp_path, SPEC)
    tag = f"raylet-{os.getpid()}"
    proc = _driver(tmp_path, tag)
    assert _wait_for(lambda: _jobs_indexed(tmp_path / "SWEEP") >= 1 or proc.poll() is not None, 180)
    assert proc.poll() is None, "the sweep ended before the raylet was killed"
    raylet = [pid for pid, name in tagged_pids(tag).items() if name == "raylet"]
    assert len(raylet) == 1
    os.kill(raylet[0], signal.SIGKILL)
    t0 = time.monotonic()
    err, left = _finish(proc, tag)
    assert proc.returncode == 1, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and re.match(
        r"mdcert sweep: error: .*(raylet|Ray instance).*stopping the sweep "
        r"\(finished records are kept; rerun to resume\)",
        lines[0],
    ), err
    assert time.monotonic() - t0 < 60
    assert left == {}, f"processes left 5 s after the driver exited: {left}"
    records = assert_complete(tmp_path / "SWEEP", _count_records(tmp_path / "SWEEP"))
    assert all(r["status"] == "done" for r in records)  # no job charged with the instance's death


@pytest.mark.slow
def test_a_killed_driver_takes_its_ray_instance_with_it(tmp_path) -> None:
    make_problems(tmp_path, seeds=range(6), n=30, T=12, d=10)
    write_spec(tmp_path, SPEC)
    tag = f"kill-{os.getpid()}"
    proc = _driver(tmp_path, tag)
    assert _wait_for(lambda: "raylet" in tagged_pids(tag).values() or proc.poll() is not None, 120)
    assert proc.poll() is None
    ours = {p for p in Path(tempfile.gettempdir()).glob("mdcert-ray-*") if _holds_tag(p, tag)}
    proc.kill()  # SIGKILL: the driver cannot clean up
    _, left = _finish(proc, tag)
    assert left == {}, f"processes left 5 s after the driver was killed: {left}"
    assert ours and not any(p.exists() for p in ours), "the instance's temporary directory was left"


def _holds_tag(folder: Path, tag: str) -> bool:
    """Whether a Ray temporary directory belongs to this test's driver (its supervisor's environment)."""
    return any(
        tag.encode() in Path(f"/proc/{pid}/environ").read_bytes()
        for pid in tagged_pids(tag)
        if str(folder) in Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    )


def _count_records(out: Path) -> int:
    return len(list(out.glob("records/*/*/record.json")))


def test_an_address_where_nothing_listens_fails_in_seconds_with_one_line(tmp_path) -> None:
    make_problems(tmp_path, seeds=(1,))
    write_spec(tmp_path, SPEC)
    tag = f"address-{os.getpid()}"
    t0 = time.monotonic()
    proc = _driver(tmp_path, tag, "--address", "127.0.0.1:1")
    err, left = _finish(proc, tag, after_s=0.0)
    assert time.monotonic() - t0 < 30
    assert proc.returncode == 1
    lines = err.strip().splitlines()
    assert len(lines) == 1 and re.match(
        r"mdcert sweep: error: cannot reach the Ray cluster at '127\.0\.0\.1:1' "
        r"\(.*\); start it with 'ray start --head' or check --address",
        lines[0],
    ), err
    assert left == {}


def test_probe_address_refuses_a_closed_port_and_accepts_a_listening_one() -> None:
    import socket

    from certify.errors import MdcertError
    from experiments.sweep.ray_engine import probe_address

    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        probe_address(f"127.0.0.1:{port}")
        probe_address(f"ray://127.0.0.1:{port}")
    for address in (f"127.0.0.1:{port}", f"ray://127.0.0.1:{port}", "nonexistent.invalid:6379"):
        t0 = time.monotonic()
        with pytest.raises(
            MdcertError, match=r"cannot reach the Ray cluster at .* check --address"
        ):
            probe_address(address, timeout_s=5)
        assert time.monotonic() - t0 < 60  # a hang guard: name lookup is not bounded by timeout_s
    probe_address("auto")  # Ray finds (or refuses) a local cluster itself
