"""The tasks of ``mdcert study pgd`` (experiments/studies/pgdtasks.py): names, grids, the text data
(a prefix of one fixed permutation, split 20% test / 10% validation, cached embeddings), the
majority-class baseline and the records' configuration base."""

from __future__ import annotations

import numpy as np
import pytest

from certify.errors import MdcertError
from experiments.studies import pgdtasks as pt


def test_task_names_and_grids():
    assert pt.task_names("both") == ("digits", "text") and pt.task_names("text") == ("text",)
    for grids in (pt.GRIDS, pt.QUICK_GRIDS):
        assert set(grids) == set(pt.TASKS)
        for g in grids.values():
            assert set(g) == {"p1.1", "p1.5", "p2", "p3", "p10"}
    assert all(len(v) == 3 for g in pt.GRIDS.values() for v in g.values())
    assert all(len(v) == 1 for g in pt.QUICK_GRIDS.values() for v in g.values())


def test_chance_is_the_majority_training_label():
    labels = np.array([0, 0, 0, 1, 1, 2, 0, 1])
    c = pt.chance_baseline(labels, np.arange(5), np.arange(5, 8))
    assert c["class"] == 0 and c["test_acc"] == pytest.approx(1 / 3)


def test_text_data_is_a_prefix_split_with_cached_embeddings(tmp_path):
    from experiments.data.corpus import read_corpus
    from experiments.data.sentence import cached_sentence_embeddings, sentence_embeddings

    tc = pt.TaskConfig("text", 8, 1, 16, {}, snippets=60, cache_dir=str(tmp_path))
    task, train, val, test, info = pt.load_task(tc, reload=True)
    assert (len(test), len(val), len(train)) == (12, 5, 43)
    assert sorted(np.concatenate([test, val, train]).tolist()) == list(range(60))
    assert info["snippets"] == 60 and info["cache"]["encoded"] == 1
    corpus = read_corpus()
    order = np.random.default_rng(0).permutation(len(corpus))[:60]
    assert np.array_equal(task.labels.numpy(), (corpus.labels[order] > 0).astype(int))
    assert info["fresh"] == int(task.labels.sum())
    raw, _ = cached_sentence_embeddings(corpus, order, cache_dir=tmp_path)
    assert np.array_equal(raw[0], sentence_embeddings([corpus.texts[order[0]]])[0])
    z = (raw - raw[train].mean(axis=0)) / raw[train].std(axis=0)  # standardized by the train split
    assert np.allclose(task.images.double().numpy(), z, atol=1e-5)
    assert np.allclose(task.images[train].double().mean(0).numpy(), 0.0, atol=1e-5)
    again = pt.load_task(tc, reload=True)[4]
    assert again["cache"]["reused"] == 1 and again["cache"]["encoded"] == 0
    assert again["rows_sha256"] == info["rows_sha256"]
    base = pt.describe(tc, train, val, test, info)
    assert base["task"] == "text" and base["data"]["snippets"] == 60
    assert "cache" not in base["data"]  # where the cache is does not change a run's key


def test_digits_base_is_the_one_of_the_study_before_the_text_task():
    tc = pt.TaskConfig("digits", 64, 40, 64, {})
    task, train, val, test, info = pt.load_task(tc)
    assert info == {} and pt.build_model(tc, 0).head.out_features == 10
    assert pt.describe(tc, train, val, test, info) == {
        "study": "pgd",
        "model": "DigitsMLP width 64",
        "epochs": 40,
        "batch": 64,
        "split": "digits seed 0",
        "train": len(train),
        "val": len(val),
        "test": len(test),
    }


def test_text_size_validates_in_one_line(tmp_path):
    assert pt.text_size(None, str(tmp_path)) == 12808
    assert pt.text_size(300, str(tmp_path)) == 300
    with pytest.raises(MdcertError, match="--snippets 10"):
        pt.text_size(10, str(tmp_path))
