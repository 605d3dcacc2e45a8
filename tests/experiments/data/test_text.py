"""experiments/data/text.py: Rotten Tomatoes problems (small slices of the corpus)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest

from certify import AttentionProblem
from certify.errors import MdcertError
from experiments.data.corpus import read_corpus
from experiments.data.text import STATIC_CLS_REFUSED, text_problem, text_source
from experiments.data.tokenizer import content_tokens, encode

LIMIT = 400


@pytest.fixture(scope="module")
def source():
    return text_source(limit=LIMIT)


def test_same_arguments_same_bytes(source, tmp_path) -> None:
    a = text_problem(n=30, T=12, d=8, seed=4, limit=LIMIT)
    b = text_problem(n=30, T=12, d=8, seed=4, source=source)
    for name in ("X", "y", "z", "v", "lengths"):
        assert getattr(a, name).tobytes() == getattr(b, name).tobytes()
    a.problem().save(tmp_path / "a.npz")
    b.problem().save(tmp_path / "b.npz")
    assert (tmp_path / "a.npz").read_bytes() == (tmp_path / "b.npz").read_bytes()
    c = text_problem(n=30, T=12, d=8, seed=5, source=source)
    assert c.provenance["selection"]["ids"] != a.provenance["selection"]["ids"]


def test_provenance_hashes_match_the_files(source) -> None:
    rec = text_problem(n=5, T=8, d=4, seed=0, source=source).provenance
    for part in ("corpus", "tokenizer", "encoder"):
        path = Path(rec[part]["path"])
        assert path.as_posix().endswith(rec[part]["file"])
        assert rec[part]["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert rec["tokens"]["duplicates"].startswith("merge") and rec["encoder"]["embed"] == "static"
    assert (rec["n"], rec["T"], rec["d"], rec["seed"], rec["z_mode"]) == (5, 8, 4, 0, "mean")
    assert rec["projection"]["method"] == "PCA" and rec["mdcert_version"]
    assert rec["corpus"]["limit"] == LIMIT and rec["split"]["seed"] == 0


def test_examples_are_the_selected_reviews_merged_and_padded(source) -> None:
    data = text_problem(n=60, T=10, d=6, seed=1, source=source)
    corpus = read_corpus(limit=LIMIT)
    where = {int(r): k for k, r in enumerate(corpus.rows)}
    rows = data.provenance["selection"]["ids"]
    encoded = encode([corpus.texts[where[row]] for row in rows])
    repeats = 0
    for i, row in enumerate(rows):
        k, ids = where[row], encoded[i]
        kept = content_tokens(ids)
        repeats += len(kept.ids) < len(ids) - 2
        L = int(data.lengths[i])
        assert data.y[i] == corpus.labels[k] and L == min(len(kept.ids), 10)
        assert np.all(data.X[i, L:] == 0) and len(np.unique(data.X[i, :L], axis=0)) == L
        np.testing.assert_allclose(data.z[i], data.X[i, :L].mean(axis=0), atol=1e-13)
    assert repeats > 0  # some selected reviews repeat a token: merged
    assert np.isclose(np.linalg.norm(data.v), 1.0)


def test_problem_round_trip_keeps_lengths_and_provenance(source, tmp_path) -> None:
    data = text_problem(n=12, T=16, d=5, seed=2, source=source)
    problem = data.problem()
    assert (
        np.array_equal(problem.valid_lengths, data.lengths)
        and problem.provenance == data.provenance
    )
    for suffix in (".npz", ".json"):
        back = AttentionProblem.load(problem.save(tmp_path / f"p{suffix}"))
        assert back.data_hash() == problem.data_hash() and back.provenance == data.provenance
        assert np.array_equal(back.valid_lengths, data.lengths) and np.array_equal(back.X, data.X)
    assert problem.optimal_indices().unique


def test_static_cls_is_refused_and_sizes_checked(source) -> None:
    with pytest.raises(MdcertError, match="static \\[CLS\\] embedding is one constant") as err:
        text_problem(n=3, T=4, d=4, seed=0, z="cls", source=source)
    assert str(err.value) == STATIC_CLS_REFUSED
    with pytest.raises(MdcertError, match="invalid --d 385"):
        text_problem(n=3, T=4, d=385, seed=0, source=source)
    with pytest.raises(MdcertError, match="invalid --n 400: the training split has"):
        text_problem(n=400, T=4, d=4, seed=0, source=source)
    with pytest.raises(MdcertError, match="not encoded with --embed contextual"):
        text_problem(n=3, T=4, d=4, seed=0, embed="contextual", source=source)


def test_contextual_problem_on_a_few_reviews(tmp_path) -> None:
    data = text_problem(
        n=3, T=6, d=4, seed=0, embed="contextual", z="cls", limit=40, cache_dir=tmp_path
    )
    rec = data.provenance
    assert rec["encoder"]["embed"] == "contextual" and rec["z_mode"] == "cls"
    assert Path(rec["encoder"]["cache_file"]).parent == tmp_path
    assert data.X.shape == (3, 6, 4) and not np.allclose(data.z[0], data.z[1])
    assert data.problem().provenance == rec
