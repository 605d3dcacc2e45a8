"""The two tasks of ``mdcert study pgd`` (``--task digits|text|both``; docs/theory.md section 7.4).

- ``digits``: scikit-learn's digits with the vision study's split
  (`experiments.studies.vision.load_digits_task`), `experiments.studies.pgdnet.DigitsMLP`, K = 10.
- ``text``: MiniLM sentence embeddings (`experiments.data.sentence`, 384 wide, unit l2 norm) of the
  Rotten Tomatoes snippets (`experiments.data.corpus`), standardized per coordinate by the training
  split's mean and standard deviation (then float32), fresh = 1, rotten = 0; the first
  ``snippets`` entries of ``numpy.random.default_rng(0).permutation`` of the labelled snippets, the
  first 20% of them test, the next 10% of the rest validation, the remainder training (so a smaller
  run's snippets are a prefix of a larger one's); `experiments.studies.pgdnet.TextMLP`, K = 2. The
  embeddings come from the content-keyed cache (`experiments.data.sentence.cached_sentence_embeddings`):
  encoded once, reused by every rerun and every run of the study.

Every step-size grid was placed by pilot runs (comments at `GRIDS`); a task's records carry its name
in their configuration except digits', whose keys are those of the study before the text task.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np

__all__ = [
    "TASKS",
    "TASK_CHOICES",
    "GRIDS",
    "QUICK_GRIDS",
    "DEFAULTS",
    "TaskConfig",
    "task_names",
    "text_size",
    "load_task",
    "build_model",
    "chance_baseline",
    "describe",
]

TASKS = ("digits", "text")
TASK_CHOICES = ("digits", "text", "both")

#: step-size grids per task, three values per p, log-spaced by ~3.
#: digits: placed from pilot runs (width 64, 15 epochs, seed 0: p = 1.1 overflowed float32 at 0.3,
#: p = 10 stayed at chance from 1e-5 on: its mirror map |w|^9 makes the useful step tiny) and moved
#: once after a default run picked an edge (p = 3: 0.1 of 0.01..0.1; p = 10: 1e-9 of 1e-9..1e-7).
#: text: placed from pilot runs on the standardized embeddings (width 64, 20 epochs, batch 128, all
#: 12,808 snippets, seed 0): p = 1.1, 1.5, 2 best at 0.03 (0.003 still rising at 20 epochs, 0.1
#: oscillating); p = 3 best at 0.001-0.003 (0.03 oscillating); p = 10 flat from 1e-13 to 3e-12 and
#: oscillating from 1e-10 (its primal step ~ lr |g| / (9 |w|^8) is large on small weights).
#: Unstandardized embeddings (a large common mean) oscillated between epochs at every p.
GRIDS = {
    "digits": {
        "p1.1": (0.03, 0.1, 0.3),
        "p1.5": (0.1, 0.3, 1.0),
        "p2": (0.1, 0.3, 1.0),
        "p3": (0.03, 0.1, 0.3),
        "p10": (3e-10, 1e-9, 3e-9),
    },
    "text": {
        "p1.1": (0.01, 0.03, 0.1),
        "p1.5": (0.01, 0.03, 0.1),
        "p2": (0.01, 0.03, 0.1),
        "p3": (0.001, 0.003, 0.01),
        "p10": (3e-13, 1e-12, 3e-12),
    },
}
#: ``--quick``: no tuning, one step size per p (the pilot runs' best at the quick size; text: 2,000
#: snippets, width 32, 20 epochs, batch 64, seeds 0-2, every one above the majority class)
QUICK_GRIDS = {
    "digits": {"p1.1": (0.1,), "p1.5": (0.3,), "p2": (0.3,), "p3": (0.03,), "p10": (1e-8,)},
    "text": {"p1.1": (0.03,), "p1.5": (0.03,), "p2": (0.01,), "p3": (0.001,), "p10": (1e-12,)},
}
#: per task: (width, epochs, batch, snippets) by default and with ``--quick``
DEFAULTS = {
    "digits": {"full": (64, 40, 64, None), "quick": (32, 10, 64, None)},
    "text": {"full": (64, 20, 128, None), "quick": (32, 20, 64, 2000)},
}
SPLIT_SEED = 0


@dataclass(frozen=True)
class TaskConfig:
    """One task's sizes: hidden width, epochs, batch, step-size grids per optimizer key, and for
    text the number of snippets (None: all) and the embedding cache directory (None: the default)."""

    name: str
    width: int
    epochs: int
    batch: int
    grids: dict
    snippets: int | None = None
    cache_dir: str | None = None


def text_size(snippets: int | None, cache_dir: str | None) -> int:
    """The number of snippets of the text task, validated (the corpus and encoder files are checked,
    the cache directory made writable) before any work."""
    from certify.errors import MdcertError
    from experiments.data.corpus import read_corpus
    from experiments.data.encoder import check_cache_dir
    from experiments.data.tokenizer import model_file

    count = len(read_corpus())
    model_file("tokenizer.json"), model_file("model.safetensors")
    check_cache_dir(cache_dir)
    if snippets is not None and not 50 <= snippets <= count:
        raise MdcertError(f"--snippets {snippets}: give 50 to {count} (the labelled snippets)")
    return count if snippets is None else snippets


def task_names(choice: str) -> tuple[str, ...]:
    """``digits`` / ``text`` / ``both`` -> the tasks run, in report order."""
    return TASKS if choice == "both" else (choice,)


#: the text data loaded in this process, by (snippets, cache_dir)
_LOADED: dict = {}


def _text(snippets: int | None, cache_dir: str | None, progress: bool):
    import torch

    from experiments.data.corpus import read_corpus
    from experiments.data.sentence import cached_sentence_embeddings
    from experiments.studies.train import ImageTask

    corpus = read_corpus()
    order = np.random.default_rng(SPLIT_SEED).permutation(len(corpus))[:snippets]
    X, cache = cached_sentence_embeddings(corpus, order, cache_dir=cache_dir, progress=progress)
    labels = (corpus.labels[order] > 0).astype(np.int64)
    n = len(order)
    ntest = int(round(0.2 * n))
    nval = int(round(0.1 * (n - ntest)))
    test, val, train = np.arange(ntest), np.arange(ntest, ntest + nval), np.arange(ntest + nval, n)
    mean, sd = X[train].mean(axis=0), X[train].std(axis=0)
    X = (X - mean) / np.where(sd > 0, sd, 1.0)  # standardized by the training split (float64)
    rows = np.ascontiguousarray(corpus.rows[order], "<i8")
    info = {
        "corpus_sha256": corpus.sha256,
        "snippets": n,
        "rows_sha256": hashlib.sha256(rows.tobytes()).hexdigest(),
        "fresh": int(labels.sum()),
        "cache": {k: cache[k] for k in ("cache_dir", "chunks", "reused", "encoded")},
    }
    task = ImageTask(torch.as_tensor(X, dtype=torch.float32), torch.as_tensor(labels))
    return task, train, val, test, info


def load_task(tc: TaskConfig, *, progress: bool = False, reload: bool = False):
    """``(task, train, val, test, info)`` of ``tc``'s data. Text: encoded or read from the cache,
    kept for the process; ``reload`` reads the cache again (each study invocation does, so its
    ``info["cache"]`` counts what that invocation found)."""
    if tc.name == "digits":
        from experiments.studies.vision import load_digits_task

        return (*load_digits_task(), {})
    key = (tc.snippets, tc.cache_dir)
    if reload or key not in _LOADED:
        _LOADED.clear()
        _LOADED[key] = _text(tc.snippets, tc.cache_dir, bool(progress))
    return _LOADED[key]


def build_model(tc: TaskConfig, seed: int):
    """The task's network at ``seed`` (torch's default initialization)."""
    from experiments.studies.pgdnet import DigitsMLP, TextMLP

    return DigitsMLP(tc.width, seed=seed) if tc.name == "digits" else TextMLP(tc.width, seed=seed)


def chance_baseline(labels: np.ndarray, train: np.ndarray, test: np.ndarray) -> dict:
    """Test accuracy of always predicting the most frequent training label (the majority-class baseline)."""
    counts = np.bincount(labels[train])
    k = int(counts.argmax())
    return {
        "class": k,
        "test_acc": float((labels[test] == k).mean()),
        "rule": "most frequent training label",
    }


def describe(tc: TaskConfig, train, val, test, info: dict) -> dict:
    """The base of every record's configuration for this task (digits: unchanged from the study
    before the text task, so its records stay valid)."""
    base = {
        "study": "pgd",
        "epochs": tc.epochs,
        "batch": tc.batch,
        "train": len(train),
        "val": len(val),
        "test": len(test),
    }
    if tc.name == "digits":
        return {**base, "model": f"DigitsMLP width {tc.width}", "split": "digits seed 0"}
    return {
        **base,
        "task": "text",
        "model": f"TextMLP 384 -> {tc.width} ReLU -> 2",
        "split": "rotten tomatoes snippets, permutation seed 0, 20% test, 10% of the rest val",
        "data": {k: info[k] for k in ("corpus_sha256", "snippets", "rows_sha256")},
        "features": "MiniLM sentence embeddings (mdcert-sentence-embeddings/1), standardized per "
        "coordinate by the training split's mean and standard deviation",
    }
