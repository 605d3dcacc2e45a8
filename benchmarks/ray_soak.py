"""Soak test of ``mdcert sweep --engine ray`` under signals (issue 21, item 5): R runs of one sweep,
each stopped by a signal at a random moment, the same sweep directory resumed each time.

Each run starts ``python -m experiments.cli sweep ... --engine ray --workers 2`` as the leader of a
new process group, waits a uniform random 2-25 s (seeded) and sends the signal: to the driver's pid
on odd runs (``kill -INT PID``), to its whole process group on even runs (what a terminal's Ctrl-C
does). Measured per run:

* the exit code (130 for SIGINT, 143 for SIGTERM; 0 when the sweep finished first, then the run does
  not count), segfaults (exit -11 or "Segmentation" on stderr);
* stderr: exactly one line starting ``mdcert sweep:`` (anything else, a native stack, a Ray log line,
  a traceback, is counted as stray);
* processes left 5 s after the driver exited: every process whose environment carries this run's
  tag (the driver's environment variable ``MDCERT_SOAK_TAG``, inherited by every process the
  driver starts, Ray's included);
* records lost: every record finished before this run must still be there afterwards, whole, with
  the same ``finished_at`` (not lost, not recomputed); no temporary record may remain.

At the end one run without a signal finishes the grid (exit 0, every earlier record unchanged).
HOME and TMPDIR of the runs point into a temporary folder. Prints one markdown row per run and a
summary with the 1-minute load average before and after.

Usage: python benchmarks/ray_soak.py [--runs 24] [--signal INT|TERM] [--min-s 2] [--max-s 25] [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from certify import synthetic_problem  # noqa: E402


def load() -> float:
    return os.getloadavg()[0]


def tagged(tag: str) -> dict[int, str]:
    """Live processes whose environment holds ``MDCERT_SOAK_TAG=tag``: pid -> command name."""
    needle = f"MDCERT_SOAK_TAG={tag}".encode() + b"\0"
    out = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            env = Path(f"/proc/{entry}/environ").read_bytes()
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        if needle in env + b"\0" and stat[stat.rindex(")") + 2] != "Z":
            out[int(entry)] = stat[stat.index("(") + 1 : stat.rindex(")")]
    return out


def failed(out: Path) -> int:
    """Records whose job is recorded failed (none of these jobs fails on its own: a failed record means
    an interruption was taken for the command's outcome)."""
    n = 0
    for path in out.glob("records/*/*/record.json"):
        try:
            n += json.loads(path.read_text()).get("status") == "failed"
        except (OSError, ValueError):
            pass
    return n


def finished(out: Path) -> dict[str, str]:
    """key -> finished_at of every whole record in the sweep directory."""
    recs = {}
    for path in out.glob("records/*/*/record.json"):
        try:
            rec = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if rec.get("status") == "done":
            recs[rec["key"]] = rec["finished_at"]
    return recs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=24)
    ap.add_argument("--signal", choices=("INT", "TERM"), default="INT")
    ap.add_argument("--min-s", type=float, default=2.0)
    ap.add_argument("--max-s", type=float, default=25.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--problems", type=int, default=120, help="problems in the grid (x 2 values of p)"
    )
    args = ap.parse_args()
    sig = getattr(signal, f"SIG{args.signal}")
    want = 128 + sig
    rng = random.Random(args.seed)
    tmp = Path(tempfile.mkdtemp(prefix="mdcert-ray-soak-"))
    try:
        (tmp / "home").mkdir()
        (tmp / "tmp").mkdir()
        data = tmp / "data"
        data.mkdir()
        for s in range(args.problems):  # about a second a certification on this machine
            synthetic_problem(n=50, T=16, d=14, seed=s).save(data / f"p{s}.npz")
        spec = tmp / "sweep.toml"
        spec.write_text('kind = "certify"\n[grid]\nproblem = ["data/*.npz"]\np = ["1.75", "2"]\n')
        out = tmp / "SWEEP"
        total = 2 * args.problems
        cmd = [
            sys.executable,
            "-m",
            "experiments.cli",
            "sweep",
            str(spec),
            "-o",
            str(out),
            "--engine",
            "ray",
            "--workers",
            "2",
            "--progress",
            "off",
        ]
        base_env = {
            **os.environ,
            "PYTHONPATH": str(ROOT),
            "HOME": str(tmp / "home"),
            "TMPDIR": str(tmp / "tmp"),
        }
        l0 = load()
        print(
            "| run | to | after s | exit | stderr lines | stray stderr | left after 5 s | records before/after | lost |"
        )
        print("|---|---|---|---|---|---|---|---|---|")
        tally = {
            "runs": 0,
            "want": 0,
            "segv": 0,
            "stray": 0,
            "left": 0,
            "lost": 0,
            "finished_first": 0,
        }
        print_failed = 0
        for run in range(1, args.runs + 1):
            before = finished(out)
            tag = f"{os.getpid()}-{run}"
            delay = rng.uniform(args.min_s, args.max_s)
            to_group = run % 2 == 0
            proc = subprocess.Popen(
                cmd,
                env={**base_env, "MDCERT_SOAK_TAG": tag},
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                start_new_session=True,
            )
            try:
                _, err = proc.communicate(timeout=delay)
            except subprocess.TimeoutExpired:
                if to_group:
                    os.killpg(proc.pid, sig)
                else:
                    proc.send_signal(sig)
                try:
                    _, err = proc.communicate(timeout=120)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    _, err = proc.communicate()
                    err += "\n[soak: driver still running 120 s after the signal; killed]"
            time.sleep(5)
            left = tagged(tag)
            for pid in left:  # leave nothing behind for the next run (ours, by tag)
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            after = finished(out)
            lost = sum(1 for k, t in before.items() if after.get(k) != t)
            tmp_left = list(out.glob("records/*/.*"))
            print_failed = max(print_failed, failed(out))
            lines = [ln for ln in err.splitlines() if ln.strip()]
            stray = [ln for ln in lines if not ln.startswith("mdcert sweep:")] + (
                [] if len(lines) <= 1 else lines[1:]
            )
            segv = proc.returncode == -11 or "Segmentation" in err
            if proc.returncode == 0:
                tally["finished_first"] += 1
            tally["runs"] += 1
            tally["want"] += proc.returncode == want
            tally["segv"] += segv
            tally["stray"] += bool(stray)
            tally["left"] += len(left)
            tally["lost"] += lost + len(tmp_left)
            if segv or stray or proc.returncode not in (0, want):
                print("    stderr: " + " / ".join(lines)[:3000], flush=True)
            print(
                f"| {run} | {'group' if to_group else 'pid'} | {delay:.1f} | {proc.returncode} | {len(lines)} | "
                f"{json.dumps(stray[:2])[:200] if stray else '-'} | "
                f"{', '.join(sorted(set(left.values()))) or 0} | {len(before)}/{len(after)} | "
                f"{lost}{f' (+{len(tmp_left)} tmp)' if tmp_left else ''} |",
                flush=True,
            )
            if len(after) == total:
                print("(the grid is finished; the remaining runs would not be interrupted)")
                break
        before = finished(out)
        final = subprocess.run(
            cmd,
            env={**base_env, "MDCERT_SOAK_TAG": "final"},
            capture_output=True,
            text=True,
            timeout=3600,
        )
        after = finished(out)
        lost = sum(1 for k, t in before.items() if after.get(k) != t)
        l1 = load()
        print_failed = max(print_failed, failed(out))
        print(
            f"\nfinal run: exit {final.returncode}, {len(after)} of {total} records, {lost} earlier records "
            f"lost or recomputed; stdout: {(final.stdout.strip().splitlines() or ['-'])[-2 if final.stdout.count(chr(10)) >= 2 else -1]} {final.stderr.strip()[-300:]}"
        )
        print(
            f"summary: {tally['runs']} runs with SIG{args.signal}: {tally['want']} exits {want}, "
            f"{tally['finished_first']} finished before the signal, {tally['segv']} segfaults, "
            f"{tally['stray']} runs with stray stderr, {tally['left']} processes left after 5 s, "
            f"{tally['lost'] + lost} records lost, {print_failed} jobs recorded failed; load {l0:.2f} before, {l1:.2f} after"
        )
        ok = (
            tally["want"] + tally["finished_first"] == tally["runs"]
            and not tally["segv"]
            and not tally["stray"]
            and not tally["left"]
            and not tally["lost"]
            and not lost
            and final.returncode == 0
            and not print_failed
            and len(after) == total
        )
        return 0 if ok else 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
