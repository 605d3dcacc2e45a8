"""The one content-keyed store of finished work: a folder of files named by a hash of their inputs.

A piece of work (a study's training run, a frontier certificate, a corpus encoding) is identified by
its *content key*: the SHA-256 of the canonical JSON of everything that determines it
(`canonical_json`: `certify.io.jsonenc.jsonable` values, sorted keys, no spaces), so the same inputs
give the same key in every process and on every machine, and any change of input gives another.
`RunStore` keeps one file per key, ``ROOT/PREFIX + KEY + SUFFIX``:

- every write goes through `certify.io.atomic` (a fresh temporary name, then a rename), so a record
  is whole or absent, an interrupted writer leaves no partial record, and concurrent writers of one
  key leave one writer's complete record (the last rename wins; each has the same content);
- a record that cannot be read (torn by a foreign writer, damaged, not JSON) counts as absent, so
  the work is redone and the record replaced;
- `RunStore.keys` lists the finished records and `RunStore.missing` the keys still to do: a rerun
  with the same inputs resumes where an interrupted one stopped.

Users: the study run records (`experiments.studies.runner`, ``DIR/runs/KEY.json``), the realdata
frontier's certificates (``DIR/runs/verdict-KEY.json``) and the contextual encoding cache of
`experiments.data.encoder` (``text-contextual-KEY.npz``).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, Iterable, Mapping

from certify.io.atomic import write_npz_atomic, write_text_atomic
from certify.io.jsonenc import dumps, jsonable

__all__ = ["canonical_json", "content_key", "RunStore"]


def canonical_json(value: Any) -> str:
    """The canonical JSON text of ``value``: `jsonable` data (non-finite floats as null, tuples as
    lists, numpy values as Python ones), keys sorted, no whitespace."""
    return json.dumps(jsonable(value), sort_keys=True, separators=(",", ":"), allow_nan=False)


def content_key(value: Any, *, length: int = 64) -> str:
    """SHA-256 hex digest of `canonical_json` ``(value)``, its first ``length`` digits (8..64)."""
    if not 8 <= length <= 64:
        raise ValueError(f"content_key length {length}: give 8 to 64 hex digits")
    return hashlib.sha256(canonical_json(value).encode()).hexdigest()[:length]


class RunStore:
    """Records ``root / (prefix + key + suffix)``, one per content key (see the module docstring).

    Args:
        root: the folder (created by `ensure`, or by the first write).
        prefix, suffix: around the key in a record's file name (``"verdict-"``, ``".json"``).
    """

    def __init__(self, root: str | os.PathLike, *, prefix: str = "", suffix: str = ".json") -> None:
        self.root = Path(root)
        self.prefix = prefix
        self.suffix = suffix

    def __repr__(self) -> str:
        return f"RunStore({str(self.root)!r}, prefix={self.prefix!r}, suffix={self.suffix!r})"

    def ensure(self) -> "RunStore":
        """Create the folder (and its parents) when absent; returns the store."""
        self.root.mkdir(parents=True, exist_ok=True)
        return self

    def path(self, key: str) -> Path:
        """The file of record ``key`` (whether or not it exists)."""
        if not key or "/" in key or os.sep in key or key.startswith("."):
            raise ValueError(f"not a record key: {key!r}")
        return self.root / f"{self.prefix}{key}{self.suffix}"

    def exists(self, key: str) -> bool:
        return self.path(key).is_file()

    def read_json(self, key: str) -> Any | None:
        """The JSON record ``key``, or None when absent or unreadable (it counts as not done)."""
        try:
            return json.loads(self.path(key).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None

    def write_text(self, key: str, text: str) -> Path:
        """Store ``text`` as record ``key`` atomically; returns its path."""
        self.ensure()
        return write_text_atomic(self.path(key), text)

    def write_json(self, key: str, record: Any, *, indent: int | None = 1) -> Path:
        """Store ``record`` as strict JSON (non-finite floats as null, sorted keys) atomically."""
        return self.write_text(key, dumps(record, indent=indent, sort_keys=True) + "\n")

    def write_npz(self, key: str, arrays: Mapping[str, Any]) -> Path:
        """Store named arrays as one ``.npz`` record atomically (no pickles)."""
        self.ensure()
        return write_npz_atomic(self.path(key), arrays)

    def keys(self) -> list[str]:
        """The keys of the records present (sorted; temporary files of writers are not records)."""
        if not self.root.is_dir():
            return []
        out = []
        for p in self.root.iterdir():
            name = p.name
            if (
                name.startswith(".")
                or not name.startswith(self.prefix)
                or not name.endswith(self.suffix)
            ):
                continue
            key = name[len(self.prefix) : len(name) - len(self.suffix)]
            if key and p.is_file():
                out.append(key)
        return sorted(out)

    def missing(self, keys: Iterable[str]) -> list[str]:
        """Those of ``keys`` (in order) with no record yet: the work a resumed run still has to do."""
        have = set(self.keys())
        return [k for k in keys if k not in have]

    def temporaries(self) -> list[Path]:
        """Temporary files that writers of this store left behind (a killed process): hidden
        ``.NAME.tmp-XXXXXXXX`` files of `certify.io.atomic` next to a record's name."""
        if not self.root.is_dir():
            return []
        return [p for p in sorted(self.root.iterdir()) if self._is_tmp(p.name)]

    def _is_tmp(self, name: str) -> bool:
        if not (name.startswith(".") and ".tmp-" in name):
            return False
        stem = name[1 : name.index(".tmp-")]
        return stem.startswith(self.prefix) and stem.endswith(self.suffix)
