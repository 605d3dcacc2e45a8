"""The kind of a problem file: `is_classification_file` says whether a file carries
``kind = "classification"`` (docs/formats.md) without reading its arrays, so that ``mdcert check``
and ``mdcert paths`` can send a classification problem to the p-GD work (docs/theory.md section 7)
before they load it."""

from __future__ import annotations

from pathlib import Path

__all__ = ["CLASSIFICATION", "is_classification_file"]

#: largest ``kind.npy`` member read (a short string)
KIND_BYTES = 1 << 16

#: the ``kind`` of a classification problem file (`certify.classification`)
CLASSIFICATION = "classification"


def is_classification_file(path: str | Path) -> bool:
    """Whether the problem file at ``path`` says ``kind = "classification"`` (an ``.npz`` entry
    ``kind`` or a ``.json`` key). False when the file is missing or unreadable: the loader that
    reads it next says why, in its own words. A path that is not a regular file (a FIFO, a device)
    is never opened, and a JSON file is read within the memory budget (`certify.loaders`)."""
    import os
    import stat

    from certify.loaders import read_json_object

    path = Path(path)
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):  # a FIFO would block on open: never opened
            return False
        if path.suffix.lower() == ".npz":  # only the small "kind" member is read, never an array
            import zipfile

            import numpy as np

            if not zipfile.is_zipfile(path):
                return False
            with zipfile.ZipFile(path) as archive:
                if "kind.npy" not in archive.namelist():
                    return False
                if archive.getinfo("kind.npy").file_size > KIND_BYTES:
                    return False
                with archive.open("kind.npy") as fh:
                    kind = np.lib.format.read_array(fh, allow_pickle=False)
            return kind.ndim == 0 and kind.dtype.kind == "U" and kind.item() == CLASSIFICATION
        if path.suffix.lower() == ".json":
            data = read_json_object(path, what="the problem file", budget=None)  # size-bounded
            return data.get("kind") == CLASSIFICATION
    except Exception:  # noqa: BLE001 - a peek only: the loader that reads the file next says why
        return False
    return False
