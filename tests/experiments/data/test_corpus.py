"""experiments/data/corpus.py: the Rotten Tomatoes file, its pinned hash and the split."""

from __future__ import annotations

import bz2
import hashlib

import numpy as np
import pytest

from certify.errors import MdcertError
from experiments.data.corpus import CORPUS_FILE, CORPUS_SHA256, corpus_path, read_corpus, split


def test_corpus_counts_and_labels() -> None:
    corpus = read_corpus()
    assert corpus.total_rows == 13905 and len(corpus) == 12808
    assert int(np.sum(corpus.labels == 1)) == 7403 and int(np.sum(corpus.labels == -1)) == 5405
    assert corpus.texts[0] == "A three-hour cinema master class." and corpus.labels[0] == 1
    assert corpus.sha256 == CORPUS_SHA256 == hashlib.sha256(corpus_path().read_bytes()).hexdigest()
    assert str(corpus.path).endswith(CORPUS_FILE)
    assert np.all(np.diff(corpus.rows) > 0)


def test_limit_keeps_the_first_snippets() -> None:
    full, few = read_corpus(), read_corpus(limit=5)
    assert (
        few.texts == full.texts[:5]
        and np.array_equal(few.rows, full.rows[:5])
        and few.total_rows == 13905
    )


def test_a_different_file_is_refused(tmp_path) -> None:
    raw = bz2.decompress(corpus_path().read_bytes()).replace(b"\nfresh,", b"\nrotten,", 1)
    other = tmp_path / "rotten_tomatoes_corpus_full.csv.bz2"
    other.write_bytes(bz2.compress(raw))
    with pytest.raises(
        MdcertError, match=r"has sha256 .* not the expected 26b56d24d5a04cbe.* reinstall"
    ):
        read_corpus(other)
    assert (
        read_corpus(other, expected_sha256=hashlib.sha256(other.read_bytes()).hexdigest()).labels[0]
        == -1
    )
    with pytest.raises(MdcertError, match="corpus file not found"):
        read_corpus(tmp_path / "missing.csv.bz2")


def test_a_malformed_file_is_one_line(tmp_path) -> None:
    bad = tmp_path / "bad.csv.bz2"
    bad.write_bytes(b"not bz2 at all")
    with pytest.raises(MdcertError, match="cannot read corpus file"):
        read_corpus(bad, expected_sha256=hashlib.sha256(bad.read_bytes()).hexdigest())
    bad.write_bytes(bz2.compress(b"a,b\n1,2\n"))
    with pytest.raises(MdcertError, match="lacks the columns category,text"):
        read_corpus(bad, expected_sha256=hashlib.sha256(bad.read_bytes()).hexdigest())


@pytest.mark.parametrize("count", [1, 10, 12808])
def test_split_is_fixed_disjoint_and_complete(count) -> None:
    train, test = split(count)
    again = split(count)
    assert np.array_equal(train, again[0]) and np.array_equal(test, again[1])
    assert len(train) == round(0.9 * count) and not set(train) & set(test)
    assert np.array_equal(np.sort(np.concatenate([train, test])), np.arange(count))
