"""experiments/data/sentence.py and the text source of experiments/data/points.py: MiniLM sentence
embeddings (unit, float32 values, independent of the other snippets), with provenance."""

from __future__ import annotations

import numpy as np

from certify.classification import load_problem
from experiments.data import points as pts
from experiments.data.corpus import CORPUS_SHA256, read_corpus
from experiments.data.sentence import encoder_record, sentence_embeddings
from experiments.data.tokenizer import MODEL_FILES


def test_embeddings_are_unit_float32_and_do_not_depend_on_the_batch() -> None:
    texts = read_corpus(limit=6).texts
    many = sentence_embeddings(texts)
    one = sentence_embeddings(texts[2:3])
    assert many.shape == (6, 384) and many.dtype == np.float64
    assert np.array_equal(many, many.astype(np.float32).astype(np.float64))
    assert np.allclose(np.linalg.norm(many, axis=1), 1.0, atol=1e-6)
    assert one.tobytes() == many[2:3].tobytes()
    assert len({row.tobytes() for row in many}) == 6


def test_pooling_is_the_mean_of_every_token_output() -> None:
    """The sentence-transformers pipeline: mean over [CLS] ... [SEP], then unit norm."""
    from experiments.data.encoder import load_encoder
    from experiments.data.tokenizer import load_tokenizer

    text = read_corpus(limit=1).texts[0]
    torch, model = load_encoder()
    ids = load_tokenizer().encode(text).ids
    with torch.inference_mode():
        hidden = model(input_ids=torch.tensor([ids])).last_hidden_state[0].numpy()
    mean = hidden.astype(np.float64).mean(axis=0)
    expected = mean / np.linalg.norm(mean)
    assert np.allclose(sentence_embeddings([text])[0], expected, atol=1e-6)


def test_text_points_record_and_exact_file(tmp_path) -> None:
    data = pts.text_points(kind="classification", n=12, seed=4, limit=200)
    problem = data.problem()
    assert problem.kind == "binary" and problem.X.shape == (12, 384)
    rec = problem.provenance
    assert rec["source"] == "text" and rec["corpus"]["sha256"] == CORPUS_SHA256
    assert rec["corpus"]["limit"] == 200 and rec["n"] == 12 and rec["seed"] == 4
    assert rec["encoder"] == encoder_record() and rec["encoder"]["package"].endswith("==0.1.0")
    assert {rec["encoder"]["tokenizer"]["sha256"], rec["encoder"]["weights"]["sha256"]} == set(
        MODEL_FILES.values()
    )
    corpus = read_corpus(limit=200)
    rows = rec["selection"]["ids"]
    index = [int(np.flatnonzero(corpus.rows == r)[0]) for r in rows]
    assert np.array_equal(problem.y, corpus.labels[index])
    counts = rec["labels"]["counts"]
    assert counts["fresh (+1)"] + counts["rotten (-1)"] == 12
    out = tmp_path / "t.npz"
    problem.save(out)
    back = load_problem(out)
    assert back.X.tobytes() == data.X.tobytes() and back.provenance == problem.provenance


def test_cached_embeddings_are_the_computed_ones_chunked_and_reused(tmp_path) -> None:
    from experiments.data.sentence import CACHE_PREFIX, cached_sentence_embeddings

    corpus = read_corpus(limit=12)
    order = [5, 1, 9, 0, 3, 7]
    X, info = cached_sentence_embeddings(corpus, order, cache_dir=tmp_path, chunk=4)
    assert X.tobytes() == sentence_embeddings([corpus.texts[i] for i in order]).tobytes()
    assert (info["chunks"], info["encoded"], info["reused"]) == (2, 2, 0)
    files = sorted(tmp_path.glob(f"{CACHE_PREFIX}*.npz"))
    assert [f.name[len(CACHE_PREFIX) : -4] for f in files] == sorted(info["keys"])
    # a longer request that begins with the same order reuses the full chunk
    Y, more = cached_sentence_embeddings(corpus, order + [2, 11], cache_dir=tmp_path, chunk=4)
    assert more["keys"][0] == info["keys"][0] and (more["reused"], more["encoded"]) == (1, 1)
    assert Y[:4].tobytes() == X[:4].tobytes()
    # a damaged record is recomputed and replaced
    path = tmp_path / f"{CACHE_PREFIX}{info['keys'][0]}.npz"
    path.write_bytes(b"not an npz")
    Z, again = cached_sentence_embeddings(corpus, order, cache_dir=tmp_path, chunk=4)
    assert (again["encoded"], again["reused"]) == (1, 1) and Z.tobytes() == X.tobytes()
