"""The attention output ``f_i = sum_t softmax_t(s_i) h_it`` and its derivatives, saturation-safe
(docs/theory.md sections 1 and 2): one formula for the model's autograd route and the batched engine.

With ``r = s - max_t s`` (the log-domain weights up to ``log Z``, exactly 0 at the top token m),
``a = e^r / Z`` and ``D_t = h_t - h_m``:

    f_i = h_im + delta_i,  delta_i = sum_t a_it D_it,   df_i/ds_it = a_it (D_it - delta_i),  df_i/dh_it = a_it.

``delta = f - h_m`` is summed directly, never formed as the difference ``h - f``: once the top weight
rounds to 1.0 in float64 (``1 - a_m < 1e-16``), ``h_m - f`` computed as a difference is rounding noise,
and so is a softmax backward pass (``a (g - sum a g)``) - the gradient loses its direction and a
normalized mirror-descent path stalls (issue 11 item 2). Here the top token's derivative is
``-a_m delta`` (``D_m = 0``), accurate to rounding however saturated the attention is, as long as the
weights ``a_t`` of the other tokens are representable (logit gaps below ~700 in float64; the engine's
``e^M``-scaled kernels, `experiments.paths.kernels`, go further for normalized steps).

`AttentionOutput` is the ``torch.autograd.Function`` of ``(s, h) -> f`` whose backward is
`output_dlogits`; the engine calls `output_terms` and `output_dlogits` themselves (no autograd), so
the two routes cannot drift apart. Padding tokens (docs/theory.md section 1.3) enter with ``s = -inf``:
weight 0, derivative 0.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch
from torch.autograd.function import once_differentiable

__all__ = [
    "OutputTerms",
    "output_terms",
    "output_dlogits",
    "AttentionOutput",
    "attention_output",
    "mask_logits",
]


class OutputTerms(NamedTuple):
    """The shared forward quantities of `output_terms` (all ``[..., n, T]`` or ``[..., n, 1]``).

    Attributes:
        a: attention weights; f: outputs ``[..., n]``; D: ``h_t - h_m``; delta: ``f - h_m`` ``[..., n, 1]``;
        r: ``s - max s`` (``<= 0``, 0 at the top token); top: one-hot of the top token m (None when not
        asked for); Z: ``sum e^r``.
    """

    a: torch.Tensor
    f: torch.Tensor
    D: torch.Tensor
    delta: torch.Tensor
    r: torch.Tensor
    top: torch.Tensor
    Z: torch.Tensor


def mask_logits(s: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    """``s`` with ``-inf`` at padding (``mask`` False); ``mask`` None returns ``s`` itself (no op at all)."""
    return s if mask is None else s.masked_fill(~mask, -math.inf)


def output_terms(
    s: torch.Tensor, h: torch.Tensor, arange: torch.Tensor | None = None, *, with_top: bool = True
) -> OutputTerms:
    """Saturation-safe softmax output of logits ``s`` and token values ``h`` (same shape ``[..., n, T]``).

    Args:
        s: logits, ``-inf`` at padding (at least two finite entries per example).
        h: token values ``v^T x_it``.
        arange: optional precomputed ``arange(T)`` on the device of ``s``.
        with_top: also form the one-hot ``top`` (None otherwise; the autograd route does not need it).
    """
    T = s.shape[-1]
    smax, m = s.max(dim=-1, keepdim=True)
    r = s - smax  # <= 0, exactly 0 at the top token m
    top = None
    if with_top:
        top = (torch.arange(T, device=s.device) if arange is None else arange) == m  # one-hot of m
    e = torch.exp(r)  # stable: the top token has e = 1
    Z = e.sum(dim=-1, keepdim=True)
    a = e / Z
    hm = h.gather(-1, m)
    D = h - hm  # h_t - h_m (0 at m)
    delta = (a * D).sum(dim=-1, keepdim=True)  # f - h_m, accurate when saturated
    return OutputTerms(a, (hm + delta).squeeze(-1), D, delta, r, top, Z)


def output_dlogits(terms: OutputTerms) -> torch.Tensor:
    """``df_i/ds_it = a_it (D_it - delta_i)`` (a new tensor; ``-a_m delta_i`` at the top token)."""
    return (terms.D - terms.delta).mul_(terms.a)


class AttentionOutput(torch.autograd.Function):
    """``f = AttentionOutput.apply(s, h)``: `output_terms` forward, `output_dlogits` backward (first
    derivatives only: a second backward raises instead of silently ignoring the saved terms' dependence
    on ``s``)."""

    @staticmethod
    def forward(ctx, s: torch.Tensor, h: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
        t = output_terms(s, h, with_top=False)
        ctx.save_for_backward(t.a, t.D, t.delta)
        return t.f

    @staticmethod
    @once_differentiable
    def backward(ctx, gf: torch.Tensor):  # type: ignore[override]
        a, D, delta = ctx.saved_tensors
        g = gf.unsqueeze(-1)
        ds = output_dlogits(OutputTerms(a, None, D, delta, None, None, None)).mul_(g)  # type: ignore[arg-type]
        return ds, a * g


def attention_output(s: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
    """Differentiable ``f = sum_t softmax_t(s) h_t`` ``[..., n]`` (``s`` and ``h`` are broadcast together)."""
    if h.shape != s.shape:
        s, h = torch.broadcast_tensors(s, h)
    return AttentionOutput.apply(s, h)
