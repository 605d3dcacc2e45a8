"""The study directory and its resumable runs (docs/theory.md section 6.5).

    DIR/study.json          kind, options, mdcert's study format, the runs of the last invocation
    DIR/runs/KEY.json       one record per finished run (training, and the analyses of a final run)
    DIR/summary.json, DIR/report.md, DIR/*.png   written by the kind's report at the end

A run is identified by the SHA-256 of its configuration (canonical JSON, with `FORMAT`); a record is
written through a temporary name and renamed, so it is whole or absent, and `StudyContext.run_unit`
returns a finished record instead of redoing it: an interrupted study resumes where it stopped, and a
second invocation with the same options trains nothing. A directory holding anything but a study
of the same kind is refused before any work.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from certify.errors import MdcertError

from experiments.outputs import write_text_atomic

__all__ = ["FORMAT", "run_key", "StudyContext", "open_study", "dumps"]

FORMAT = "mdcert-study-1"
META = "study.json"
RUNS = "runs"


def _clean(obj):
    """JSON-safe: NaN and infinities become None; tuples become lists."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {str(k): _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    if hasattr(obj, "item") and callable(obj.item):   # numpy / torch scalars
        return _clean(obj.item())
    return obj


def dumps(obj) -> str:
    """Strict JSON text (no NaN), indented, sorted keys."""
    return json.dumps(_clean(obj), indent=1, sort_keys=True, allow_nan=False) + "\n"


def run_key(config: dict) -> str:
    """SHA-256 hex of the canonical JSON of ``config`` and `FORMAT`."""
    text = json.dumps({"format": FORMAT, "config": _clean(config)}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass
class StudyContext:
    """What a study kind runs with: its directory, device, progress and the run store."""

    root: Path
    kind: str
    device: object
    progress: bool = True
    trained: int = 0
    reused: int = 0
    keys: list[str] = field(default_factory=list)
    seconds: float = 0.0
    cpu_seconds: float = 0.0

    def record_path(self, key: str) -> Path:
        return self.root / RUNS / f"{key}.json"

    def load(self, key: str) -> dict | None:
        """The finished record ``key``, or None (an unreadable record counts as absent)."""
        path = self.record_path(key)
        try:
            return json.loads(path.read_text())
        except (OSError, ValueError):
            return None

    def run_unit(self, config: dict, work: Callable[[dict], dict], *, label: str = "") -> dict:
        """The record of ``config``: read if finished, else ``work(config)`` stored atomically."""
        key = run_key(config)
        self.keys.append(key)
        found = self.load(key)
        if found is not None and found.get("config") == _clean(config):
            self.reused += 1
            return found
        t0, c0 = time.perf_counter(), time.process_time()
        result = work(config)
        seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
        record = {"key": key, "label": label, "config": config, "seconds": seconds, "cpu_seconds": cpu,
                  "load": os.getloadavg()[0], "result": result}
        write_text_atomic(self.record_path(key), dumps(record))
        self.trained += 1
        self.seconds += seconds
        self.cpu_seconds += cpu
        return json.loads(dumps(record))

    def bar(self, total: int, desc: str, *, leave: bool = True):
        """A tqdm bar on stderr with ETA (disabled when stderr is not a terminal or progress is off)."""
        from tqdm import tqdm

        return tqdm(total=total, desc=desc, leave=leave, file=sys.stderr, dynamic_ncols=True,
                    disable=(not self.progress) or None, mininterval=0.5)

    def write(self, name: str, text: str) -> Path:
        return write_text_atomic(self.root / name, text)


def open_study(root: str | os.PathLike, *, kind: str, options: dict, device, progress: bool = True) -> StudyContext:
    """Create or reopen the study directory ``root`` for ``kind``; refuse anything else there.

    Raises:
        MdcertError: ``root`` is a file, an unwritable place, a non-empty directory that is not a
            study, or a study of another kind.
    """
    from experiments.outputs import check_output_dir

    out = Path(root)
    meta = out / META
    if out.is_dir() and any(out.iterdir()):
        if not meta.is_file():
            raise MdcertError(f"-o {str(out)!r} exists, is not empty and holds no {META}; give a new directory "
                              f"or a study directory to resume")
        try:
            old = json.loads(meta.read_text())
        except (OSError, ValueError):
            raise MdcertError(f"-o {str(out)!r}: {META} is not readable JSON; give a new directory") from None
        if not isinstance(old, dict) or old.get("kind") != kind:
            raise MdcertError(f"-o {str(out)!r} holds a study of kind {old.get('kind') if isinstance(old, dict) else None!r}, "
                              f"not {kind!r}; give another directory")
    else:
        check_output_dir(out, option="-o", overwrite=False)
    (out / RUNS).mkdir(parents=True, exist_ok=True)
    write_text_atomic(meta, dumps({"format": FORMAT, "kind": kind, "options": options, "status": "running"}))
    return StudyContext(out, kind, device, progress)
