"""From ragged token features to an attention problem: projection, z, decoder, selection, padding.

Shared by the text and digits loaders (docs/theory.md sections 1 and 1.3), in three steps so that a
study building many problems loads a source once (`Sequences`), fits once per ``(d, T)``
(`fit_projection`) and then draws problems cheaply (`select`):

1. projection: PCA to ``d`` (`pca`: the float64 covariance's leading eigenvectors, deterministic signs)
   fitted on every token of the training sequences (before truncation), or none when ``d`` is None; then one
   constant scale so the mean training token has unit l2 norm (the SVM solutions scale with it);
2. each sequence keeps its first ``T`` tokens; shorter ones are padded with zero rows and
   ``lengths[i]`` tells how many tokens are real (padding takes part in nothing);
3. the decoder ``v``: L2-regularized logistic regression without intercept (scikit-learn, C = 1,
   lbfgs) of the label on the mean real token of each training sequence, normalized to unit l2 norm.
   The mean token is the model's attention output at ``W = 0`` (uniform softmax), so ``v`` is the
   decoder of the initialization; it does not depend on the choice of ``z``;
4. ``z_i``: the mean of the sequence's real tokens (``mean``), or a given per-sequence vector such as
   the contextual [CLS] output, projected and scaled like the tokens (``cls``);
5. the ``n`` examples: drawn without replacement by ``numpy.random.default_rng(seed)`` from the
   training sequences with at least 2 tokens, listed in source order.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from certify.blas import single_thread_blas
from certify.errors import MdcertError
from experiments.data.extras import require

__all__ = [
    "Z_MODES",
    "DECODER_FIT",
    "Sequences",
    "Projected",
    "Assembled",
    "pca",
    "fit_projection",
    "select",
]

Z_MODES = ("mean", "cls")
DECODER_FIT = (
    "logistic regression (scikit-learn, L2, C=1, no intercept, lbfgs) of y on the mean real "
    "token of each training sequence (the model's output at W = 0), scaled to unit l2 norm"
)


@dataclass(frozen=True, eq=False)
class Sequences:
    """A source's sequences of token features, split, with what the provenance says about them.

    Attributes:
        features: token features (total, D); sequence ``i`` owns rows ``offsets[i]:offsets[i+1]``.
        offsets: int64 (count + 1,).
        labels: +1/-1 per sequence (count,).
        train, test: the fixed split (sorted sequence indices).
        z_vectors: an optional per-sequence vector (count, D) for ``z = "cls"``.
        ids: an identifier per sequence for the provenance (corpus row or image index).
        provenance: the source's part of the record (files, hashes, token policy, split).
    """

    features: np.ndarray
    offsets: np.ndarray
    labels: np.ndarray
    train: np.ndarray
    test: np.ndarray
    z_vectors: np.ndarray | None
    ids: np.ndarray
    provenance: dict[str, Any] = field(default_factory=dict)
    _pca: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    @property
    def counts(self) -> np.ndarray:
        return np.diff(self.offsets)


@dataclass(frozen=True, eq=False)
class Projected:
    """A source after the projection and decoder fits for one ``(d, T)``.

    Attributes:
        source: the sequences fitted on.
        T: maximum length.
        tokens: projected, scaled tokens, float64 (total, d).
        means: each sequence's mean real token (first ``T``), float64 (count, d).
        z_vectors: projected, scaled ``source.z_vectors`` or None.
        v: the decoder, unit l2 norm.
        fit: JSON-ready description of the projection, scale and decoder.
    """

    source: Sequences
    T: int
    tokens: np.ndarray
    means: np.ndarray
    z_vectors: np.ndarray | None
    v: np.ndarray
    fit: dict[str, Any]


@dataclass(frozen=True, eq=False)
class Assembled:
    """The arrays of one problem: ``X, y, z, v, lengths``, the chosen sequences and the fit record."""

    X: np.ndarray
    y: np.ndarray
    z: np.ndarray
    v: np.ndarray
    lengths: np.ndarray
    selection: np.ndarray
    fit: dict[str, Any]


def _project(
    features: np.ndarray, mean: np.ndarray, basis: np.ndarray, chunk: int = 1 << 15
) -> np.ndarray:
    out = np.empty((features.shape[0], basis.shape[1]))
    for start in range(0, features.shape[0], chunk):
        out[start : start + chunk] = (
            features[start : start + chunk].astype(np.float64) - mean
        ) @ basis
    return out


def pca(
    features: np.ndarray, rows: np.ndarray, d: int, *, chunk: int = 1 << 15
) -> tuple[np.ndarray, np.ndarray, float]:
    """PCA of ``features[rows]`` (``rows`` a boolean mask): ``(mean, basis (D, d), explained variance ratio)``.

    The covariance is accumulated in float64 over blocks of rows and diagonalized with ``numpy.linalg.eigh``;
    each component's largest-magnitude entry is made positive. The same components as scikit-learn's
    ``PCA(svd_solver="covariance_eigh")`` (tested), which instead copies the selected rows (400 MB for the
    corpus's training tokens) and forms their Gram matrix in the input's float32.
    """
    width = features.shape[1]
    count = int(rows.sum())
    total, gram = np.zeros(width), np.zeros((width, width))
    for start in range(0, features.shape[0], chunk):
        block = features[start : start + chunk][rows[start : start + chunk]].astype(np.float64)
        total += block.sum(axis=0)
        gram += block.T @ block
    mean = total / count
    cov = (gram - count * np.outer(mean, mean)) / max(count - 1, 1)
    values, vectors = np.linalg.eigh(cov)
    values, vectors = np.clip(values[::-1], 0.0, None), vectors[:, ::-1]
    basis = vectors[:, :d].copy()
    signs = np.sign(basis[np.argmax(np.abs(basis), axis=0), np.arange(d)])
    basis *= np.where(signs == 0, 1.0, signs)
    ratio = float(values[:d].sum() / values.sum()) if values.sum() > 0 else 1.0
    return mean, basis, ratio


def _mean_tokens(tokens: np.ndarray, offsets: np.ndarray, T: int) -> np.ndarray:
    lens = np.minimum(np.diff(offsets), T)
    out = np.zeros((len(lens), tokens.shape[1]))
    keep = np.flatnonzero(lens > 0)
    if keep.size:
        rows = np.concatenate([np.arange(offsets[i], offsets[i] + lens[i]) for i in keep])
        starts = np.concatenate([[0], np.cumsum(lens[keep])[:-1]])
        out[keep] = np.add.reduceat(tokens[rows], starts, axis=0) / lens[keep][:, None]
    return out


def _accuracy(v: np.ndarray, feats: np.ndarray, labels: np.ndarray) -> float | None:
    if not len(labels):
        return None
    return float(np.mean(np.where(feats @ v >= 0, 1.0, -1.0) == labels))


def fit_projection(source: Sequences, *, d: int | None, T: int) -> Projected:
    """Fit the projection, scale and decoder (steps 1-3 of the module docstring).

    Runs with one BLAS thread: on a loaded 2-core machine OpenBLAS's second thread spin-waits
    (measured: the PCA of 260,000 x 384 tokens in 1.9 s with one thread, 16 s with two, at load 8-10).

    Raises:
        MdcertError: ``T < 2`` or a ``d`` the features cannot give (one line with the limit).
    """
    with single_thread_blas():
        return _fit_projection(source, d=d, T=T)


def _fit_projection(source: Sequences, *, d: int | None, T: int) -> Projected:
    require("sklearn")
    from sklearn.linear_model import LogisticRegression

    if T < 2:
        raise MdcertError(f"invalid --T {T}: the maximum length must be >= 2")
    features, offsets, labels, train, test = (
        source.features,
        source.offsets,
        source.labels,
        source.train,
        source.test,
    )
    width = features.shape[1]
    if d is not None and not 1 <= d <= width:
        raise MdcertError(
            f"invalid --d {d}: the token features have dimension {width}; choose 1 <= d <= {width}"
        )
    row_mask = np.repeat(np.isin(np.arange(len(offsets) - 1), train), np.diff(offsets))
    if len(np.unique(labels[train])) < 2:
        raise MdcertError(
            f"the {len(train)} training sequences do not have both labels (the decoder fit "
            f"needs both); use more data (a larger --limit)"
        )
    if d is None:
        mean, basis = np.zeros(width), np.eye(width)
        projection: dict[str, Any] = {"method": "none", "d": width}
    else:
        if row_mask.sum() <= d:
            raise MdcertError(
                f"invalid --d {d}: only {int(row_mask.sum())} training tokens to fit the projection"
            )
        if d not in source._pca:  # depends on d only: fitted once per source and d
            mean, basis, ratio = pca(features, row_mask, d)
            source._pca[d] = (
                mean,
                basis,
                {
                    "method": "PCA",
                    "solver": "float64 covariance eigh (numpy)",
                    "d": d,
                    "input_dimension": width,
                    "fitted_on": "every token of the training sequences (before truncation)",
                    "tokens": int(row_mask.sum()),
                    "explained_variance_ratio": ratio,
                    "numpy": np.__version__,
                },
            )
        mean, basis, projection = source._pca[d]
    tokens = _project(features, mean, basis)
    scale = 1.0 / float(np.mean(np.linalg.norm(tokens[row_mask], axis=1)))
    tokens *= scale
    means = _mean_tokens(tokens, offsets, T)
    model = LogisticRegression(C=1.0, fit_intercept=False, solver="lbfgs", max_iter=1000)
    model.fit(means[train], labels[train])
    v = model.coef_[0].astype(np.float64)
    v /= np.linalg.norm(v)
    zv = None if source.z_vectors is None else _project(source.z_vectors, mean, basis) * scale
    fit = {
        "projection": projection,
        "scale": scale,
        "scale_rule": "one constant: the mean projected training token has unit l2 norm",
        "decoder": {
            "fit": DECODER_FIT,
            "train_accuracy": _accuracy(v, means[train], labels[train]),
            "test_accuracy": _accuracy(v, means[test], labels[test]),
            "train_sequences": int(len(train)),
            "test_sequences": int(len(test)),
        },
    }
    return Projected(source, T, tokens, means, zv, v, fit)


def select(projected: Projected, *, n: int, seed: int, z: str = "mean") -> Assembled:
    """Draw ``n`` training sequences by ``seed`` and pad them to ``T`` (steps 4-5 of the module docstring).

    Raises:
        MdcertError: ``n`` beyond the training sequences with >= 2 tokens, or ``z = "cls"`` without vectors.
    """
    if z not in Z_MODES:
        raise MdcertError(f"unknown --z {z!r}; use mean or cls")
    src, T = projected.source, projected.T
    counts = src.counts
    eligible = src.train[counts[src.train] >= 2]
    if not 1 <= n <= len(eligible):
        raise MdcertError(
            f"invalid --n {n}: the training split has {len(eligible)} sequences with >= 2 tokens; "
            f"choose 1 <= n <= {len(eligible)}"
        )
    if z == "cls" and projected.z_vectors is None:
        raise MdcertError(
            "--z cls needs a [CLS] output per sequence; use --embed contextual (text) or --z mean"
        )
    pick = np.sort(np.random.default_rng(seed).choice(eligible, size=n, replace=False))
    lengths = np.minimum(counts[pick], T).astype(np.int64)
    X = np.zeros((n, T, projected.tokens.shape[1]))
    for row, i in enumerate(pick):
        start = src.offsets[i]
        X[row, : lengths[row]] = projected.tokens[start : start + lengths[row]]
    Z = projected.means[pick] if z == "mean" else projected.z_vectors[pick]
    fit = dict(projected.fit, truncated=int(np.sum(counts[pick] > T)), eligible=int(len(eligible)))
    return Assembled(
        X,
        src.labels[pick].astype(np.float64),
        np.array(Z, dtype=np.float64),
        projected.v.copy(),
        lengths,
        pick,
        fit,
    )
