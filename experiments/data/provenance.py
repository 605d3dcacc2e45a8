"""A loaded real-data problem and its provenance record (docs/formats.md, "Provenance").

`DataProblem` holds the arrays ``X, y, z, v, lengths`` and ``provenance``, a JSON-ready dict saying
where every number came from: source files and their SHA-256, the encoder, the split, the
projection, the decoder fit, the token policy, the selection and the mdcert version. `problem()`
turns it into a validated `certify.AttentionProblem` that carries both the lengths and the record.
"""

from __future__ import annotations

import importlib.metadata
import json
from dataclasses import dataclass
from typing import Any

import numpy as np

from experiments.data.assemble import Assembled, Sequences

__all__ = ["PROVENANCE_FORMAT", "DataProblem", "mdcert_version", "data_problem"]

PROVENANCE_FORMAT = "mdcert-provenance/1"


def mdcert_version() -> str:
    """The installed mdcert distribution's version ("unknown" when it is not installed)."""
    try:
        return importlib.metadata.version("mdcert")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


@dataclass(frozen=True, eq=False)
class DataProblem:
    """Arrays of an attention problem built from real data, and their provenance.

    Attributes:
        X: tokens (n, T, d); rows ``t >= lengths[i]`` are zero padding.
        y: labels in {-1, +1} (n,).
        z: comparison vectors (n, d).
        v: decoder (d,), unit l2 norm.
        lengths: real tokens per example (n,), each in 2..T.
        provenance: JSON-ready record (see the module docstring).
    """

    X: np.ndarray
    y: np.ndarray
    z: np.ndarray
    v: np.ndarray
    lengths: np.ndarray
    provenance: dict[str, Any]

    def __post_init__(self) -> None:
        json.dumps(self.provenance)  # must serialize; raises TypeError on a stray numpy scalar

    def problem(self):
        """The validated `certify.AttentionProblem` (lengths and provenance attached)."""
        from certify.problem import AttentionProblem

        return AttentionProblem(
            self.X, self.y, self.z, self.v, lengths=self.lengths, provenance=self.provenance
        )


def data_problem(
    source: Sequences,
    built: Assembled,
    *,
    n: int,
    T: int,
    d: int | None,
    seed: int,
    z: str,
    z_text: str,
    selection_rule: str,
) -> DataProblem:
    """Bundle one assembled problem with its full provenance record (source part, fits, options)."""
    record = {
        "format": PROVENANCE_FORMAT,
        **source.provenance,
        **built.fit,
        "z": z_text,
        "z_mode": z,
        "n": n,
        "T": T,
        "d": d,
        "seed": seed,
        "selection": {"rule": selection_rule, "ids": [int(source.ids[i]) for i in built.selection]},
        "mdcert_version": mdcert_version(),
    }
    return DataProblem(built.X, built.y, built.z, built.v, built.lengths, record)
