"""Regression problem files that carry a provenance record (docs/formats.md, `mdcert data`).

`certify.regression.RegressionProblem.save` writes ``kind``, ``X`` and ``y`` only (the files of
``mdcert interpolate --synth`` stay as they are); `save_regression` adds the ``provenance`` key the
other problem kinds use (``.npz``: a 0-d string array of its canonical JSON text; ``.json``: an
object), written atomically. `certify.regression.load_regression` reads such a file like any other
(it reads ``X`` and ``y`` and ignores the record); `load_regression_with_provenance` returns the
problem with its record, decoded by `certify.problem_file.read_problem_file`.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

__all__ = ["save_regression", "load_regression_with_provenance"]


def save_regression(problem, path: str | Path) -> Path:
    """Write ``problem`` (a `RegressionProblem`) with its provenance to ``.npz`` or ``.json``."""
    from certify.fields import check_provenance, provenance_text
    from certify.io.atomic import write_npz_atomic, write_text_atomic

    path = Path(path)
    record = check_provenance(problem.provenance)
    if path.suffix.lower() == ".json":
        data = {"kind": "regression", "X": problem.X.tolist(), "y": problem.y.tolist()}
        if record is not None:
            data["provenance"] = record
        return write_text_atomic(path, json.dumps(data))
    arrays = {"kind": np.array("regression"), "X": problem.X, "y": problem.y}
    if record is not None:
        arrays["provenance"] = np.array(provenance_text(record))
    write_npz_atomic(path, arrays)
    return path


def load_regression_with_provenance(path: str | Path):
    """The `RegressionProblem` of ``path`` (read exactly by `certify.regression.load_regression`)
    with the file's provenance record (None when it has none)."""
    from certify.problem_file import read_problem_file
    from certify.regression import RegressionProblem, load_regression

    problem = load_regression(path)
    record = read_problem_file(path).get("provenance")
    return RegressionProblem(problem.X, problem.y, provenance=record)
