"""The result directory of a sweep: one record directory per job key, an append-only index, a lock.

    SWEEP/sweep.json                 the latest SPEC (text, sha256), kind, mdcert version
    SWEEP/index.jsonl                one line per finished job, appended by the driver as jobs finish
    SWEEP/records/ab/abcdef.../      record.json + the command's outputs + stdout.txt, stderr.txt
    SWEEP/summary.md, verdicts.png   written at the end of a run

A worker builds a record in ``records/ab/.KEY.tmp-HOST-PID-RAND`` and renames it to
``records/ab/KEY`` when record.json (written last) is complete, so a record is whole or absent; a
second attempt that finds a finished record keeps it and discards its own. The index is a log (a
key may appear once per run that finished it); the record directory is the truth, and a finished
record missing from the index (a driver stopped between the two) is added on the next run.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import shutil
import socket
import uuid
from contextlib import contextmanager
from enum import Enum
from pathlib import Path
from typing import Iterator

from certify.errors import MdcertError
from certify.io.jsonenc import dumps

from experiments.sweep.jobs import file_sha256

__all__ = ["JobStatus", "Store", "RECORD", "INDEX", "META", "SUMMARY", "FIGURE", "index_line"]

RECORD = "record.json"
INDEX = "index.jsonl"
META = "sweep.json"
SUMMARY = "summary.md"
FIGURE = "verdicts.png"
RECORDS = "records"
LOCK = ".lock"
#: record fields copied into the index line
INDEX_FIELDS = (
    "key",
    "status",
    "verdict",
    "exit_code",
    "error",
    "seconds",
    "cpu_seconds",
    "attempt",
    "labels",
    "host",
    "finished_at",
)


class JobStatus(Enum):
    """A recorded job: ``done`` (the command finished with one of its answer codes) or ``failed``."""

    DONE = "done"
    FAILED = "failed"


def index_line(record: dict) -> dict:
    """The index's line for a record (no argv, inputs or outputs)."""
    return {k: record.get(k) for k in INDEX_FIELDS}


class Store:
    """A sweep directory (see the module docstring). Workers and the driver both use it."""

    def __init__(self, root: str | os.PathLike) -> None:
        self.root = Path(root)
        self._index_ended = False

    # ------------------------------------------------------------------------------ records
    def record_dir(self, key: str) -> Path:
        return self.root / RECORDS / key[:2] / key

    def new_tmp(self, key: str) -> Path:
        """A fresh temporary record directory for one attempt at ``key``."""
        shard = self.root / RECORDS / key[:2]
        shard.mkdir(parents=True, exist_ok=True)
        tmp = shard / f".{key}.tmp-{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        tmp.mkdir()
        return tmp

    def stale_attempts(self, key: str) -> int:
        """Temporary directories left for ``key`` by attempts whose worker died."""
        shard = self.root / RECORDS / key[:2]
        if not shard.is_dir():
            return 0
        return sum(1 for p in shard.iterdir() if p.name.startswith(f".{key}.tmp-"))

    def read_record(self, key: str) -> dict | None:
        """The record.json of ``key`` (None when absent or unreadable)."""
        try:
            with open(self.record_dir(key) / RECORD) as fh:
                record = json.load(fh)
        except (OSError, ValueError):
            return None
        return record if isinstance(record, dict) else None

    def finished(self, key: str) -> dict | None:
        """The record of ``key`` if it is done and verified: its key matches and every output it
        lists is on disk with the recorded size and sha256; else None (the job runs again)."""
        record = self.read_record(key)
        if (
            record is None
            or record.get("key") != key
            or record.get("status") != JobStatus.DONE.value
        ):
            return None
        folder = self.record_dir(key)
        outputs = record.get("outputs")
        if not isinstance(outputs, dict):
            return None
        for rel, meta in outputs.items():
            path = folder / rel
            try:
                if path.stat().st_size != meta["bytes"] or file_sha256(path) != meta["sha256"]:
                    return None
            except (OSError, KeyError, TypeError):
                return None
        return record

    def commit(self, tmp: Path, key: str) -> dict | None:
        """Rename a complete temporary record into place.

        Returns None when ``tmp`` became the record, or the finished record already in place (another
        attempt won; ``tmp`` is discarded). A failed or corrupt record in place is replaced.
        """
        final = self.record_dir(key)
        try:
            os.rename(tmp, final)
            return None
        except OSError as exc:
            if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST):
                raise
        existing = self.finished(key)
        if existing is not None:
            shutil.rmtree(tmp, ignore_errors=True)
            return existing
        old = final.with_name(f".{key}.old-{os.getpid()}-{uuid.uuid4().hex[:8]}")
        os.rename(final, old)
        os.rename(tmp, final)
        shutil.rmtree(old, ignore_errors=True)
        return None

    def clean_tmp(self) -> int:
        """Remove temporary and replaced record directories (call with no worker running)."""
        base = self.root / RECORDS
        removed = 0
        if not base.is_dir():
            return 0
        for shard in base.iterdir():
            if not shard.is_dir():
                continue
            for p in shard.iterdir():
                if p.name.startswith(".") and (".tmp-" in p.name or ".old-" in p.name):
                    shutil.rmtree(p, ignore_errors=True)
                    removed += 1
        return removed

    # -------------------------------------------------------------------------------- index
    def append_index(self, line: dict) -> None:
        """Append one line to the index and flush it (driver only: one writer). A torn last line left
        by a killed driver is ended first, so it stays one unreadable line and this one stays whole."""
        text = dumps(line, separators=(",", ":"), default=str) + "\n"
        path = self.root / INDEX
        if not self._index_ended:
            try:
                with open(path, "rb") as fh:
                    fh.seek(-1, os.SEEK_END)
                    if fh.read(1) != b"\n":
                        text = "\n" + text
            except OSError:  # absent or empty
                pass
            self._index_ended = True
        with open(path, "a") as fh:
            fh.write(text)

    def iter_index(self) -> Iterator[dict]:
        """The index lines in order; a torn last line (a killed driver) is skipped."""
        path = self.root / INDEX
        if not path.is_file():
            return
        with open(path) as fh:
            for text in fh:
                try:
                    line = json.loads(text)
                except ValueError:
                    continue
                if isinstance(line, dict) and isinstance(line.get("key"), str):
                    yield line

    # ------------------------------------------------------------------------- directory
    @contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the sweep directory's lock (one driver per directory)."""
        self.root.mkdir(parents=True, exist_ok=True)
        fh = open(self.root / LOCK, "a+")
        try:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                raise MdcertError(
                    f"another mdcert sweep is writing {str(self.root)!r}; wait for it to "
                    f"finish or give another -o"
                ) from None
            yield
        finally:
            fh.close()

    def check_root(self, inputs: list[Path], *, option: str = "-o") -> None:
        """Refuse a directory that is not a sweep directory, or one holding an input of the sweep."""
        root = self.root
        if root.exists() and not root.is_dir():
            raise MdcertError(
                f"{option} {str(root)!r} exists and is not a directory; give a sweep directory"
            )
        if (
            root.is_dir()
            and any(p.name != LOCK for p in root.iterdir())
            and not (root / META).is_file()
        ):
            raise MdcertError(
                f"{option} {str(root)!r} is a non-empty directory that is not a sweep's; "
                f"give a new or an earlier sweep's directory"
            )
        resolved = root.resolve()
        for path in inputs:
            p = Path(path).resolve()
            if p == resolved or resolved in p.parents:
                raise MdcertError(
                    f"{option} {str(root)!r} holds the input {str(path)!r}; give a sweep "
                    f"directory that contains none of the inputs"
                )
