"""The network of ``mdcert study pgd`` and what is measured on it (docs/theory.md section 7.4).

`DigitsMLP`: 8x8 digits flattened to 64 inputs, two ReLU hidden layers (``width`` and ``width // 2``
units), a linear head to 10 classes; torch's default initialization from the run's seed. Its
``forward`` returns ``(logits, features)``, the features being the last hidden layer (what the head
sees). `TextMLP` (``--task text``): a 384-wide MiniLM sentence embedding, one ReLU hidden layer of
``width`` units, a linear head to 2 classes (rotten, fresh); the same ``(logits, features)``.

- `weight_stats`: sparsity of the trained weight matrices (biases excluded) against the largest
  entry of each matrix: the fraction of entries with ``|w| < r max|w|`` for each ``r`` of
  `REL_THRESHOLDS`; the l1-mass concentration, the fraction of entries (largest first, pooled over
  the matrices) that carry 50% / 90% of the l1 mass (small = concentrated); a histogram of
  ``w / max|w|`` (per matrix) in fixed bins. Float measurements of the weights, nothing proven.
- `feature_margin`: the certified multiclass l_p max-margin (section 7.1, Crammer-Singer, with a
  constant feature appended for the head's bias) of the features of a fixed subsample of the
  training points, by `certify.maxmargin.certify_max_margin` at the optimizer's p: OPT enclosed by
  exact arithmetic, or a Gordan certificate (not separable), or no verified result with its reason;
  beside it the float-measured normalized margin of the trained head itself on the same points.
- `step_times`: wall seconds of one training step (zero_grad, forward, loss, backward, step) with
  `LpMirrorDescent` and with ``torch.optim.SGD`` on two copies of one model and one batch,
  interleaved (the order alternates every repeat), median of N: measured, load-dependent.
- `save_features`: the features of a trained model's train and test images and its head, as one
  ``.npz`` (``mdcert study pgd --save-features``; read by `experiments.data.features`).
"""

from __future__ import annotations

import math
import time
from fractions import Fraction

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

__all__ = [
    "DigitsMLP",
    "TextMLP",
    "REL_THRESHOLDS",
    "HIST_EDGES",
    "weight_matrices",
    "weight_stats",
    "features",
    "feature_margin",
    "step_times",
    "FEATURES_FORMAT",
    "save_features",
]

#: the ``format`` of a ``features/KEY.npz`` file (docs/formats.md, study directory of pgd)
FEATURES_FORMAT = "mdcert-pgd-features/1"
#: relative thresholds r of the sparsity fractions ``#{|w| < r max|w|} / size``
REL_THRESHOLDS = (0.01, 0.05, 0.1)
#: bins of ``w / max|w|`` (per matrix)
HIST_EDGES = np.linspace(-1.0, 1.0, 41)


