"""Weight statistics and actual pruning of trained models (docs/theory.md section 6.5).

Threshold counts and histograms: the paper counts attention entries with ``|w| >= 0.06`` and reads
fewer such entries for p near 1 as sparser weights. A count describes the trained weights; it is not
a pruning result. What removing the small entries does to accuracy, size and time is measured by
the pruning below: magnitude masks, accuracy before and after a masked fine-tune, stored size in a
sparse format and measured inference time.

`magnitude_masks` zeroes the ``round(s * N)`` entries of smallest magnitude among the ``N`` entries of
a set of matrices (one global threshold over the set; ties broken by position), so exactly that
fraction is zero. The two sets of the studies are the attention matrices (q, k, v, o of every block)
and all weight matrices (`experiments.studies.models.weight_matrices`). A fine-tune multiplies the
gradients by the mask and starts a fresh optimizer, so the pruned entries stay exactly zero (mirror
descent: ``Q = 0`` and ``G = 0``; Adam: zero moments); `prune_and_measure` checks that they did.

Sizes: a pruned matrix stored as ``scipy.sparse.csr_matrix`` (float32 values, int32 indices: 8 bytes
per nonzero plus ``4 (rows + 1)``), against 4 bytes per entry dense; the model's total counts every
other parameter dense. Time: a forward pass over the evaluation set, median of ``repeats``, with the
pruned ``nn.Linear`` layers as given (dense kernels on zeroed weights) and with them replaced by
``torch.sparse.mm`` on CSR weights (`SparseLinear`). On a shared CPU these times vary with the load.
"""

from __future__ import annotations

import copy
import time
import warnings
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

__all__ = [
    "THRESHOLD",
    "HIST_EDGES",
    "threshold_counts",
    "histogram",
    "SPARSITIES",
    "magnitude_masks",
    "apply_masks",
    "zero_fraction",
    "csr_bytes",
    "model_bytes",
    "SparseLinear",
    "sparsify_linears",
    "time_forward",
    "PruneSetting",
    "prune_and_measure",
]

SPARSITIES = (0.5, 0.7, 0.9, 0.95)

THRESHOLD = 0.06
#: fixed histogram bins (so runs and optimizers are comparable); entries outside fall in the end bins
HIST_EDGES = np.linspace(-0.3, 0.3, 61)


def threshold_counts(
    matrices: dict[str, torch.Tensor], *, threshold: float = THRESHOLD
) -> dict[str, dict]:
    """Per matrix: ``{"count": #|w| >= threshold, "size": entries, "fraction": count / size}``, plus ``"all"``."""
    out: dict[str, dict] = {}
    total = size = 0
    for name, w in matrices.items():
        c = int((w.detach().abs() >= threshold).sum())
        out[name] = {"count": c, "size": int(w.numel()), "fraction": c / w.numel()}
        total, size = total + c, size + int(w.numel())
    out["all"] = {"count": total, "size": size, "fraction": total / max(size, 1)}
    return out


def histogram(matrices: dict[str, torch.Tensor], *, edges: np.ndarray = HIST_EDGES) -> dict:
    """Counts of all entries of ``matrices`` in ``edges`` (clipped into the end bins), and summary moments."""
    w = torch.cat([m.detach().reshape(-1).double().cpu() for m in matrices.values()]).numpy()
    counts, _ = np.histogram(np.clip(w, edges[0], edges[-1]), bins=edges)
    return {
        "edges": edges.tolist(),
        "counts": counts.tolist(),
        "mean_abs": float(np.abs(w).mean()),
        "max_abs": float(np.abs(w).max()),
        "size": int(w.size),
    }


def magnitude_masks(matrices: dict[str, torch.Tensor], sparsity: float) -> dict[str, torch.Tensor]:
    """0/1 float masks zeroing the ``round(sparsity * N)`` smallest-magnitude entries of ``matrices``."""
    if not 0 <= sparsity < 1:
        raise ValueError(f"sparsity {sparsity} is not in [0, 1)")
    names = list(matrices)
    flat = torch.cat([matrices[n].detach().reshape(-1).abs().double().cpu() for n in names])
    k = int(round(sparsity * flat.numel()))
    keep = torch.ones(flat.numel(), dtype=torch.float32)
    if k:
        order = torch.sort(flat, stable=True).indices
        keep[order[:k]] = 0.0
    out, start = {}, 0
    for n in names:
        size = matrices[n].numel()
        out[n] = keep[start : start + size].reshape(matrices[n].shape)
        start += size
    return out


@torch.no_grad()
def apply_masks(matrices: dict[str, torch.Tensor], masks: dict[str, torch.Tensor]) -> None:
    """Zero the masked entries in place."""
    for n, w in matrices.items():
        w.mul_(masks[n].to(w.device, w.dtype))


def zero_fraction(matrices: dict[str, torch.Tensor]) -> float:
    """Fraction of exactly-zero entries over all ``matrices``."""
    zeros = sum(int((w == 0).sum()) for w in matrices.values())
    return zeros / max(sum(w.numel() for w in matrices.values()), 1)


