"""Classification problems from the last-layer features of a network trained by ``mdcert study pgd``.

``mdcert study pgd --save-features -o DIR`` writes, for each final run it trains, ``DIR/features/KEY.npz``
(`experiments.studies.pgdnet.save_features`; KEY is the run's record key, ``DIR/runs/KEY.json``):
the second hidden layer (``width // 2`` ReLU units, float64 copies of the float32 values, eval mode)
of the run's train and test images, their labels 0..9 and ``load_digits()`` indices, and the head.
`features_points` reads one file as a multiclass problem (K = 10): the features of one split, with a
constant 1 appended by default (the head's bias, as in the study's own certified margins, docs/theory.md
section 7.4), ``n`` examples drawn like the other point sources (`experiments.data.points`).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from certify.errors import MdcertError
from experiments.data.points import PointData, check_counts, point_record, select_ids

__all__ = ["SPLITS", "features_file", "features_options", "features_points"]

SPLITS = ("train", "test")
FORMAT = "mdcert-pgd-features/1"


def features_file(study: str | Path, run: str | None) -> Path:
    """The features file of ``run`` (a record key or a unique prefix of one) in the study directory
    ``study``; ``run`` None: the only one there. One line on a missing or ambiguous choice."""
    root = Path(study)
    meta = root / "study.json"
    try:
        kind = json.loads(meta.read_text()).get("kind")
    except (OSError, ValueError, AttributeError):
        raise MdcertError(
            f"--study {str(study)!r} is not a study directory (no readable study.json); give the "
            f"-o DIR of 'mdcert study pgd --save-features'"
        ) from None
    if kind != "pgd":
        raise MdcertError(f"--study {str(study)!r} is a {kind!r} study; give a pgd study")
    files = sorted((root / "features").glob("*.npz")) if (root / "features").is_dir() else []
    if not files:
        raise MdcertError(
            f"--study {str(study)!r} holds no features/*.npz; rerun the study with --save-features"
        )
    found = [f for f in files if run is None or f.stem.startswith(run.lower())]
    if len(found) != 1:
        what = "no run" if not found else f"{len(found)} runs"
        keys = ", ".join(f.stem[:12] for f in files[:8])
        raise MdcertError(
            f"--run {run or '(none)'} matches {what} of the {len(files)} with features ({keys}"
            f"{', ...' if len(files) > 8 else ''}); give --run KEY (a unique prefix)"
        )
    return found[0]


def features_options(options, *, kind: str) -> dict:
    """The validated fields of a ``mdcert data features`` config (``experiments.commands.data.Config``)
    and the file it reads (``inputs``); one line on bad input, before any work."""
    from experiments.runtime.outputs import check_seed

    seed, n = options.get("seed", 0), options.get("n")
    check_seed(seed, bounded=False)
    split = options.get("split") or "train"
    if kind != "classification" or split not in SPLITS:
        raise MdcertError(
            f"features give a classification problem of the train or test split; "
            f"got --kind {kind} --split {split}"
        )
    if n is not None and n < 1:
        raise MdcertError(f"invalid --n {n}: give a number of examples >= 1")
    path = features_file(options.get("study") or ".", options.get("run"))
    fields = dict(study=str(options.get("study")), run=options.get("run"), split=split)
    fields["bias"] = bool(options.get("bias", True))
    return {"seed": seed, "n": n, **fields, "inputs": {"the features file": path}}


def _read(path: Path) -> dict:
    try:
        with np.load(path, allow_pickle=False) as fh:
            data = {k: fh[k] for k in fh.files}
        if str(data["format"]) != FORMAT:
            raise ValueError(f"format {str(data['format'])!r}")
        data["record"] = json.loads(str(data["record"]))
    except (OSError, ValueError, KeyError) as exc:
        raise MdcertError(f"cannot read features file {str(path)!r}: {exc}") from None
    return data


def features_points(
    *,
    study: str | Path,
    run: str | None = None,
    split: str = "train",
    n: int | None = None,
    seed: int = 0,
    bias: bool = True,
) -> PointData:
    """The features of one split of one run as a multiclass classification problem (K = 10)."""
    from experiments.data.extras import sha256_file

    if split not in SPLITS:
        raise MdcertError(f"unknown --split {split!r}; use train or test")
    path = features_file(study, run)
    data = _read(path)
    H, labels, ids = (data[f"{split}_{k}"] for k in ("features", "labels", "ids"))
    if n is not None and not 1 <= n <= len(labels):
        raise MdcertError(
            f"invalid --n {n}: the {split} split has {len(labels)} images; "
            f"choose 1 <= n <= {len(labels)}"
        )
    rows = select_ids(np.arange(len(labels)), n, seed)
    X = np.asarray(H[rows], dtype=np.float64)
    if bias:
        X = np.hstack([X, np.ones((len(rows), 1))])
    y = labels[rows].astype(np.float64)
    names = {float(c): f"digit {c}" for c in range(10)}
    counts = check_counts("classification", y, names, len(rows), seed)
    rec = data["record"]
    record = point_record(
        "features",
        "classification",
        n,
        seed,
        ids[rows],
        study={
            "path": str(Path(study)),
            "kind": "pgd",
            "run": rec.get("key"),
            "file": str(path),
            "sha256": sha256_file(path),
            "config": rec.get("config"),
            "test_acc": rec.get("test_acc"),
            "train_acc": rec.get("train_acc"),
            "mdcert_version": rec.get("mdcert_version"),
        },
        features={
            "rule": "the second hidden layer (ReLU) of the trained DigitsMLP, eval mode, float64 "
            "copies of the float32 values"
            + (", then a constant 1 (the head's bias)" if bias else ""),
            "dimension": int(X.shape[1]),
            "split": split,
            "bias": bias,
            "ids": "indices into load_digits() (the study's split, numpy seed 0)",
        },
        labels={"rule": "the digit, 0..9 (multiclass, classes = 10)", "counts": counts},
    )
    return PointData("classification", X, y, 10, record)
