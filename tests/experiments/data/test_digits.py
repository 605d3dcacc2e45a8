"""experiments/data/digits.py: scikit-learn digits as patch tokens."""

from __future__ import annotations

import numpy as np
import pytest

from certify.errors import MdcertError
from experiments.data import digits as dg


def test_patch_tokens_layout() -> None:
    img = np.zeros((1, 8, 8))
    img[0, 0, 0] = 16.0  # patch 0 (2x2) / patch 0 (4x4)
    img[0, 7, 7] = 8.0  # patch 15 / patch 3
    feats, offsets = dg.patch_tokens(img, patch=2)
    assert offsets.tolist() == [0, 2] and feats.shape == (2, 20)
    assert feats[0, :4].tolist() == [1.0, 0, 0, 0] and feats[0, 4:].argmax() == 0
    assert feats[1, :4].tolist() == [0, 0, 0, 0.5] and feats[1, 4:].argmax() == 15
    feats, offsets = dg.patch_tokens(img, patch=4)
    assert (
        feats.shape == (2, 20) and feats[1, 16:].tolist() == [0, 0, 0, 1.0] and feats[1, 15] == 0.5
    )
    with pytest.raises(MdcertError, match="invalid --patch 3"):
        dg.patch_tokens(img, patch=3)


def test_digits_problem_deterministic_with_distinct_tokens() -> None:
    a = dg.digits_problem(n=40, T=16, seed=5)
    b = dg.digits_problem(n=40, T=16, seed=5)
    assert (
        a.X.tobytes() == b.X.tobytes()
        and a.z.tobytes() == b.z.tobytes()
        and a.provenance == b.provenance
    )
    assert a.X.shape == (40, 16, 20) and set(a.y.tolist()) <= {-1.0, 1.0}
    from sklearn.datasets import load_digits

    target = load_digits().target
    ids = a.provenance["selection"]["ids"]
    assert np.array_equal(np.where(target[ids] == 3, 1.0, -1.0), a.y)
    for i in range(a.X.shape[0]):
        L = a.lengths[i]
        assert 2 <= L <= 16 and np.all(a.X[i, L:] == 0)
        assert len(np.unique(a.X[i, :L], axis=0)) == L  # positions make tokens distinct
    assert a.provenance["digits"]["content_sha256"] == dg.DIGITS_SHA256
    c = dg.digits_problem(n=10, T=3, d=6, seed=0, classes=(1, 7), patch=4)
    assert (
        c.X.shape == (10, 3, 6)
        and c.provenance["truncated"] == 10
        and c.provenance["digits"]["classes"] == [1, 7]
    )


def test_digits_refusals(monkeypatch) -> None:
    with pytest.raises(MdcertError, match="no \\[CLS\\] token"):
        dg.digits_problem(n=3, T=4, seed=0, z="cls")
    for bad in ("3", "3,3", "3,10", "a,b", "1,2,3"):
        with pytest.raises(MdcertError, match="give two different digits 0..9"):
            dg.parse_classes(bad)
    assert dg.parse_classes("8,3") == (8, 3)
    monkeypatch.setattr(dg, "DIGITS_SHA256", "0" * 64)
    with pytest.raises(MdcertError, match="not the expected 1,797 images"):
        dg.digits_source()
