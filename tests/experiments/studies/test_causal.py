"""Causal token tests on a tiny model (experiments/studies/causal.py)."""

from __future__ import annotations

import numpy as np
import torch

from experiments.studies.causal import RULES, causal_test, choose_tokens, remove_tokens
from experiments.studies.models import CLS_ID, SEP_ID, EncoderConfig, TextClassifier, Vocabulary
from experiments.studies.train import TextTask, predict_proba


def _task():
    seqs = [
        [CLS_ID, 2000 + i, 2100 + i, 2200, SEP_ID] if i % 2 else [CLS_ID, 3000 + i, SEP_ID]
        for i in range(12)
    ]
    seqs.append([CLS_ID, 2000, 2001, 2002, 2003, 2004, SEP_ID])
    v = Vocabulary.from_sequences(seqs)
    pad = int(v.lookup[0])
    L = max(map(len, seqs))
    rows = torch.tensor([v.rows(s) + [pad] * (L - len(s)) for s in seqs])
    lengths = torch.tensor([len(s) for s in seqs])
    return TextTask(rows, lengths, torch.tensor([i % 2 for i in range(len(seqs))]), pad), v


def test_remove_tokens_deletes_and_shifts():
    task, _ = _task()
    i = len(task.lengths) - 1
    sub = remove_tokens(task, np.array([i, 1]), np.array([2, 1]))
    orig = task.rows[i].tolist()
    assert sub.rows[0].tolist()[:6] == orig[:2] + orig[3:7] and int(sub.lengths[0]) == 6
    assert sub.rows[0, 6] == task.pad
    assert sub.rows[1].tolist()[:4] == [
        task.rows[1, 0],
        task.rows[1, 2],
        task.rows[1, 3],
        task.rows[1, 4],
    ]


def test_causal_test_on_a_tiny_model():
    task, v = _task()
    m = TextClassifier(EncoderConfig(blocks=1, heads=2, width=8, max_len=8), v, seed=0)
    idx = np.arange(len(task.lengths))
    ch = choose_tokens(m, task, idx, seed=0, device=torch.device("cpu"))
    assert len(ch["idx"]) == 7  # reviews with a single content token are left out
    for r in RULES:
        lengths = task.lengths[torch.as_tensor(ch["idx"])].numpy()
        assert ((ch[r] >= 1) & (ch[r] <= lengths - 2)).all()  # never [CLS] or [SEP]
    # the most-attended token is the argmax of the pooled attention
    j = int(ch["idx"][-1])
    (rows, mask), _ = task.batch(torch.tensor([j]), torch.device("cpu"))
    m.eval()
    _, attn = m(rows, mask)
    pooled = attn[0].mean(0).mean(0)
    assert int(ch["attention"][-1]) == 1 + int(pooled[1:-1].argmax())
    res = causal_test(m, task, idx, seed=0, device=torch.device("cpu"))
    assert res["reviews"] == 7 and res["skipped_short"] == 6
    # the drop is recomputed by hand for one review and rule
    sub = remove_tokens(task, ch["idx"], ch["gradxinput"])
    p1 = predict_proba(m, sub, np.arange(7), device=torch.device("cpu"))
    drop = ch["prob"] - p1[np.arange(7), ch["pred"]]
    assert abs(res["rules"]["gradxinput"]["mean_drop"] - drop.mean()) < 1e-12
    for r in RULES:
        assert 0 <= res["rules"][r]["flip_rate"] <= 1
