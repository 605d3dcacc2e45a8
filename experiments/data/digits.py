"""Attention problems from scikit-learn's digits images as patch tokens (docs/theory.md section 1.3).

``sklearn.datasets.load_digits`` reads the 1,797 8x8 images (pixel values 0..16) that scikit-learn
ships in ``sklearn/datasets/data/digits.csv.gz``; their content hash is pinned. A binary problem
takes two classes (``classes=(a, b)``: ``a`` is +1, ``b`` is -1).

Tokens: the image is cut into ``patch`` x ``patch`` squares in raster order (``patch = 2``: 16
patches of 4 pixels, the default; ``patch = 4``: 4 patches of 16). A token is the patch's pixels
divided by 16 followed by a one-hot code of the patch's position, so a token has dimension
``patch**2 + (8 // patch)**2`` (20 for both sizes) and two tokens of one image are never equal
(equal tokens would give the attention SVM a zero row; docs/theory.md section 3). All-blank patches
(every pixel 0, the background) are dropped, so images have different lengths (7..16 patches at
``patch = 2``); ``T`` truncates in raster order. Then the shared steps of `experiments.data.assemble`:
an optional PCA to ``d`` (none by default), one scale, ``z`` the mean real token, ``v`` the
logistic-regression decoder on the mean token of the training images.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np

from certify.errors import MdcertError
from experiments.data.assemble import Sequences, fit_projection, select
from experiments.data.corpus import SPLIT_SEED, TRAIN_FRACTION, split
from experiments.data.extras import require, sha256_file
from experiments.data.provenance import DataProblem, data_problem

__all__ = [
    "DIGITS_SHA256",
    "PATCHES",
    "digits_arrays",
    "digits_source",
    "digits_problem",
    "patch_tokens",
    "parse_classes",
]

#: SHA-256 of the uint8 images (1797, 8, 8) followed by the int64 little-endian targets
DIGITS_SHA256 = "65e5b4619795efb40c1082f4c350c049e4ad552200d369b6ae99e21eef5e72c5"
PATCHES = (2, 4)
SELECTION_RULE = (
    "numpy default_rng(seed).choice without replacement among the training images with >= 2 "
    "tokens, sorted; ids are indices into load_digits()"
)


def parse_classes(text: str) -> tuple[int, int]:
    """``"3,8"`` -> (3, 8): two different digits 0..9."""
    try:
        parts = [int(s) for s in str(text).split(",")]
    except ValueError:
        parts = []
    if len(parts) != 2 or parts[0] == parts[1] or not all(0 <= c <= 9 for c in parts):
        raise MdcertError(f"invalid --classes {text!r}; give two different digits 0..9 like 3,8")
    return parts[0], parts[1]


def patch_tokens(images: np.ndarray, *, patch: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """Tokens of 8x8 images (values 0..16): ``(features (total, patch**2 + (8//patch)**2), offsets)``.

    Blank patches are dropped; see the module docstring.
    """
    if patch not in PATCHES:
        raise MdcertError(
            f"invalid --patch {patch}; use 2 (16 tokens of 4 pixels) or 4 (4 tokens of 16)"
        )
    k = 8 // patch
    m = images.shape[0]
    blocks = (
        images.reshape(m, k, patch, k, patch)
        .transpose(0, 1, 3, 2, 4)
        .reshape(m, k * k, patch * patch)
    )
    tokens = np.concatenate(
        [blocks / 16.0, np.broadcast_to(np.eye(k * k), (m, k * k, k * k))], axis=2
    )
    keep = blocks.sum(axis=2) > 0
    offsets = np.concatenate([[0], np.cumsum(keep.sum(axis=1))]).astype(np.int64)
    return np.ascontiguousarray(tokens[keep]), offsets


def _load() -> tuple[np.ndarray, np.ndarray, Path, str]:
    require("sklearn")
    import sklearn.datasets

    path = Path(sklearn.datasets.__file__).parent / "data" / "digits.csv.gz"
    digits = sklearn.datasets.load_digits()
    images = np.asarray(digits.images)
    target = np.asarray(digits.target, dtype="<i8")
    h = hashlib.sha256()
    h.update(np.ascontiguousarray(images.astype(np.uint8)).tobytes())
    h.update(np.ascontiguousarray(target).tobytes())
    if (
        images.shape != (1797, 8, 8)
        or not np.array_equal(images, images.astype(np.uint8))
        or h.hexdigest() != DIGITS_SHA256
    ):
        raise MdcertError(
            f"scikit-learn's digits data ({str(path)!r}) is not the expected 1,797 images; "
            f"reinstall scikit-learn (pip install --force-reinstall 'scikit-learn>=1.4')"
        )
    return images, target, path, sha256_file(path) if path.is_file() else "unknown"


def digits_arrays() -> tuple[np.ndarray, np.ndarray, Path, str]:
    """``(images (1797, 8, 8), targets int64, file path, file sha256)`` of ``load_digits``, the
    content hash verified (one line naming the reinstall otherwise)."""
    return _load()


def digits_source(*, classes: tuple[int, int] = (3, 8), patch: int = 2) -> Sequences:
    """The two classes' images as patch-token sequences with the fixed split (load once, fit many times)."""
    a, b = classes
    images, target, path, file_sha = _load()
    idx = np.flatnonzero((target == a) | (target == b))
    feats, offsets = patch_tokens(images[idx], patch=patch)
    labels = np.where(target[idx] == a, 1.0, -1.0)
    train, test = split(len(idx))
    k = 8 // patch
    record = {
        "source": "digits",
        "digits": {
            "loader": "sklearn.datasets.load_digits",
            "file": "sklearn/datasets/data/digits.csv.gz",
            "path": str(path),
            "sha256": file_sha,
            "content_sha256": DIGITS_SHA256,
            "sklearn": require("sklearn").__version__,
            "classes": [a, b],
            "labels": f"digit {a} = +1, digit {b} = -1",
            "images": int(len(idx)),
            "ids": "indices into load_digits()",
        },
        "tokens": {
            "patch": patch,
            "per_image": k * k,
            "dimension": patch * patch + k * k,
            "features": "patch pixels / 16, then a one-hot code of the patch position (raster order)",
            "blank": "all-zero patches dropped",
            "duplicates": "none possible (positions differ)",
            "padding": "zero rows after lengths[i]; truncation keeps the first T patches",
        },
        "split": {
            "rule": "numpy default_rng(seed).permutation, the first round(fraction * count) train",
            "seed": SPLIT_SEED,
            "train_fraction": TRAIN_FRACTION,
            "train": int(len(train)),
            "test": int(len(test)),
        },
    }
    return Sequences(feats, offsets, labels, train, test, None, idx.astype(np.int64), record)


def digits_problem(
    *,
    n: int,
    T: int,
    d: int | None = None,
    seed: int,
    classes: tuple[int, int] = (3, 8),
    patch: int = 2,
    z: str = "mean",
    source: Sequences | None = None,
) -> DataProblem:
    """Build a digits problem; the same arguments give the same bytes.

    Args:
        n: images, drawn by ``seed`` from the training split of the two classes.
        T: maximum length (patches kept per image).
        d: PCA dimension, or None for the raw token features.
        seed: selection seed.
        classes: (the +1 digit, the -1 digit).
        patch: 2 or 4.
        z: "mean" (digits have no [CLS] token).
        source: a `digits_source` already loaded with the same classes and patch.
    """
    if z != "mean":
        raise MdcertError(f"--z {z} is not available for digits (no [CLS] token); use --z mean")
    if source is None:
        source = digits_source(classes=classes, patch=patch)
    elif (
        source.provenance.get("digits", {}).get("classes") != list(classes)
        or source.provenance.get("tokens", {}).get("patch") != patch
    ):
        raise MdcertError(f"the given source is not classes {classes} with patch {patch}")
    built = select(fit_projection(source, d=d, T=T), n=n, seed=seed, z=z)
    return data_problem(
        source,
        built,
        n=n,
        T=T,
        d=d,
        seed=seed,
        z=z,
        z_text="mean real token",
        selection_rule=SELECTION_RULE,
    )
