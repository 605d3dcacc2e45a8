"""Sweep jobs and their content keys.

A job's key is the sha256 of the canonical JSON of (kind, parameters with every input file replaced
by the sha256 of its bytes, mdcert version): the same computation on the same bytes has the same key
wherever the files live, and editing an input or upgrading mdcert gives new keys (old records stay).
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from experiments.sweep.spec import SweepSpec

__all__ = ["Job", "job_key", "mdcert_version", "file_sha256", "FileDigests", "iter_jobs"]


@dataclass(frozen=True)
class Job:
    """One grid point, as sent to a worker (small and picklable).

    Attributes:
        key: the content key (64 hex digits).
        kind: the `JobKind` name.
        values: (parameter, command-line value) pairs; files as absolute paths.
        labels: (parameter, label) pairs as written in the SPEC (for the index and the summary).
        inputs: (absolute path, sha256) of every input file, checked by the worker before it runs.
        version: the driver's mdcert version (the worker refuses to run under another one).
        store: the sweep directory (absolute; on shared storage for a cluster).
    """

    key: str
    kind: str
    values: tuple[tuple[str, object], ...]
    labels: tuple[tuple[str, str], ...]
    inputs: tuple[tuple[str, str], ...]
    version: str
    store: str


def mdcert_version() -> str:
    """The installed mdcert distribution's version (``"unknown"`` when run from a bare source tree)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("mdcert")
    except PackageNotFoundError:
        return "unknown"


def file_sha256(path: str | os.PathLike) -> str:
    """sha256 of a file's bytes, read in 1 MiB chunks."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(2**20), b""):
            h.update(chunk)
    return h.hexdigest()


class FileDigests:
    """sha256 of input files, each read once per run of a sweep: the first reading is the run's
    truth (a worker that later sees other bytes fails its job rather than run on them)."""

    def __init__(self) -> None:
        self._cache: dict[str, str] = {}

    def __call__(self, path: str) -> str:
        if path not in self._cache:
            self._cache[path] = file_sha256(path)
        return self._cache[path]


def job_key(kind: str, values: dict, files: dict[str, str], version: str) -> str:
    """The content key of a job: ``files`` maps each file parameter to its sha256."""
    params = {
        name: ({"sha256": files[name]} if name in files else value)
        for name, value in values.items()
    }
    text = json.dumps(
        {"kind": kind, "params": params, "version": version},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=True,
    )
    return hashlib.sha256(text.encode()).hexdigest()


def iter_jobs(
    spec: SweepSpec,
    store: str | Path,
    *,
    digests: FileDigests | None = None,
    version: str | None = None,
) -> Iterator[Job]:
    """Lazily, the jobs of every grid point (keys may repeat when two inputs hold the same bytes)."""
    digests = digests or FileDigests()
    version = version or mdcert_version()
    file_axes = {a.name for a in spec.axes if a.is_file}
    store = str(Path(store).resolve())
    for values, labels in spec.points():
        files = {name: digests(values[name]) for name in file_axes}
        yield Job(
            key=job_key(spec.kind, values, files, version),
            kind=spec.kind,
            values=tuple(values.items()),
            labels=tuple(labels.items()),
            inputs=tuple((values[name], files[name]) for name in file_axes),
            version=version,
            store=store,
        )
