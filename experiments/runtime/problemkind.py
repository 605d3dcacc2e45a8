"""The kind of a problem file: `is_classification_file` says whether a file carries
``kind = "classification"`` (docs/formats.md) without reading its arrays, so that ``mdcert check``
and ``mdcert paths`` can send a classification problem to the p-GD work (docs/theory.md section 7)
before they load it."""

from __future__ import annotations

import json
from pathlib import Path

__all__ = ["CLASSIFICATION", "is_classification_file"]

#: the ``kind`` of a classification problem file (`certify.classification`)
CLASSIFICATION = "classification"


def is_classification_file(path: str | Path) -> bool:
    """Whether the problem file at ``path`` says ``kind = "classification"`` (an ``.npz`` entry
    ``kind`` or a ``.json`` key). False when the file is missing or unreadable: the loader that
    reads it next says why, in its own words."""
    path = Path(path)
    try:
        if path.suffix.lower() == ".npz":
            import numpy as np

            with np.load(path, allow_pickle=False) as data:
                if "kind" not in data.files:
                    return False
                kind = data["kind"]
                return kind.ndim == 0 and kind.dtype.kind == "U" and kind.item() == CLASSIFICATION
        if path.suffix.lower() == ".json":
            with open(path, encoding="utf-8") as fh:
                data = json.load(fh)
            return isinstance(data, dict) and data.get("kind") == CLASSIFICATION
    except (OSError, ValueError, EOFError):
        return False
    return False
