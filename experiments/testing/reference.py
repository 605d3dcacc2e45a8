"""Reference computations of the property-test kit (docs/theory.md section 2), in float64 numpy from
`certify.lp`: the expected mirror step of a set of tensors (optionally with a normalized gradient,
per tensor or global), the comparison in the dual space, and the diagnosis of a wrong step (which
scale the user's step actually divided the gradient by)."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Sequence

import numpy as np
import torch

from certify import lp as ref
from experiments.testing.strategies import p_text

__all__ = [
    "Expectation",
    "to_np",
    "norm_exponent",
    "grad_scales",
    "expected_duals",
    "dual_mismatch",
    "diagnose_scales",
    "fmt",
]


@dataclass(frozen=True)
class Expectation:
    """What a mirror step must do (docs/theory.md section 2).

    Attributes:
        normalize: None (raw gradient), "global" (all tensors of a group by one norm) or "per_tensor".
        norm: "dual" (``||G||_q``, q = p/(p-1), the paper's normalized step) or a number r (``||G||_r``).
        rtol: relative tolerance of the dual-space comparison.
    """

    normalize: str | None = None
    norm: Any = "dual"
    rtol: float = 1e-9


def to_np(t: torch.Tensor) -> np.ndarray:
    return t.detach().to(torch.float64).cpu().numpy()


def fmt(a: np.ndarray, n: int = 3) -> str:
    """The first n entries of an array, short."""
    flat = np.asarray(a, dtype=np.float64).ravel()[:n]
    return (
        "[" + ", ".join(f"{x:.6g}" for x in flat) + ("]" if np.asarray(a).size <= n else ", ...]")
    )


def norm_exponent(p: Fraction, norm: Any) -> float:
    """The exponent r of the normalizing norm: q = p/(p-1) for "dual", else the number given."""
    return float(p / (p - 1)) if norm == "dual" else float(norm)


def _lr_norm(G: np.ndarray, r: float) -> float:
    a = np.abs(G).ravel()
    m = a.max() if a.size else 0.0
    return float(m * np.sum((a / m) ** r) ** (1 / r)) if m > 0 else 0.0


def grad_scales(Gs: Sequence[np.ndarray], p: Fraction, exp: Expectation) -> list[float]:
    """The divisor of each tensor's gradient under ``exp`` (1 without normalization, and for a zero
    gradient, whose normalized step is taken as no step)."""
    if exp.normalize is None:
        return [1.0] * len(Gs)
    r = norm_exponent(p, exp.norm)
    per = [_lr_norm(G, r) for G in Gs]
    if exp.normalize == "global":
        per = [_lr_norm(np.asarray(per), r)] * len(Gs)
    return [c if c > 0 else 1.0 for c in per]


def expected_duals(
    Ws: Sequence[np.ndarray], Gs: Sequence[np.ndarray], lr: float, p: Fraction, exp: Expectation
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """``(expected grad psi(W+), scale)`` per tensor: ``grad psi(W) - lr G/c`` and ``|grad psi(W)| + lr|G/c|``."""
    out, scales = [], []
    for W, G, c in zip(Ws, Gs, grad_scales(Gs, p, exp)):
        mW = ref.mirror_map(W, p)
        step = lr * G / c
        out.append(mW - step)
        scales.append(np.abs(mW) + np.abs(step))
    return out, scales


def dual_mismatch(
    W: np.ndarray,
    new: np.ndarray,
    expected: np.ndarray,
    scale: np.ndarray,
    p: Fraction,
    rtol: float,
    *,
    tiny: float = float(np.finfo(np.float64).tiny),
) -> np.ndarray:
    """Boolean mask of the entries where ``grad psi(new)`` is not within ``rtol * scale`` of ``expected``.

    Where the exact W+ underflows (``|W+|`` below ``tiny``, the smallest normal number of the dtype the
    update ran in) only its size is checked."""
    got = ref.mirror_map(new, p)
    ok = np.abs(got - expected) <= rtol * scale + 1e-300
    with np.errstate(over="ignore"):
        exact_new = np.abs(expected) ** float(1 / (p - 1))
    ok |= (exact_new < tiny) & (np.abs(new) <= 2 * tiny)
    return ~ok


def diagnose_scales(
    Ws: Sequence[np.ndarray],
    news: Sequence[np.ndarray],
    Gs: Sequence[np.ndarray],
    lr: float,
    p: Fraction,
    *,
    rtol: float = 1e-9,
    eps: float = float(np.finfo(np.float64).eps),
) -> str:
    """What the user's step divided each gradient by, read from the observed dual steps, against the
    candidates (raw, per-tensor / global ``||G||_q`` and ``||G||_2``, an added epsilon). Tensors whose
    observed dual step is not resolved in the update's precision ``eps`` are left out."""
    with np.errstate(all="ignore"):
        return _diagnose(Ws, news, Gs, lr, p, rtol, eps)


def _diagnose(Ws, news, Gs, lr, p, rtol, eps) -> str:
    cs, used, res = [], [], []
    for i, (W, new, G) in enumerate(zip(Ws, news, Gs)):
        mW = ref.mirror_map(W, p)
        dQ = mW - ref.mirror_map(new, p)
        nd, ng = np.linalg.norm(dQ), np.linalg.norm(G)
        if ng == 0:
            continue
        r = 8 * eps * (np.linalg.norm(mW) + nd) / nd if nd > 0 else np.inf
        if r > 1e-3:  # the step is lost in the rounding of W or W+: nothing to read
            continue
        cos = float(np.sum(dQ * G) / (nd * ng))
        if cos < 1 - max(1e-6, 10 * r):
            return f"the dual step of tensor {i} is not along -G (cosine {cos:.6g})"
        cs.append(lr * ng / nd)
        used.append(i)
        res.append(r)
    if not cs:
        return "no tensor's step is resolved well enough to read its scale"
    cs = np.asarray(cs)
    q = float(p / (p - 1))
    cand = {"no normalization": np.ones_like(cs)}
    for r, rn in ((q, f"||G||_q (q={q:.4g})"), (2.0, "||G||_2")):
        per = np.array([_lr_norm(G, r) for G in Gs])
        cand[f"per-tensor {rn}"] = per[used]
        cand[f"global {rn}"] = np.full_like(cs, _lr_norm(per, r))
    dev = {k: float(np.max(np.abs(cs / v - 1))) for k, v in cand.items()}
    thr = max(rtol, 10 * max(res))
    text = f"divided G by {fmt(cs)} ({'one tensor' if len(Gs) == 1 else f'{len(used)} of {len(Gs)} tensors'}; p={p_text(p)})"
    matches = [k for k in sorted(dev, key=dev.get) if dev[k] <= thr]
    if matches:
        return f"{text}: matches {' = '.join(matches)}"
    for name in sorted((k for k in cand if k != "no normalization"), key=dev.get):
        e = cs - cand[name]
        seen = np.abs(e) > thr * cand[name]  # tensors where an added constant is visible
        # a positive constant, the same on every tensor where it shows, invisible on unit-size gradients
        if (
            seen.any()
            and np.all(e[seen] > 0)
            and np.ptp(e[seen]) <= 0.1 * np.median(e[seen])
            and np.median(e[seen]) <= 1e-6 * max(1.0, float(cand[name].max()))
        ):
            return f"{text}: {name} plus {float(np.median(e[seen])):.3g} (an epsilon added to the norm)"
    best = min(dev, key=dev.get)
    return f"{text}: closest {best} (relative deviation {dev[best]:.3g})"
