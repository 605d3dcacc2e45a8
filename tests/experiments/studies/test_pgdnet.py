"""The network and measurements of ``mdcert study pgd`` (experiments/studies/pgdnet.py)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from experiments.studies.pgdnet import (
    DigitsMLP,
    feature_margin,
    step_times,
    weight_matrices,
    weight_stats,
)


def test_mlp_returns_logits_and_last_hidden_features():
    m = DigitsMLP(8, seed=3)
    logits, h = m(torch.zeros(5, 1, 8, 8))
    assert logits.shape == (5, 10) and h.shape == (5, 4)
    assert sorted(weight_matrices(m)) == ["body.1.weight", "body.3.weight", "head.weight"]
    same = DigitsMLP(8, seed=3)
    assert all(torch.equal(a, b) for a, b in zip(m.parameters(), same.parameters()))


def test_weight_stats_counts_small_entries_and_l1_mass():
    m = DigitsMLP(8, seed=0)
    with torch.no_grad():
        for w in weight_matrices(m).values():
            w.zero_()
        m.head.weight[0, 0] = 1.0  # one entry carries all l1 mass of every matrix's max
        m.body[1].weight[0, 0] = 2.0
        m.body[3].weight[0, 0] = 3.0
    s = weight_stats(m)
    n = 64 * 8 + 8 * 4 + 4 * 10
    assert s["entries"] == n
    assert s["below_relative"]["0.01"] == pytest.approx((n - 3) / n)
    assert s["l1_mass_fraction_of_entries"]["50"] == pytest.approx(
        1 / n
    )  # the entry 3 alone is half of 6
    assert s["l1_mass_fraction_of_entries"]["90"] == pytest.approx(3 / n)  # 3 + 2 < 0.9 * 6
    assert sum(s["histogram_relative"]) == n


def test_feature_margin_certifies_and_bounds_the_trained_head():
    torch.manual_seed(0)
    m = DigitsMLP(16, seed=1)
    x = torch.rand(60, 1, 8, 8)
    with torch.no_grad():
        y = m(x)[0].argmax(1).numpy()  # labels the head itself separates
    if len(set(y.tolist())) < 10:
        y = np.arange(60) % 10
    res = feature_margin(m, x, y, p="2", digits=6, time_limit=20)
    assert res["n"] == 60 and res["d"] == 9
    assert res["status"] in ("optimal", "infeasible", "no_verified_result")
    if res["status"] == "optimal":
        assert res["margin_lower"] <= res["margin_upper"]
        assert res["trained_margin"] <= res["margin_upper"]


def test_collapsed_features_are_a_gordan_verdict():
    m = DigitsMLP(8, seed=0)
    with torch.no_grad():
        m.body[3].weight.zero_()
        m.body[3].bias.fill_(-1.0)  # every feature 0: all points equal, labels differ
    res = feature_margin(
        m,
        torch.rand(30, 1, 8, 8, generator=torch.Generator().manual_seed(1)),
        np.arange(30) % 10,
        p="2",
    )
    assert res["status"] == "infeasible" and "margin_lower" not in res


def test_step_times_are_interleaved_medians():
    x, y = (
        torch.rand(16, 1, 8, 8, generator=torch.Generator().manual_seed(2)),
        torch.arange(16) % 10,
    )
    t = step_times(
        lambda: DigitsMLP(8, seed=0), (x, y), p="3", lr=0.01, sgd_lr=0.1, repeats=4, warmup=1
    )
    assert t["repeats"] == 4 and t["batch"] == 16
    for k in ("pgd_step", "sgd_step", "pgd_update", "sgd_update"):
        assert 0 < t[k]["q1"] <= t[k]["median"] <= t[k]["q3"]
    assert t["ratio_step"] > 0 and "error" not in t


def test_save_features_writes_both_splits_and_the_head(tmp_path):
    import json

    from experiments.studies.pgdnet import FEATURES_FORMAT, features, save_features
    from experiments.studies.train import ImageTask

    m = DigitsMLP(8, seed=1)
    images = torch.rand(7, 1, 8, 8, generator=torch.Generator().manual_seed(3))
    task = ImageTask(images, torch.arange(7) % 3)
    out = tmp_path / "features" / "k.npz"
    save_features(out, m, task, {"train": [0, 2, 4], "test": [6]}, {"key": "k"})
    with np.load(out) as fh:
        assert str(fh["format"]) == FEATURES_FORMAT and json.loads(str(fh["record"])) == {
            "key": "k"
        }
        assert np.array_equal(fh["train_features"], features(m, images[[0, 2, 4]]))
        assert fh["train_labels"].tolist() == [0, 2, 1] and fh["test_ids"].tolist() == [6]
        assert np.array_equal(fh["head_weight"], m.head.weight.detach().double().numpy())


def test_text_mlp_and_its_two_class_margin():
    from experiments.studies.pgdnet import TextMLP

    m = TextMLP(12, seed=2)
    x = torch.randn(40, 384, generator=torch.Generator().manual_seed(4))
    logits, h = m(x)
    assert logits.shape == (40, 2) and h.shape == (40, 12) and bool((h >= 0).all())
    assert sorted(weight_matrices(m)) == ["body.0.weight", "head.weight"]
    assert weight_stats(m)["entries"] == 384 * 12 + 12 * 2
    with torch.no_grad():
        y = m(x)[0].argmax(1).numpy()  # labels the head itself separates
    if len(set(y.tolist())) < 2:
        y = np.arange(40) % 2
    res = feature_margin(m, x, y, p="2", digits=6, time_limit=20)
    assert res["n"] == 40 and res["d"] == 13 and res["status"] in ("optimal", "infeasible")
    if res["status"] == "optimal":  # the head separates its own labels: K = 2, margin >= trained
        assert 0 < res["margin_lower"] <= res["margin_upper"]
        assert res["trained_margin"] <= res["margin_upper"]
