"""Shapes and masking of the study models (experiments/studies/models.py)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from experiments.studies.models import (
    CLS_ID,
    FULL_VOCAB,
    PAD_ID,
    SEP_ID,
    EncoderConfig,
    TextClassifier,
    VisionTransformer,
    Vocabulary,
    attention_matrices,
    weight_matrices,
)


def _vocab():
    return Vocabulary.from_sequences([[CLS_ID, 2000, 2001, 3000, SEP_ID]])


def test_vocabulary_rows_and_lookup():
    v = _vocab()
    assert list(v.ids) == sorted({PAD_ID, 100, CLS_ID, SEP_ID, 2000, 2001, 3000})
    assert v.rows([CLS_ID, 3000]) == [int(v.lookup[CLS_ID]), int(v.lookup[3000])]
    with pytest.raises(ValueError):
        v.rows([5])


def test_restricted_table_rows_are_the_full_tables_rows():
    cfg = EncoderConfig(blocks=1, heads=2, width=8, max_len=16)
    v = _vocab()
    m = TextClassifier(cfg, v, seed=3)
    full = torch.empty(FULL_VOCAB, 8).normal_(0.0, 0.02, generator=torch.Generator().manual_seed(3))
    assert torch.equal(m.tok.weight.detach(), full[torch.as_tensor(v.ids)])


def test_text_shapes_and_padding_does_not_change_the_output():
    cfg = EncoderConfig(blocks=2, heads=2, width=8, max_len=16)
    v = _vocab()
    m = TextClassifier(cfg, v, seed=0).eval()
    seq = v.rows([CLS_ID, 2000, 3000, SEP_ID])
    pad = int(v.lookup[PAD_ID])
    short = torch.tensor([seq])
    long = torch.tensor([seq + [pad, pad, pad]])
    with torch.no_grad():
        out1, a1 = m(short, torch.ones(1, 4, dtype=torch.bool))
        out2, a2 = m(long, torch.tensor([[True] * 4 + [False] * 3]))
    assert out1.shape == (1, 2) and a1.shape == (1, 2, 4, 4) and a2.shape == (1, 2, 7, 7)
    torch.testing.assert_close(out1, out2, rtol=1e-5, atol=1e-6)
    assert float(a2[0, :, :, 4:].abs().max()) == 0.0  # no attention on padding
    torch.testing.assert_close(a2.sum(-1)[0, :, :4], torch.ones(2, 4))


def test_width_must_divide_heads():
    with pytest.raises(ValueError):
        EncoderConfig(blocks=3, heads=3, width=8, max_len=8)


def test_vit_shapes_and_matrices():
    cfg = EncoderConfig(blocks=2, heads=2, width=8, max_len=17)
    m = VisionTransformer(cfg, image=8, patch=2, seed=0)
    out, attn = m(torch.rand(5, 1, 8, 8))
    assert out.shape == (5, 10) and attn.shape == (5, 2, 17, 17)
    assert set(attention_matrices(m)) == {f"block{i}.{n}" for i in range(2) for n in "qkvo"}
    assert "head" in weight_matrices(m) and "embed" in weight_matrices(m)
    img = torch.arange(64.0).reshape(1, 1, 8, 8)
    patches = m.patches(img)
    assert patches.shape == (1, 16, 4)
    assert patches[0, 1].tolist() == [2.0, 3.0, 10.0, 11.0]
    with pytest.raises(ValueError):
        VisionTransformer(cfg, image=8, patch=3)


def test_same_seed_same_init_different_seed_differs():
    cfg = EncoderConfig(blocks=1, heads=1, width=4, max_len=8)
    a, b, c = (TextClassifier(cfg, _vocab(), seed=s) for s in (1, 1, 2))
    assert all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), b.state_dict().values()))
    assert not torch.equal(a.tok.weight, c.tok.weight)
    assert np.isfinite(a.tok.weight.detach().numpy()).all()
