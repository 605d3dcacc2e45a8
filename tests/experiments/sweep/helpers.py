"""Shared fixtures of the sweep tests: problem files, SPEC files, single-command certificates, and the
checks that a sweep directory holds each job exactly once and nothing half-written."""

from __future__ import annotations

import contextlib
import io
import json
import os
from pathlib import Path

from certify import synthetic_problem
from experiments.cli.main import main

__all__ = [
    "make_problems",
    "write_spec",
    "single_certificate",
    "strip_timing",
    "sweep_certificates",
    "assert_complete",
    "descends_from",
    "chdir",
    "CERTIFY_SPEC",
    "tagged_pids",
    "TAG_VAR",
]

#: environment variable that marks every process a test's driver starts (inherited by Ray's)
TAG_VAR = "MDCERT_TEST_TAG"

#: 4 problems x p in {1.75, 2}: the 8-job certify sweep of the tests
CERTIFY_SPEC = """kind = "certify"
[grid]
problem = ["data/*.npz"]
p = ["1.75", "2"]
alpha = ["opt"]
digits = [30]
"""


def make_problems(
    folder: Path, seeds=(1, 2, 3, 4), *, n: int = 6, T: int = 8, d: int = 10
) -> list[Path]:
    """Seeded synthetic problems ``folder/data/pSEED.npz``."""
    data = folder / "data"
    data.mkdir(parents=True, exist_ok=True)
    paths = []
    for s in seeds:
        path = data / f"p{s}.npz"
        synthetic_problem(n=n, T=T, d=d, seed=s).save(path)
        paths.append(path)
    return paths


def write_spec(folder: Path, text: str, name: str = "sweep.toml") -> Path:
    path = folder / name
    path.write_text(text)
    return path


def strip_timing(cert: dict) -> dict:
    """A certificate without its timing field (``info.seconds``)."""
    out = json.loads(json.dumps(cert))
    out.get("info", {}).pop("seconds", None)
    return out


def single_certificate(
    problem: Path, p: str, out: Path, *, digits: int = 30, alpha: str = "opt"
) -> dict:
    """What ``mdcert certify`` writes for one job, run as the single command."""
    with contextlib.redirect_stdout(io.StringIO()):
        code = main(
            [
                "certify",
                str(problem),
                "--p",
                p,
                "--alpha",
                alpha,
                "--digits",
                str(digits),
                "-o",
                str(out),
            ]
        )
    assert code == 0
    return json.loads(out.read_text())


def sweep_certificates(sweep: Path) -> dict[tuple[str, str], dict]:
    """(problem label, p) -> the certificate of every done record of a certify sweep."""
    out = {}
    for rec_file in sweep.glob("records/*/*/record.json"):
        rec = json.loads(rec_file.read_text())
        if rec["status"] == "done":
            key = (rec["labels"]["problem"], rec["labels"]["p"])
            assert key not in out, f"two records for {key}"
            out[key] = json.loads((rec_file.parent / "cert.json").read_text())
    return out


def assert_complete(sweep: Path, expected: int) -> list[dict]:
    """Every record whole, no temporary directory left, each key once among the records; the index
    holds one line per key of its latest run and no key is both missing and recorded."""
    tmp = [p for p in sweep.glob("records/*/.*")]
    assert not tmp, f"leftover temporary records: {tmp}"
    records = [json.loads(p.read_text()) for p in sweep.glob("records/*/*/record.json")]
    keys = [r["key"] for r in records]
    assert len(keys) == len(set(keys)) == expected
    for r in records:
        assert Path(sweep, "records", r["key"][:2], r["key"]).is_dir()
    lines = [json.loads(t) for t in (sweep / "index.jsonl").read_text().splitlines()]
    assert {ln["key"] for ln in lines} == set(keys)
    done = [ln["key"] for ln in lines if ln["status"] == "done"]
    assert len(done) == len(set(done)), "a finished job was indexed twice"
    return records


def descends_from(pid: int, ancestor: int) -> bool:
    """Whether process ``pid`` is a descendant of ``ancestor`` (/proc parent chain)."""
    seen = 0
    while pid > 1 and seen < 64:
        if pid == ancestor:
            return True
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            return False
        pid = int(stat.rsplit(")", 1)[1].split()[1])
        seen += 1
    return pid == ancestor


@contextlib.contextmanager
def chdir(path: Path):
    old = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(old)


def tagged_pids(tag: str) -> dict[int, str]:
    """Live processes whose environment holds ``TAG_VAR=tag`` (a driver a test started and every
    process it started in turn, Ray's included): pid -> command name."""
    needle = f"{TAG_VAR}={tag}".encode()
    out = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            env = Path(f"/proc/{entry}/environ").read_bytes().split(b"\0")
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        if needle in env and stat[stat.rindex(")") + 2] != "Z":
            out[int(entry)] = stat[stat.index("(") + 1 : stat.rindex(")")]
    return out
