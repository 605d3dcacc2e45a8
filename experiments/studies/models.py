"""Softmax-attention encoders of the studies: a sentiment classifier on token ids and a small ViT (docs/theory.md section 6.5).

Both are stacks of pre-norm blocks ``x + Attn(LN x)``, ``x + FFN(LN x)`` whose attention has separate
query, key, value and output matrices (``nn.Linear``, named ``q``, ``k``, ``v``, ``o``), so that the
weight counts and pruning of `experiments.studies.prune` can name
each attention matrix. Attention is written out (``softmax(Q K^T / sqrt(d_h) + mask)``) so the
last block's attention can be returned for the causal tests of `experiments.studies.causal`.

The sentiment model's token table holds only the token ids that the corpus uses (`Vocabulary`): its
rows are the rows of a full 30,522-row table drawn from the seed, so the restriction is neutral here.
A row whose token never occurs in a training batch gets a zero gradient at every step, and none of
the optimizers of the studies moves an entry whose gradient has always been zero (mirror descent:
``Q <- Q - lr * 0``; Adam: its moments stay 0), so such a row keeps its initial value either way,
and rows of unused ids never enter any forward pass.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

__all__ = [
    "EncoderConfig",
    "Vocabulary",
    "Block",
    "Encoder",
    "TextClassifier",
    "VisionTransformer",
    "attention_matrices",
    "weight_matrices",
    "FULL_VOCAB",
    "PAD_ID",
    "CLS_ID",
    "SEP_ID",
    "UNK_ID",
]

FULL_VOCAB = 30522
PAD_ID, UNK_ID, CLS_ID, SEP_ID = 0, 100, 101, 102
INIT_STD = 0.02


@dataclass(frozen=True)
class EncoderConfig:
    """Shape of an encoder: ``blocks`` blocks of ``heads`` heads (the paper's size: blocks = heads),
    ``width`` (a multiple of ``heads``), FFN width ``ffn_mult * width``, ``dropout``, ``max_len`` positions."""

    blocks: int
    heads: int
    width: int
    max_len: int
    dropout: float = 0.0
    ffn_mult: int = 2

    def __post_init__(self) -> None:
        if self.width % self.heads:
            raise ValueError(f"width {self.width} is not a multiple of heads {self.heads}")


@dataclass(frozen=True, eq=False)
class Vocabulary:
    """The token ids a corpus uses, in increasing order; ``lookup[full_id]`` is the row (``-1``: unused)."""

    ids: np.ndarray
    lookup: np.ndarray

    @staticmethod
    def from_sequences(seqs, *, full_size: int = FULL_VOCAB) -> "Vocabulary":
        used = {PAD_ID, UNK_ID, CLS_ID, SEP_ID}
        for s in seqs:
            used.update(int(t) for t in s)
        ids = np.array(sorted(used), dtype=np.int64)
        lookup = np.full(full_size, -1, dtype=np.int64)
        lookup[ids] = np.arange(len(ids))
        return Vocabulary(ids, lookup)

    def __len__(self) -> int:
        return len(self.ids)

    def rows(self, seq) -> list[int]:
        """Table rows of a sequence of full-vocabulary ids (every id must be in the vocabulary)."""
        out = self.lookup[np.asarray(seq, dtype=np.int64)]
        if (out < 0).any():
            raise ValueError("token id outside the vocabulary of the corpus")
        return out.tolist()


class Attention(nn.Module):
    """Multi-head softmax attention with separate ``q``, ``k``, ``v``, ``o`` matrices."""

    def __init__(self, width: int, heads: int, dropout: float) -> None:
        super().__init__()
        self.heads = heads
        self.q, self.k, self.v, self.o = (nn.Linear(width, width) for _ in range(4))
        self.drop = nn.Dropout(dropout)

    def forward(
        self, x: torch.Tensor, key_mask: torch.Tensor | None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        b, t, d = x.shape
        h = self.heads
        q, k, v = (m(x).view(b, t, h, d // h).transpose(1, 2) for m in (self.q, self.k, self.v))
        scores = q @ k.transpose(-1, -2) / math.sqrt(d // h)
        if key_mask is not None:  # key_mask: (b, t) True for real tokens
            scores = scores.masked_fill(~key_mask[:, None, None, :], float("-inf"))
        attn = scores.softmax(dim=-1)
        out = (self.drop(attn) @ v).transpose(1, 2).reshape(b, t, d)
        return self.o(out), attn


class Block(nn.Module):
    """Pre-norm transformer block: ``x + Attn(LN x)``, then ``x + FFN(LN x)`` (GELU)."""

    def __init__(self, cfg: EncoderConfig) -> None:
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(cfg.width), nn.LayerNorm(cfg.width)
        self.attn = Attention(cfg.width, cfg.heads, cfg.dropout)
        self.ff1 = nn.Linear(cfg.width, cfg.ffn_mult * cfg.width)
        self.ff2 = nn.Linear(cfg.ffn_mult * cfg.width, cfg.width)
        self.drop = nn.Dropout(cfg.dropout)

    def forward(self, x, key_mask):
        a, attn = self.attn(self.ln1(x), key_mask)
        x = x + self.drop(a)
        x = x + self.drop(self.ff2(F.gelu(self.ff1(self.ln2(x)))))
        return x, attn


class Encoder(nn.Module):
    """A stack of `Block`; returns the final normalized states and the last block's attention."""

    def __init__(self, cfg: EncoderConfig) -> None:
        super().__init__()
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.blocks))
        self.ln = nn.LayerNorm(cfg.width)

    def forward(self, x, key_mask):
        attn = None
        for blk in self.blocks:
            x, attn = blk(x, key_mask)
        return self.ln(x), attn


