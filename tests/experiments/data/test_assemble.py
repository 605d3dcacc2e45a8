"""experiments/data/assemble.py: projection, decoder, z, selection and padding on synthetic sequences."""

from __future__ import annotations

import numpy as np
import pytest

from certify.errors import MdcertError
from experiments.data.assemble import Sequences, fit_projection, pca, select
from experiments.data.corpus import split


def _source(count: int = 60, width: int = 12, seed: int = 1, cls: bool = False) -> Sequences:
    rng = np.random.default_rng(seed)
    counts = rng.integers(1, 9, size=count)  # some sequences have 1 token: never selected
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    labels = rng.choice([-1.0, 1.0], size=count)
    feats = rng.standard_normal((offsets[-1], width)).astype(np.float32)
    feats += (labels.repeat(counts)[:, None] * np.linspace(0, 1, width)).astype(np.float32)
    train, test = split(count)
    zv = rng.standard_normal((count, width)).astype(np.float32) if cls else None
    return Sequences(feats, offsets, labels, train, test, zv, np.arange(count) + 100, {})


def test_padding_lengths_z_and_decoder() -> None:
    src = _source()
    proj = fit_projection(src, d=5, T=6)
    out = select(proj, n=20, seed=3)
    assert out.X.shape == (20, 6, 5) and out.y.shape == (20,) and out.z.shape == (20, 5)
    assert np.isclose(np.linalg.norm(out.v), 1.0)
    counts = src.counts
    for row, i in enumerate(out.selection):
        L = out.lengths[row]
        assert L == min(counts[i], 6) >= 2 and out.y[row] == src.labels[i]
        assert np.all(out.X[row, L:] == 0)
        np.testing.assert_allclose(out.X[row, :L], proj.tokens[src.offsets[i] : src.offsets[i] + L])
        np.testing.assert_allclose(out.z[row], out.X[row, :L].mean(axis=0), atol=1e-13)
    assert set(out.selection) <= set(src.train) and np.all(np.diff(out.selection) > 0)
    assert out.fit["truncated"] == int(np.sum(counts[out.selection] > 6))
    train_rows = np.concatenate([np.arange(src.offsets[i], src.offsets[i + 1]) for i in src.train])
    assert np.isclose(np.mean(np.linalg.norm(proj.tokens[train_rows], axis=1)), 1.0)
    assert 0.5 <= out.fit["decoder"]["train_accuracy"] <= 1.0


def test_selection_is_seeded() -> None:
    proj = fit_projection(_source(), d=None, T=4)
    a, b, c = (select(proj, n=15, seed=s) for s in (0, 0, 1))
    assert a.X.tobytes() == b.X.tobytes() and a.z.tobytes() == b.z.tobytes()
    assert not np.array_equal(a.selection, c.selection)
    assert a.X.shape[2] == 12 and proj.fit["projection"] == {"method": "none", "d": 12}


def test_projection_is_fitted_on_training_tokens_only() -> None:
    src = _source()
    changed = src.features.copy()
    for i in src.test:
        changed[src.offsets[i] : src.offsets[i + 1]] += 50.0
    other = Sequences(changed, src.offsets, src.labels, src.train, src.test, None, src.ids, {})
    a, b = fit_projection(src, d=4, T=5), fit_projection(other, d=4, T=5)
    train_rows = np.concatenate([np.arange(src.offsets[i], src.offsets[i + 1]) for i in src.train])
    np.testing.assert_allclose(a.tokens[train_rows], b.tokens[train_rows], atol=1e-9)
    np.testing.assert_allclose(a.v, b.v, atol=1e-9)


def test_cls_vectors_are_projected_like_tokens() -> None:
    src = _source(cls=True)
    proj = fit_projection(src, d=3, T=5)
    out = select(proj, n=10, seed=0, z="cls")
    np.testing.assert_allclose(out.z, proj.z_vectors[out.selection])
    with pytest.raises(MdcertError, match="--z cls needs a \\[CLS\\] output"):
        select(fit_projection(_source(), d=3, T=5), n=10, seed=0, z="cls")


@pytest.mark.parametrize(
    ("kwargs", "pattern"),
    [
        ({"d": 13, "T": 4}, r"invalid --d 13: the token features have dimension 12"),
        ({"d": 0, "T": 4}, r"invalid --d 0"),
        ({"d": 3, "T": 1}, r"invalid --T 1: the maximum length must be >= 2"),
    ],
)
def test_fit_refuses_bad_sizes(kwargs, pattern) -> None:
    with pytest.raises(MdcertError, match=pattern):
        fit_projection(_source(), **kwargs)


def test_select_refuses_too_many_examples() -> None:
    src = _source()
    eligible = int(np.sum(src.counts[src.train] >= 2))
    proj = fit_projection(src, d=3, T=4)
    assert len(select(proj, n=eligible, seed=0).selection) == eligible
    with pytest.raises(
        MdcertError,
        match=f"invalid --n {eligible + 1}: the training split has {eligible} sequences",
    ):
        select(proj, n=eligible + 1, seed=0)
    with pytest.raises(MdcertError, match="unknown --z 'max'"):
        select(proj, n=3, seed=0, z="max")


def test_one_label_in_training_is_refused() -> None:
    src = _source()
    one = Sequences(
        src.features, src.offsets, np.ones_like(src.labels), src.train, src.test, None, src.ids, {}
    )
    with pytest.raises(MdcertError, match="do not have both labels"):
        fit_projection(one, d=3, T=4)


@pytest.mark.parametrize("d", [1, 4, 12])
def test_pca_equals_scikit_learn(d) -> None:
    from sklearn.decomposition import PCA

    rng = np.random.default_rng(d)
    feats = (rng.standard_normal((500, 12)) * np.linspace(3, 0.1, 12) + 2.0).astype(np.float32)
    rows = rng.random(500) < 0.7
    mean, basis, ratio = pca(feats, rows, d, chunk=64)
    ref = PCA(n_components=d, svd_solver="full").fit(feats[rows].astype(np.float64))
    np.testing.assert_allclose(mean, ref.mean_, atol=1e-12)
    np.testing.assert_allclose(basis.T, ref.components_, atol=1e-9)
    assert np.isclose(ratio, ref.explained_variance_ratio_.sum())