def csr_bytes(w: torch.Tensor) -> int:
    """Bytes of ``w`` as ``scipy.sparse.csr_matrix`` (float32 data, int32 indices and row pointers)."""
    import scipy.sparse

    m = scipy.sparse.csr_matrix(w.detach().float().cpu().numpy())
    m.indices = m.indices.astype(np.int32)
    m.indptr = m.indptr.astype(np.int32)
    return int(m.data.nbytes + m.indices.nbytes + m.indptr.nbytes)


def model_bytes(model: nn.Module, sparse: dict[str, torch.Tensor]) -> dict:
    """Stored size: the ``sparse`` matrices in CSR, every other parameter dense float32."""
    ids = {id(w) for w in sparse.values()}
    dense_rest = sum(4 * p.numel() for p in model.parameters() if id(p) not in ids)
    set_dense = sum(4 * w.numel() for w in sparse.values())
    set_csr = sum(csr_bytes(w) for w in sparse.values())
    return {
        "set_dense_bytes": set_dense,
        "set_csr_bytes": set_csr,
        "model_dense_bytes": dense_rest + set_dense,
        "model_stored_bytes": dense_rest + min(set_csr, set_dense),
    }


class SparseLinear(nn.Module):
    """``y = x W^T + b`` with ``W`` held as a torch CSR tensor (``torch.sparse.mm``)."""

    def __init__(self, linear: nn.Linear) -> None:
        super().__init__()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.weight = linear.weight.detach().to_sparse_csr()
        self.bias = linear.bias.detach().clone() if linear.bias is not None else None
        self.out_features = linear.out_features

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        flat = x.reshape(-1, x.shape[-1])
        y = torch.sparse.mm(self.weight, flat.T).T
        if self.bias is not None:
            y = y + self.bias
        return y.reshape(*x.shape[:-1], self.out_features)


def sparsify_linears(model: nn.Module, names: set[str]) -> nn.Module:
    """A copy of ``model`` whose ``nn.Linear`` modules named in ``names`` are `SparseLinear`."""
    clone = copy.deepcopy(model)
    for name in names:
        parent_name, _, child = name.rpartition(".")
        parent = clone.get_submodule(parent_name) if parent_name else clone
        setattr(parent, child, SparseLinear(getattr(parent, child)))
    return clone


@torch.no_grad()
def time_forward(
    model: nn.Module,
    task,
    idx: np.ndarray,
    *,
    device: torch.device,
    repeats: int = 3,
    batch: int = 256,
) -> float:
    """Median seconds of one eval-mode forward pass over ``idx`` (after one warm-up pass)."""
    from experiments.studies.train import predict_proba

    predict_proba(model, task, idx[:batch], device=device, batch=batch)
    times = []
    for _ in range(repeats):
        if device.type == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        predict_proba(model, task, idx, device=device, batch=batch)
        if device.type == "cuda":
            torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


@dataclass(frozen=True)
class PruneSetting:
    """What `prune_and_measure` needs to fine-tune: the run's optimizer, step size, batch and seed."""

    spec: object
    lr: float
    batch: int
    seed: int
    steps: int


def prune_and_measure(
    model: nn.Module,
    *,
    sets: dict[str, callable],
    sparsities,
    task,
    train_idx,
    test_idx,
    setting: PruneSetting,
    device: torch.device,
    time_idx=None,
    repeats: int = 3,
    on_step=None,
) -> dict:
    """For every set (name -> function giving a model's matrices) and sparsity: the zero fraction
    reached, test accuracy without retraining and after ``setting.steps`` masked fine-tune steps,
    the stored size, and forward times (dense kernels; CSR kernels). ``model`` is not changed."""
    from experiments.studies.train import evaluate, train_model

    time_idx = test_idx if time_idx is None else time_idx
    out: dict = {
        "dense_seconds": time_forward(model, task, time_idx, device=device, repeats=repeats),
        "sets": {},
    }
    for set_name, get in sets.items():
        rows = []
        for s in sparsities:
            pruned = copy.deepcopy(model)
            mats = get(pruned)
            masks = magnitude_masks(mats, s)
            apply_masks(mats, masks)
            row = {
                "sparsity": s,
                "zero_fraction": zero_fraction(mats),
                "acc_pruned": evaluate(pruned, task, test_idx, device=device),
                **model_bytes(pruned, mats),
            }
            linears = {
                n
                for n, m in pruned.named_modules()
                if isinstance(m, nn.Linear) and any(m.weight is w for w in mats.values())
            }
            sparse_model = sparsify_linears(pruned, linears)
            row["sparse_seconds"] = time_forward(
                sparse_model, task, time_idx, device=device, repeats=repeats
            )
            names = {id(w): n for n, w in pruned.named_parameters()}
            grad_mask = {names[id(w)]: masks[k] for k, w in mats.items()}
            curves = train_model(
                pruned,
                task,
                train_idx,
                spec=setting.spec,
                lr=setting.lr,
                epochs=10**6,
                batch=setting.batch,
                seed=setting.seed,
                device=device,
                grad_mask=grad_mask,
                max_steps=setting.steps,
                on_step=on_step,
            )
            mats = get(pruned)
            row["zero_fraction_after_finetune"] = zero_fraction(mats)
            row["finetune_diverged"] = curves.diverged
            row["acc_finetuned"] = (
                evaluate(pruned, task, test_idx, device=device)
                if not curves.diverged
                else float("nan")
            )
            rows.append(row)
        out["sets"][set_name] = rows
    return out
