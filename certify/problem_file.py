"""Reading an attention-problem file (``.npz`` or ``.json``) into validated arrays, bounded by the
memory budget (`certify.problem.AttentionProblem.load`; docs/formats.md)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from certify.errors import MdcertError

__all__ = ["read_problem_file"]


def read_problem_file(path: str | Path, *, memory_budget: int | None = None) -> dict:
    """The arrays (or JSON values) of a problem file of any kind, ``provenance`` decoded; one line on bad
    input. Read through `certify.loaders`: a regular file, sizes bounded before reading (half of
    ``memory_budget``, default `certify.memory.default_budget`), strict JSON whose numbers are converted
    exactly or refused (`certify.exactfloat`). Shared by every problem kind
    (`certify.classification.load_problem` dispatches on ``kind``)."""
    from certify.loaders import (
        PROBLEM_KEYS,
        problem_arrays,
        read_json_object,
        read_npz,
        regular_file,
    )

    path = Path(path)
    suffix = path.suffix.lower()
    regular_file(
        path,
        what="problem",
        missing=f"problem file not found: {str(path)!r}; create one with "
        f"'mdcert synth -o problem.npz'",
    )
    if suffix == ".json":
        data = problem_arrays(read_json_object(path, what="problem", budget=memory_budget))
    elif suffix == ".npz":
        data = read_npz(
            path, keys=PROBLEM_KEYS + ("kind", "classes"), what="problem", budget=memory_budget
        )
    else:
        raise MdcertError(f"unknown problem format {suffix!r} for {str(path)!r}; use .npz or .json")
    if isinstance(data.get("provenance"), np.ndarray):  # .npz: the JSON text as a 0-d string array
        text = data["provenance"]
        if text.dtype.kind != "U" or text.ndim != 0:
            raise MdcertError(
                f"cannot read problem {str(path)!r}: provenance must be stored as JSON text"
            )
        try:
            data["provenance"] = json.loads(text.item())
        except (ValueError, RecursionError):
            raise MdcertError(
                f"cannot read problem {str(path)!r}: provenance is not valid JSON"
            ) from None
    return data
