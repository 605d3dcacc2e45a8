"""Causal token tests: remove one token of a review and measure what the prediction does (docs/theory.md section 6.5).

For every test review ``[CLS] w_1 ... w_n [SEP]`` with ``n >= 2`` content tokens and the model in
eval mode, with ``c`` its predicted class, three content tokens are chosen:

* ``attention``: the most-attended token, i.e. the content position with the largest pooled
  attention of the last block: its attention weights averaged over heads and over the real query
  positions (``[CLS]`` and ``[SEP]`` included). The classifier reads the mean of the last block's
  outputs over those positions, so this is the attention mass the pooled output puts on each key;
* ``random``: a content token drawn uniformly (``numpy.random.default_rng(seed)``);
* ``gradxinput``: the largest ``|sum_d g_{t,d} x_{t,d}|``, where ``x_t`` is the input embedding
  (token + position) of position ``t`` and ``g_t`` the gradient of ``log P(c)`` with respect to it.

Removing a token deletes it from the sequence (the tokens after it move one position left). Per
review and rule: the drop ``P(c | review) - P(c | review without the token)`` and whether the
predicted class flips. A large drop says the token mattered to this model's prediction; it does not
say the model attends "correctly", and attention mass without such a drop is not importance.
"""

from __future__ import annotations

import numpy as np
import torch

from experiments.studies.train import TextTask, iterate_batches

__all__ = ["RULES", "choose_tokens", "remove_tokens", "causal_test"]

RULES = ("attention", "random", "gradxinput")


def choose_tokens(
    model, task: TextTask, idx: np.ndarray, *, seed: int, device: torch.device, batch: int = 128
) -> dict:
    """Per review of ``idx`` (reviews with fewer than 2 content tokens are left out): the chosen
    position of each rule, the predicted class and its probability."""
    rng = np.random.default_rng(seed)
    model.to(device).eval()
    keep = np.asarray([i for i in idx if int(task.lengths[i]) >= 4], dtype=np.int64)
    out = {r: [] for r in RULES}
    pred, prob = [], []
    for b in iterate_batches(len(keep), batch, None):
        (rows, mask), _ = task.batch(torch.as_tensor(keep[b.numpy()]), device)
        x = model.embed(rows).detach().requires_grad_(True)
        logits, attn = model.forward_embedded(x, mask)
        logp = logits.double().log_softmax(-1)
        c = logp.argmax(-1)
        chosen = logp.gather(1, c[:, None]).sum()
        (g,) = torch.autograd.grad(chosen, x)
        sal = (g * x).sum(-1).abs()  # (b, t)
        lengths = mask.sum(1)
        pos = torch.arange(rows.shape[1], device=device)[None, :]
        content = (pos >= 1) & (pos < (lengths - 1)[:, None])
        qmask = mask.to(attn.dtype)[:, None, :, None]  # real query positions
        pooled = (attn * qmask).sum((1, 2)) / (qmask.sum((2, 3)) * attn.shape[1])  # (b, t)
        neg = torch.tensor(float("-inf"), device=device)
        out["attention"].append(torch.where(content, pooled, neg).argmax(1).cpu())
        out["gradxinput"].append(torch.where(content, sal, neg).argmax(1).cpu())
        n_content = (lengths - 2).cpu().numpy()
        out["random"].append(
            torch.as_tensor(1 + np.floor(rng.random(len(n_content)) * n_content).astype(np.int64))
        )
        pred.append(c.cpu())
        prob.append(logp.exp().gather(1, c[:, None])[:, 0].detach().cpu())
    model.train()
    cat = lambda xs: torch.cat(xs).numpy() if xs else np.zeros(0, dtype=np.int64)
    return {"idx": keep, "pred": cat(pred), "prob": cat(prob), **{r: cat(out[r]) for r in RULES}}


def remove_tokens(task: TextTask, idx: np.ndarray, positions: np.ndarray) -> TextTask:
    """The reviews ``idx`` with the token at ``positions[i]`` deleted (a new `TextTask` of len(idx) rows)."""
    rows = task.rows[torch.as_tensor(idx)]
    lengths = task.lengths[torch.as_tensor(idx)]
    t = rows.shape[1]
    pos = torch.as_tensor(positions, dtype=torch.int64)[:, None]
    src = torch.arange(t - 1)[None, :].expand(len(idx), -1)
    src = src + (src >= pos).to(torch.int64)  # skip the removed position
    new = torch.cat(
        [rows.gather(1, src), torch.full((len(idx), 1), task.pad, dtype=rows.dtype)], dim=1
    )
    new = torch.where(
        torch.arange(t)[None, :] < (lengths - 1)[:, None], new, torch.full_like(new, task.pad)
    )
    return TextTask(new, lengths - 1, task.labels[torch.as_tensor(idx)], task.pad)


def causal_test(model, task: TextTask, idx: np.ndarray, *, seed: int, device: torch.device) -> dict:
    """Per rule: the mean drop and the flip rate over the reviews tested, and how many were tested."""
    from experiments.studies.train import predict_proba

    chosen = choose_tokens(model, task, idx, seed=seed, device=device)
    keep, c, p0 = chosen["idx"], chosen["pred"], chosen["prob"]
    res: dict = {"reviews": int(len(keep)), "skipped_short": int(len(idx) - len(keep)), "rules": {}}
    for r in RULES:
        sub = remove_tokens(task, keep, chosen[r])
        prob = predict_proba(model, sub, np.arange(len(keep)), device=device)
        p1 = prob[np.arange(len(keep)), c] if len(keep) else np.zeros(0)
        drop = p0 - p1
        flip = prob.argmax(1) != c if len(keep) else np.zeros(0, dtype=bool)
        res["rules"][r] = {
            "mean_drop": float(drop.mean()) if len(keep) else float("nan"),
            "flip_rate": float(flip.mean()) if len(keep) else float("nan"),
        }
    same = chosen["attention"] == chosen["gradxinput"]
    res["attention_equals_gradxinput"] = float(same.mean()) if len(keep) else float("nan")
    return res
