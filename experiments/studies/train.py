"""Training and evaluation of the study models with `LpMirrorDescent` or Adam (docs/theory.md section 2).

A `Task` holds a data set as tensors and cuts batches (text: padded to the longest sequence of the
batch, with a key mask). `train_model` runs plain minibatch training with a constant step size and
cross-entropy, records the mean training loss and the validation accuracy after every epoch, and
stops early only on divergence: a non-finite loss, or `LpMirrorDescent`'s ``FloatingPointError`` (a
non-finite gradient or an overflowing step). Everything random is drawn from generators seeded by the
run's seed (initialization, batch order, dropout), so a run on the CPU repeats bit for bit with the
same thread count (`set_determinism`).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Callable, Protocol

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from certify.errors import MdcertError

__all__ = [
    "OptimizerSpec",
    "parse_optimizer",
    "make_optimizer",
    "Task",
    "TextTask",
    "ImageTask",
    "Curves",
    "train_model",
    "evaluate",
    "predict_proba",
    "set_determinism",
    "resolve_device",
    "iterate_batches",
]


@dataclass(frozen=True)
class OptimizerSpec:
    """``adam`` or ``md`` (`LpMirrorDescent`) with its exact exponent ``p`` (``"2"`` is gradient descent)."""

    name: str
    p: str | None = None

    @property
    def label(self) -> str:
        if self.name == "adam":
            return "Adam"
        return "GD (p=2)" if self.p == "2" else f"p={self.p}"

    @property
    def key(self) -> str:
        return "adam" if self.name == "adam" else f"p{self.p}"


def parse_optimizer(text: str) -> OptimizerSpec:
    """``"adam"``, ``"gd"`` or an exponent (``"1.1"``, ``"p1.1"``) -> `OptimizerSpec`."""
    t = str(text).strip().lower()
    if t == "adam":
        return OptimizerSpec("adam")
    if t == "gd":
        return OptimizerSpec("md", "2")
    t = t[1:] if t.startswith("p") else t
    try:
        value = float(t)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and 1 < value <= 100):
        raise MdcertError(
            f"unknown optimizer {text!r}; use adam, gd or an exponent 1 < p <= 100 such as 1.1"
        )
    return OptimizerSpec("md", t.rstrip("0").rstrip(".") if "." in t else t)


def make_optimizer(spec: OptimizerSpec, params, lr: float) -> torch.optim.Optimizer:
    """The optimizer of ``spec`` over ``params`` with step size ``lr`` (Adam: torch's defaults otherwise)."""
    if spec.name == "adam":
        return torch.optim.Adam(params, lr=lr)
    from experiments.optim.optimizer import LpMirrorDescent

    return LpMirrorDescent(params, lr=lr, p=spec.p)


def set_determinism(threads: int) -> None:
    """Deterministic kernels where torch has them, and a fixed intra-op thread count."""
    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.set_num_threads(int(threads))


def resolve_device(name: str) -> torch.device:
    """``auto`` (CUDA when available), ``cpu`` or ``cuda``; a missing CUDA device is a one-line error."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise MdcertError(
            "--device cuda: no CUDA device is available here; use --device cpu or auto"
        )
    if name not in ("cpu", "cuda"):
        raise MdcertError(f"--device {name!r}: use auto, cpu or cuda")
    return torch.device(name)


class Task(Protocol):
    """A labelled data set held as tensors."""

    labels: torch.Tensor

    def batch(self, idx: torch.Tensor, device: torch.device) -> tuple[tuple, torch.Tensor]: ...


@dataclass(frozen=True, eq=False)
class TextTask:
    """Sequences of vocabulary rows, right-padded with ``pad`` to the longest: rows (N, L), lengths (N,)."""

    rows: torch.Tensor
    lengths: torch.Tensor
    labels: torch.Tensor
    pad: int = 0

    def batch(self, idx, device):
        lmax = int(self.lengths[idx].max())
        rows = self.rows[idx, :lmax]
        mask = torch.arange(lmax)[None, :] < self.lengths[idx][:, None]
        return (rows.to(device), mask.to(device)), self.labels[idx].to(device)


@dataclass(frozen=True, eq=False)
class ImageTask:
    """Images (N, C, H, W) and labels."""

    images: torch.Tensor
    labels: torch.Tensor

    def batch(self, idx, device):
        return (self.images[idx].to(device),), self.labels[idx].to(device)


@dataclass
class Curves:
    """Per-epoch training loss (mean over batches) and validation accuracy; ``diverged`` on a non-finite step."""

    train_loss: list[float] = field(default_factory=list)
    val_acc: list[float] = field(default_factory=list)
    epoch_seconds: list[float] = field(default_factory=list)
    diverged: bool = False
    message: str = ""

    def as_dict(self) -> dict:
        return {
            "train_loss": self.train_loss,
            "val_acc": self.val_acc,
            "epoch_seconds": self.epoch_seconds,
            "diverged": self.diverged,
            "message": self.message,
        }


def iterate_batches(n: int, batch: int, gen: torch.Generator | None):
    """Index batches of ``range(n)``: shuffled by ``gen`` (None: in order); the last may be short."""
    order = torch.randperm(n, generator=gen) if gen is not None else torch.arange(n)
    for s in range(0, n, batch):
        yield order[s : s + batch]


def train_model(
    model: nn.Module,
    task: Task,
    train_idx: np.ndarray,
    *,
    spec: OptimizerSpec,
    lr: float,
    epochs: int,
    batch: int,
    seed: int,
    device: torch.device,
    val: tuple[Task, np.ndarray] | None = None,
    grad_mask: dict[str, torch.Tensor] | None = None,
    max_steps: int | None = None,
    on_step: Callable[[], None] | None = None,
) -> Curves:
    """Train ``model`` in place; returns its `Curves`.

    Args:
        grad_mask: parameter name -> 0/1 mask; gradients are multiplied by it before every step, so
            with a fresh optimizer entries that are 0 under the mask stay 0 (fine-tuning a pruned model).
        max_steps: stop after this many steps in total (short fine-tunes).
        on_step: called after every step (progress bars).
    """
    curves = Curves()
    model.to(device).train()
    opt = make_optimizer(spec, [p for p in model.parameters() if p.requires_grad], lr)
    named = dict(model.named_parameters())
    masks = {named[k]: m.to(device) for k, m in (grad_mask or {}).items()}
    gen = torch.Generator().manual_seed(int(seed) + 1)
    torch.manual_seed(int(seed) + 2)  # dropout
    idx_all = torch.as_tensor(np.asarray(train_idx, dtype=np.int64))
    steps = 0
    for _ in range(epochs):
        t0, total, count = time.perf_counter(), 0.0, 0
        for b in iterate_batches(len(idx_all), batch, gen):
            args, y = task.batch(idx_all[b], device)
            opt.zero_grad(set_to_none=True)
            loss = F.cross_entropy(model(*args)[0], y)
            if not torch.isfinite(loss):
                curves.diverged, curves.message = True, "non-finite loss"
                break
            loss.backward()
            for p, m in masks.items():
                p.grad.mul_(m)
            try:
                opt.step()
            except FloatingPointError as exc:
                curves.diverged, curves.message = True, str(exc).splitlines()[0][:200]
                break
            total += float(loss.detach()) * len(b)
            count += len(b)
            steps += 1
            if on_step is not None:
                on_step()
            if max_steps is not None and steps >= max_steps:
                break
        curves.epoch_seconds.append(time.perf_counter() - t0)
        curves.train_loss.append(total / max(count, 1))
        if val is not None:
            curves.val_acc.append(
                evaluate(model, val[0], val[1], device=device) if not curves.diverged else math.nan
            )
        if curves.diverged or (max_steps is not None and steps >= max_steps):
            break
    return curves


@torch.no_grad()
def predict_proba(
    model: nn.Module, task: Task, idx: np.ndarray, *, device: torch.device, batch: int = 256
) -> np.ndarray:
    """Class probabilities (len(idx), classes) in eval mode (no dropout), float64."""
    model.to(device).eval()
    out = []
    idx_t = torch.as_tensor(np.asarray(idx, dtype=np.int64))
    for b in iterate_batches(len(idx_t), batch, None):
        args, _ = task.batch(idx_t[b], device)
        out.append(model(*args)[0].double().softmax(-1).cpu())
    model.train()
    return torch.cat(out).numpy() if out else np.zeros((0, 2))


def evaluate(model: nn.Module, task: Task, idx: np.ndarray, *, device: torch.device) -> float:
    """Accuracy on ``idx`` (a NaN output counts as wrong)."""
    if len(idx) == 0:
        return math.nan
    prob = predict_proba(model, task, idx, device=device)
    pred = np.where(np.isfinite(prob).all(axis=1), prob.argmax(axis=1), -1)
    return float((pred == task.labels[torch.as_tensor(np.asarray(idx))].numpy()).mean())
