"""experiments/data/encoder.py: static embeddings, the contextual MiniLM path and its cache."""

from __future__ import annotations

import numpy as np
import pytest

from certify.errors import MdcertError
from experiments.data import encoder
from experiments.data.corpus import Corpus, read_corpus
from experiments.data.tokenizer import content_tokens, encode, model_file

SHORT = ("A three-hour cinema master class.", "Bad, bad, bad movie.", "Dull and far too long.")


def _corpus(texts) -> Corpus:
    base = read_corpus(limit=1)
    return Corpus(
        tuple(texts),
        np.array([1.0, -1.0, -1.0][: len(texts)]),
        np.arange(len(texts)),
        base.path,
        base.sha256,
        len(texts),
    )


def test_static_embeddings_are_the_word_embedding_rows() -> None:
    from safetensors import safe_open

    table = encoder.static_embeddings()
    assert table.shape == (30522, 384) and table.dtype == np.float32
    with safe_open(str(model_file("model.safetensors")[0]), framework="numpy") as fh:
        assert np.array_equal(fh.get_tensor("embeddings.word_embeddings.weight")[2919], table[2919])
    feats = encoder.corpus_features(_corpus(SHORT), embed="static")
    assert feats.cls is None and feats.cache_file is None
    for i, text in enumerate(SHORT):
        kept = content_tokens(encode([text])[0])
        assert np.array_equal(feats.ids[feats.offsets[i] : feats.offsets[i + 1]], kept.ids)
        assert np.array_equal(feats.sequence(i), table[list(kept.ids)])


def test_contextual_path_on_three_short_reviews(tmp_path, monkeypatch) -> None:
    corpus = _corpus(SHORT)
    feats = encoder.corpus_features(corpus, embed="contextual", cache_dir=tmp_path)
    assert (
        feats.cache_file is not None
        and feats.cache_file.parent == tmp_path
        and feats.cache_file.is_file()
    )
    assert not [p for p in tmp_path.iterdir() if ".tmp" in p.name]
    torch, model = encoder.load_encoder()
    assert not model.training
    for i, text in enumerate(SHORT):  # each review alone, unbatched: the batched, masked run agrees
        ids = encode([text])[0]
        with torch.inference_mode():
            hidden = model(input_ids=torch.tensor([ids])).last_hidden_state[0].numpy()
        kept = content_tokens(ids)
        np.testing.assert_allclose(feats.sequence(i), hidden[list(kept.positions)], atol=2e-5)
        np.testing.assert_allclose(feats.cls[i], hidden[0], atol=2e-5)
    assert len(feats.sequence(1)) == 4  # bad , movie . : the repeats merged
    # second run: read from the cache (the encoder must not run), same bytes
    monkeypatch.setattr(
        encoder, "contextual_outputs", lambda *a, **k: pytest.fail("encoder ran again")
    )
    again = encoder.corpus_features(corpus, embed="contextual", cache_dir=tmp_path)
    assert (
        again.features.tobytes() == feats.features.tobytes()
        and again.cls.tobytes() == feats.cls.tobytes()
    )


def test_a_damaged_cache_is_recomputed(tmp_path) -> None:
    corpus = _corpus(SHORT[:1])
    first = encoder.corpus_features(corpus, embed="contextual", cache_dir=tmp_path)
    first.cache_file.write_bytes(b"garbage")
    again = encoder.corpus_features(corpus, embed="contextual", cache_dir=tmp_path)
    assert again.features.tobytes() == first.features.tobytes()


def test_cache_directory_rules(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("MDCERT_CACHE_DIR", str(tmp_path / "a"))
    assert encoder.default_cache_dir() == tmp_path / "a"
    monkeypatch.delenv("MDCERT_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert encoder.default_cache_dir() == tmp_path / "x" / "mdcert"
    assert (
        encoder.check_cache_dir(None) == tmp_path / "x" / "mdcert"
        and (tmp_path / "x" / "mdcert").is_dir()
    )
    (tmp_path / "file").write_text("")
    with pytest.raises(MdcertError, match="is a file; pass another --cache-dir"):
        encoder.check_cache_dir(tmp_path / "file")
    with pytest.raises(MdcertError, match="cannot be written; pass a writable --cache-dir"):
        encoder.check_cache_dir("/proc/mdcert-cache")


def test_unknown_embedding() -> None:
    with pytest.raises(MdcertError, match="unknown embedding 'x'"):
        encoder.corpus_features(_corpus(SHORT[:1]), embed="x")
