"""Pruning zeroes the stated fraction, keeps it through a masked fine-tune, and measures size (experiments/studies/prune.py)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from experiments.studies.models import (
    EncoderConfig,
    VisionTransformer,
    attention_matrices,
    weight_matrices,
)
from experiments.studies.prune import (
    PruneSetting,
    SparseLinear,
    csr_bytes,
    magnitude_masks,
    apply_masks,
    prune_and_measure,
    zero_fraction,
)
from experiments.studies.train import ImageTask, evaluate, parse_optimizer


def _model(seed=0):
    return VisionTransformer(
        EncoderConfig(blocks=1, heads=2, width=8, max_len=17), image=8, patch=2, seed=seed
    )


@pytest.mark.parametrize("s", [0.5, 0.7, 0.9, 0.95])
def test_masks_zero_exactly_the_fraction_of_smallest_entries(s):
    m = _model()
    mats = attention_matrices(m)
    n = sum(w.numel() for w in mats.values())
    kept_min = None
    masks = magnitude_masks(mats, s)
    dropped_max = max(
        float(w.detach()[mk == 0].abs().max()) for w, mk in zip(mats.values(), masks.values())
    )
    kept_min = min(
        float(w.detach()[mk == 1].abs().min()) for w, mk in zip(mats.values(), masks.values())
    )
    assert dropped_max <= kept_min
    apply_masks(mats, masks)
    assert zero_fraction(mats) == round(s * n) / n


def test_csr_bytes_is_measured():
    w = torch.zeros(10, 20)
    w[0, :5] = 1.0
    assert csr_bytes(w) == 5 * 4 + 5 * 4 + 11 * 4
    lin = torch.nn.Linear(20, 10)
    with torch.no_grad():
        lin.weight.copy_(w)
    x = torch.randn(3, 4, 20)
    torch.testing.assert_close(SparseLinear(lin)(x), lin(x))


@pytest.mark.parametrize("opt", ["1.1", "2", "adam"])
def test_prune_and_measure_keeps_zeros_after_finetune(opt):
    torch.manual_seed(0)
    task = ImageTask(torch.rand(40, 1, 8, 8), torch.randint(0, 10, (40,)))
    m = _model()
    before = {k: v.clone() for k, v in m.state_dict().items()}
    idx = np.arange(40)
    res = prune_and_measure(
        m,
        sets={"attention": attention_matrices, "all": weight_matrices},
        sparsities=(0.5, 0.9),
        task=task,
        train_idx=idx[:30],
        test_idx=idx[30:],
        setting=PruneSetting(parse_optimizer(opt), 0.01 if opt != "adam" else 1e-3, 8, 0, 4),
        device=torch.device("cpu"),
        repeats=1,
    )
    assert all(
        torch.equal(before[k], v) for k, v in m.state_dict().items()
    )  # the model is not changed
    for name, rows in res["sets"].items():
        for r in rows:
            assert r["zero_fraction"] == pytest.approx(r["sparsity"], abs=2e-3)
            assert r["zero_fraction_after_finetune"] >= r["zero_fraction"]
            assert r["set_csr_bytes"] > 0 and r["set_dense_bytes"] > r["set_csr_bytes"] * (
                0.9 if r["sparsity"] > 0.6 else 0
            )
            assert r["sparse_seconds"] > 0 and 0 <= r["acc_pruned"] <= 1
    assert res["dense_seconds"] > 0
    assert evaluate(m, task, idx[30:], device=torch.device("cpu")) >= 0