class DigitsMLP(nn.Module):
    """64 -> width -> width // 2 -> 10, ReLU; ``forward(images) -> (logits, last hidden features)``."""

    def __init__(self, width: int = 64, *, seed: int = 0, classes: int = 10) -> None:
        super().__init__()
        torch.manual_seed(int(seed))
        half = max(width // 2, 1)
        self.body = nn.Sequential(
            nn.Flatten(), nn.Linear(64, width), nn.ReLU(), nn.Linear(width, half), nn.ReLU()
        )
        self.head = nn.Linear(half, classes)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.body(x)
        return self.head(h), h


class TextMLP(nn.Module):
    """inputs -> width -> classes, ReLU; ``forward(x) -> (logits, hidden features)``."""

    def __init__(
        self, width: int = 64, *, seed: int = 0, inputs: int = 384, classes: int = 2
    ) -> None:
        super().__init__()
        torch.manual_seed(int(seed))
        self.body = nn.Sequential(nn.Linear(inputs, width), nn.ReLU())
        self.head = nn.Linear(width, classes)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.body(x)
        return self.head(h), h


def weight_matrices(model: nn.Module) -> dict[str, torch.Tensor]:
    """The weight matrices (2-D parameters) by name; biases excluded."""
    return {n: p.detach() for n, p in model.named_parameters() if p.ndim == 2}


def weight_stats(model: nn.Module) -> dict:
    """Sparsity fractions, l1-mass concentration and the relative histogram of the weight matrices."""
    mats = {n: w.double().cpu().numpy().ravel() for n, w in weight_matrices(model).items()}
    rel = np.concatenate([w / max(np.abs(w).max(), np.finfo(float).tiny) for w in mats.values()])
    a = np.sort(np.abs(np.concatenate(list(mats.values()))))[::-1]
    cum = np.cumsum(a) / max(a.sum(), np.finfo(float).tiny)
    conc = {f"{int(q * 100)}": float((np.searchsorted(cum, q) + 1) / a.size) for q in (0.5, 0.9)}
    below = {f"{r:g}": float((np.abs(rel) < r).mean()) for r in REL_THRESHOLDS}
    per = {
        n: {f"{r:g}": float((np.abs(w) < r * np.abs(w).max()).mean()) for r in REL_THRESHOLDS}
        for n, w in mats.items()
    }
    counts, _ = np.histogram(rel, bins=HIST_EDGES)
    return {
        "entries": int(a.size),
        "below_relative": below,
        "below_relative_per_matrix": per,
        "l1_mass_fraction_of_entries": conc,
        "histogram_relative": counts.tolist(),
        "max_abs": {n: float(np.abs(w).max()) for n, w in mats.items()},
    }


@torch.no_grad()
def features(model: nn.Module, images: torch.Tensor) -> np.ndarray:
    """Last hidden layer of ``images`` (float64, exact copies of the float32 values), eval mode."""
    model.eval()
    h = model(images)[1].double().cpu().numpy()
    model.train()
    return h


def _float_down(x: Fraction) -> float:
    f = float(x)
    return math.nextafter(f, -math.inf) if Fraction(f) > x else f


def _float_up(x: Fraction) -> float:
    f = float(x)
    return math.nextafter(f, math.inf) if Fraction(f) < x else f


def feature_margin(
    model: nn.Module,
    images: torch.Tensor,
    labels: np.ndarray,
    *,
    p: str,
    digits: int = 6,
    time_limit: float | None = 30.0,
) -> dict:
    """Certified multiclass l_p max-margin of the features (+ a constant 1) of ``images`` at ``p``,
    with K the head's outputs (10 for digits, 2 for text: the Crammer-Singer program with K = 2).

    Returns ``status`` (optimal / infeasible / no_verified_result / refused), for optimal the
    outward-rounded floats ``opt_lower <= OPT <= opt_upper`` and the margin ``1/OPT`` enclosure
    ``[margin_lower, margin_upper]``; ``reason``; ``seconds``; and ``trained_margin``: the
    trained head's own ``min_{i, k != y_i} (W_{y_i} - W_k)^T [h_i, 1] / ||[W, b]||_p`` (float,
    negative when a point is misclassified), comparable with ``1/OPT``.
    """
    from certify import ClassificationProblem, certify_max_margin
    from certify.errors import MdcertError

    H = np.hstack([features(model, images), np.ones((len(images), 1))])
    y = np.asarray(labels, dtype=np.int64)
    W = (
        torch.cat([model.head.weight.detach(), model.head.bias.detach()[:, None]], 1)
        .double()
        .cpu()
        .numpy()
    )
    s = H @ W.T
    true = s[np.arange(len(y)), y]
    s[np.arange(len(y)), y] = -np.inf
    pf = float(Fraction(p))
    trained = float((true - s.max(axis=1)).min() / (np.abs(W) ** pf).sum() ** (1 / pf))
    out: dict = {
        "n": int(len(y)),
        "d": int(H.shape[1]),
        "p": p,
        "digits": digits,
        "trained_margin": trained,
    }
    t0 = time.perf_counter()
    try:
        cert = certify_max_margin(
            ClassificationProblem(H, y, classes=int(W.shape[0])),
            p,
            digits=digits,
            time_limit=time_limit,
        )
    except MdcertError as exc:
        return {**out, "status": "refused", "reason": str(exc), "seconds": time.perf_counter() - t0}
    out.update(
        status=cert.status.value,
        seconds=time.perf_counter() - t0,
        reason=str(cert.info.get("reason", "")),
        feasibility=str(cert.info.get("feasibility", "")),
    )
    if cert.opt_lower is not None and cert.opt_upper is not None and cert.opt_lower > 0:
        out.update(
            opt_lower=_float_down(cert.opt_lower),
            opt_upper=_float_up(cert.opt_upper),
            margin_lower=_float_down(1 / cert.opt_upper),
            margin_upper=_float_up(1 / cert.opt_lower),
        )
    return out


def step_times(
    build,
    batch: tuple[torch.Tensor, torch.Tensor],
    *,
    p: str,
    lr: float,
    sgd_lr: float,
    repeats: int,
    warmup: int = 3,
) -> dict:
    """Interleaved wall seconds per training step, p-GD (`LpMirrorDescent`) against ``torch.optim.SGD``.

    ``build()`` makes the model (called twice: identical copies); both train on the same ``batch``.
    Returns medians and quartiles of the full step and of ``optimizer.step()`` alone, and the ratios
    of the medians (p-GD / SGD).
    """
    from experiments.optim.optimizer import LpMirrorDescent

    x, y = batch
    models = [build(), build()]
    opts = [
        LpMirrorDescent(models[0].parameters(), lr=lr, p=p),
        torch.optim.SGD(models[1].parameters(), lr=sgd_lr),
    ]
    full: list[list[float]] = [[], []]
    only: list[list[float]] = [[], []]
    error = ""
    sync = torch.cuda.synchronize if x.is_cuda else (lambda: None)
    for r in range(warmup + repeats):
        for j in (0, 1) if r % 2 == 0 else (1, 0):
            t0 = time.perf_counter()
            opts[j].zero_grad(set_to_none=True)
            loss = F.cross_entropy(models[j](x)[0], y)
            loss.backward()
            sync()
            t1 = time.perf_counter()
            try:
                opts[j].step()
            except (
                FloatingPointError
            ) as exc:  # the step left the weights unchanged; the time still counts
                error = str(exc).splitlines()[0][:200]
            sync()
            t2 = time.perf_counter()
            if r >= warmup:
                full[j].append(t2 - t0)
                only[j].append(t2 - t1)

    def q(v):
        return {
            "median": float(np.median(v)),
            "q1": float(np.quantile(v, 0.25)),
            "q3": float(np.quantile(v, 0.75)),
        }

    res = {
        "repeats": repeats,
        "warmup": warmup,
        "batch": int(len(y)),
        "pgd_step": q(full[0]),
        "sgd_step": q(full[1]),
        "pgd_update": q(only[0]),
        "sgd_update": q(only[1]),
        "ratio_step": float(np.median(full[0]) / np.median(full[1])),
        "ratio_update": float(np.median(only[0]) / np.median(only[1])),
        "threads": torch.get_num_threads(),
    }
    if error:
        res["error"] = error
    return res


def save_features(path, model, task, split: dict, record: dict) -> None:
    """Write ``path`` (``.npz``, atomically): per split ``NAME_features`` (float64 copies of the
    float32 last hidden layer, eval mode), ``NAME_labels`` and ``NAME_ids`` (indices into
    ``load_digits()``), the head's ``head_weight`` and ``head_bias``, and ``record`` (JSON text)."""
    import json

    from certify.io.atomic import write_npz_atomic

    arrays = {"format": np.array(FEATURES_FORMAT), "record": np.array(json.dumps(record))}
    for name, idx in split.items():
        ids = np.asarray(idx, dtype=np.int64)
        arrays[f"{name}_features"] = features(model, task.images[ids])
        arrays[f"{name}_labels"] = task.labels[ids].numpy().astype(np.int64)
        arrays[f"{name}_ids"] = ids
    head = model.head
    arrays["head_weight"] = head.weight.detach().double().cpu().numpy()
    arrays["head_bias"] = head.bias.detach().double().cpu().numpy()
    path.parent.mkdir(exist_ok=True)
    write_npz_atomic(path, arrays)