def _init_linear(module: nn.Module, gen: torch.Generator, std: float | None = INIT_STD) -> None:
    """Linear weights N(0, std^2) and zero biases; ``std=None``: torch's default initialization,
    drawn from ``gen`` (kaiming-uniform weights, uniform biases)."""
    for m in module.modules():
        if isinstance(m, nn.Linear):
            with torch.no_grad():
                if std is None:
                    bound = 1.0 / math.sqrt(m.in_features)
                    m.weight.uniform_(-bound, bound, generator=gen)
                    m.bias.uniform_(-bound, bound, generator=gen)
                else:
                    m.weight.normal_(0.0, std, generator=gen)
                    m.bias.zero_()


class TextClassifier(nn.Module):
    """Encoder classifier on token ids (docs/theory.md section 1): trainable token and position
    embeddings, the paper's blocks = heads, the mean of the final states over the real tokens
    (``[CLS]`` and ``[SEP]`` included, padding excluded) through a linear head.

    Input ``rows`` (b, t) are vocabulary rows (`Vocabulary.rows`), padded with the row of ``[PAD]``;
    ``key_mask`` (b, t) is True for real tokens. Output: logits (b, classes) and the last block's
    attention (b, heads, t, t).
    """

    def __init__(
        self, cfg: EncoderConfig, vocab: Vocabulary, *, classes: int = 2, seed: int = 0
    ) -> None:
        super().__init__()
        self.cfg = cfg
        gen = torch.Generator().manual_seed(int(seed))
        full = torch.empty(FULL_VOCAB, cfg.width).normal_(0.0, INIT_STD, generator=gen)
        self.tok = nn.Embedding(len(vocab), cfg.width)
        self.pos = nn.Embedding(cfg.max_len, cfg.width)
        with torch.no_grad():
            self.tok.weight.copy_(full[torch.as_tensor(vocab.ids)])
            self.pos.weight.normal_(0.0, INIT_STD, generator=gen)
        self.drop = nn.Dropout(cfg.dropout)
        self.encoder = Encoder(cfg)
        self.head = nn.Linear(cfg.width, classes)
        _init_linear(self, gen)

    def embed(self, rows: torch.Tensor) -> torch.Tensor:
        """Token plus position embeddings (b, t, width), before dropout."""
        t = rows.shape[1]
        return self.tok(rows) + self.pos(torch.arange(t, device=rows.device))[None]

    def forward_embedded(self, x, key_mask):
        h, attn = self.encoder(self.drop(x), key_mask)
        w = key_mask.to(h.dtype)[:, :, None]
        return self.head((h * w).sum(1) / w.sum(1)), attn

    def forward(self, rows, key_mask):
        return self.forward_embedded(self.embed(rows), key_mask)


class VisionTransformer(nn.Module):
    """A small ViT: non-overlapping ``patch x patch`` patches, a linear patch embedding, a learned
    class token and position embeddings, `Encoder`, a linear head on the class token. ``init_std``:
    the Linear weights' standard deviation, or None (the default) for torch's initialization."""

    def __init__(
        self,
        cfg: EncoderConfig,
        *,
        image: int,
        patch: int,
        channels: int = 1,
        classes: int = 10,
        seed: int = 0,
        init_std: float | None = None,
    ) -> None:
        super().__init__()
        if image % patch:
            raise ValueError(f"image size {image} is not a multiple of the patch {patch}")
        self.cfg, self.patch = cfg, patch
        n = (image // patch) ** 2
        if n + 1 > cfg.max_len:
            raise ValueError(f"{n} patches and the class token exceed max_len {cfg.max_len}")
        gen = torch.Generator().manual_seed(int(seed))
        self.embed = nn.Linear(channels * patch * patch, cfg.width)
        self.cls = nn.Parameter(torch.empty(1, 1, cfg.width).normal_(0.0, INIT_STD, generator=gen))
        self.pos = nn.Parameter(
            torch.empty(1, n + 1, cfg.width).normal_(0.0, INIT_STD, generator=gen)
        )
        self.drop = nn.Dropout(cfg.dropout)
        self.encoder = Encoder(cfg)
        self.head = nn.Linear(cfg.width, classes)
        _init_linear(self, gen, init_std)

    def patches(self, images: torch.Tensor) -> torch.Tensor:
        """(b, c, H, W) -> (b, patches, c * patch^2)."""
        b, c, _, _ = images.shape
        p = self.patch
        x = images.unfold(2, p, p).unfold(3, p, p)  # b, c, H/p, W/p, p, p
        return x.permute(0, 2, 3, 1, 4, 5).reshape(b, -1, c * p * p)

    def forward(self, images, key_mask=None):
        x = self.embed(self.patches(images))
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], dim=1) + self.pos
        h, attn = self.encoder(self.drop(x), None)
        return self.head(h[:, 0]), attn


def attention_matrices(model: nn.Module) -> dict[str, torch.Tensor]:
    """``"block0.q"`` -> that attention weight matrix, for every block and q, k, v, o."""
    out = {}
    for i, blk in enumerate(model.encoder.blocks):
        for name in ("q", "k", "v", "o"):
            out[f"block{i}.{name}"] = getattr(blk.attn, name).weight
    return out


def weight_matrices(model: nn.Module) -> dict[str, torch.Tensor]:
    """Every weight matrix of the blocks and the head (``nn.Linear`` weights; embeddings excluded)."""
    return {
        name[: -len(".weight")]: mod.weight
        for name, mod in (
            (n + ".weight", m) for n, m in model.named_modules() if isinstance(m, nn.Linear)
        )
    }
