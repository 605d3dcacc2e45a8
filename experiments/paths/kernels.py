"""Analytic kernels of the batched mirror-descent engine (docs/theory.md sections 1, 2): forward pass, gradients,
dual-norm normalization and signed powers, batched over trajectories (torch, any dtype/device).

The loss gradient is analytic (no autograd), one program for the whole group:
``s_it = x_it^T W z_i``, ``a = softmax_t(s)`` (max-subtracted), ``f_i = sum_t a_it h_it`` with
``h_it = v^T x_it``, ``dL/df_i = -(y_i/n) sigmoid(-y_i f_i)`` and
``dL/dW = sum_i sum_t c_it x_it z_i^T`` with ``c_it = dL/df_i a_it (h_it - f_i)``.
Saturation-safe: with m the top token, ``f_i - h_im = sum_t a_it (h_it - h_im)`` is summed
directly (not as the difference ``h - f``, which cancels to rounding noise once ``1 - a_im`` is
below ~1e-16, as in a softmax backward pass), and the gradient, linear in the small weights
``a_it (t != m)``, is formed from ``a_it e^M <= 1`` where M is the smallest top-vs-runner-up logit
gap; normalized steps only need its direction, so they neither stall on underflow nor lose
precision at any horizon. The softmax output and its logit derivatives are those of
`experiments.model.attention_output` (`output_terms`, `output_dlogits`), the same functions behind the
model's autograd route, so the two agree to rounding (tested). Padding tokens of variable-length
problems (docs/theory.md section 1.3) get logit ``-inf`` (``mask``): weight 0, derivative 0.
"""

from __future__ import annotations

import math

import torch

from experiments.model.attention_output import mask_logits, output_dlogits, output_terms
from experiments.optim.mirror import signed_pow
from experiments.model import logistic_loss

__all__ = [
    "SCALE_ABOVE",
    "forward",
    "grad_W",
    "grad_v",
    "mean_loss",
    "token_values",
    "loss_and_grad",
    "flat_exponent",
    "spow",
    "apow",
    "lp_norms",
    "dual_normalize",
    "select_rows",
]

#: logit gap above which the gradient is formed from e^M-scaled weights, per dtype (far from underflow:
#: e^-300 ~ 1e-130 in float64, e^-40 ~ 4e-18 in float32)
SCALE_ABOVE = {torch.float64: 300.0, torch.float32: 40.0}


def forward(
    W, Xt, z, h, y, ny=None, gscale=None, arange=None, scaled: bool | None = True, mask=None
):
    """Analytic forward pass of a group (docs/theory.md section 1, logistic loss).

    Args:
        W (B,d,d); Xt (B,n,d,T) tokens transposed; z (B,n,d); h (B,n,T) token values v^T x_it; y (B,n).
        ny, gscale, arange: optional precomputed ``-y``, ``-y/n`` and ``arange(T)``.
        scaled: form ``c`` from the e^M-scaled weights (True), directly with ``M = None`` returned
            (False), or decide on the host: scaled only when ``M > SCALE_ABOVE`` somewhere (None).
        mask: valid tokens (B,n,T) bool, or None (full length: no masking op at all).

    Returns:
        ``a`` attention (B,n,T), ``f`` outputs (B,n), ``g = dL/df`` (B,n), ``c = e^M dL/ds`` (B,n,T)
        and ``M`` (B,1,1) (None when not scaled): the logit derivatives scaled by ``e^M``, where ``M >= 0`` is the smallest
        gap (over the examples) between the top logit and the runner-up. The gradient of every
        example is linear in its non-top attention weights, so the scaled weights
        ``a_t e^M <= 1`` keep the gradient's direction exact to rounding however saturated the
        attention is (``dL/dW = e^-M * sum c x z^T``; normalized steps need only the direction).
    """
    n = y.shape[-1]
    zW = torch.bmm(z, W.transpose(1, 2))  # (B,n,d): (W z_i)_j
    s = mask_logits((Xt * zW.unsqueeze(-1)).sum(dim=-2), mask)  # (B,n,T) logits, -inf at padding
    ot = output_terms(s, h, arange)  # a, f, D = h - h_m, delta = f - h_m
    a, f, D, delta, r, top, Z = ot
    M = -r.masked_fill(top, -math.inf).amax(dim=-1, keepdim=True).amax(dim=-2, keepdim=True)
    g = torch.sigmoid(f * (-y if ny is None else ny)).mul_(-y / n if gscale is None else gscale)
    if scaled is None:  # host decision (free on the CPU)
        scaled = bool(M.max() > SCALE_ABOVE.get(s.dtype, 40.0))
    if not scaled:  # no underflow risk: c = a (h - f) g
        return a, f, g, output_dlogits(ot).mul_(g.unsqueeze(-1)), None
    a_s = torch.exp((r + M).clamp_max_(0.0)).div_(Z)  # a_t e^M for t != m (<= 1)
    delta_s = (a_s * D).sum(dim=-1, keepdim=True)  # delta e^M
    c = torch.where(top, a * delta_s.neg_(), a_s.mul_(D - delta)).mul_(g.unsqueeze(-1))
    return a, f, g, c, M


def grad_W(c, Xt, z):
    """``dL/dW = sum_i (sum_t c_it x_it) z_i^T`` (B,d,d) from Xt (B,n,d,T), z (B,n,d)."""
    gi = (Xt * c.unsqueeze(2)).sum(dim=-1)  # (B,n,d)
    return torch.bmm(gi.transpose(1, 2), z)


def grad_v(a, g, X):
    """``dL/dv = sum_i g_i sum_t a_it x_it`` (B,d)."""
    xa = (X * a.unsqueeze(-1)).sum(dim=-2)
    return (g.unsqueeze(-1) * xa).sum(dim=1)


def mean_loss(f, y):
    """Mean logistic loss ``mean_i log(1 + e^{-y_i f_i})`` over the last dimension."""
    return logistic_loss(y * f).mean(dim=-1)


def token_values(X, v):
    """Token values ``h_it = v^T x_it`` (B,n,T)."""
    return (X * v[:, None, None, :]).sum(dim=-1)


def loss_and_grad(
    W: torch.Tensor,
    X: torch.Tensor,
    y: torch.Tensor,
    z: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None = None,
):
    """Analytic loss and gradients of a batch, as the engine computes them (docs/theory.md section 1).

    Args:
        W: (B, d, d); X: (B, n, T, d); y: (B, n); z: (B, n, d); v: (B, d); mask: (B, n, T) valid tokens or None.

    Returns:
        ``(loss (B,), dL/dW (B,d,d), dL/dv (B,d), attention (B,n,T))``.
    """
    Xt = X.transpose(-1, -2)
    a, f, g, c, M = forward(W, Xt, z, token_values(X, v), y, mask=mask)
    return mean_loss(f, y), grad_W(c, Xt, z).mul_(torch.exp(-M)), grad_v(a, g, X), a


def flat_exponent(e):
    """A (B,1,1) exponent tensor as (B,1) for decoder vectors (floats pass through)."""
    return e.view(-1, 1) if isinstance(e, torch.Tensor) else e


def spow(x: torch.Tensor, e) -> torch.Tensor:
    """``sign(x)|x|^e``; ``e`` may be a (B,1,1) tensor, a float uses `experiments.optim.mirror.signed_pow`
    (fast paths 1, 2 and 1/2)."""
    if isinstance(e, torch.Tensor):
        return x.abs().pow(e).copysign_(x)
    return signed_pow(x, e)


def apow(ax: torch.Tensor, e) -> torch.Tensor:
    """``ax**e`` for ``ax >= 0`` with fast paths (2, 1/2, 3/2, 3); ``e`` may be a tensor."""
    if isinstance(e, torch.Tensor):
        return ax.pow(e)
    if e == 2.0:
        return ax * ax
    if e == 1.5:
        return ax * ax.sqrt()
    if e == 3.0:
        return ax * ax * ax
    if e == 0.5:
        return ax.sqrt()
    if e == 1.0:
        return ax
    return ax.pow(e)


def lp_norms(W: torch.Tensor, p: float, dims) -> torch.Tensor:
    """Entrywise l_p norm with scaling (no overflow/underflow for finite input); ``p`` may be a (B,1,1)
    tensor and non-finite rows give non-finite norms (the recorder's use; `experiments.optim.mirror.lp_norm`
    takes one exponent and rejects non-finite input)."""
    ax = W.abs()
    scale = ax.amax(dim=dims, keepdim=True)
    safe = torch.where(scale > 0, scale, torch.ones_like(scale))
    return (scale * apow(apow(ax / safe, p).sum(dim=dims, keepdim=True), 1.0 / p)).flatten()


def select_rows(fw: tuple, idx: torch.Tensor) -> tuple:
    """The rows ``idx`` of every tensor of a forward-pass tuple (None entries stay None)."""
    return tuple(None if t is None else t.index_select(0, idx) for t in fw)


def dual_normalize(G: torch.Tensor, q: float, dims) -> tuple[torch.Tensor, torch.Tensor]:
    """``(G / ||G||_q, scale)``: the dual norm is taken after dividing by ``max|G|`` so tiny
    gradients (saturated attention) neither underflow nor lose precision; ``scale = max|G|`` (0
    when the gradient underflowed to exactly zero, NaN/Inf when it is not finite)."""
    ax = G.abs()
    scale = ax.amax(dim=dims, keepdim=True)
    Gs = G / scale
    nrm = apow(apow(ax / scale, q).sum(dim=dims, keepdim=True), 1.0 / q)
    return Gs / nrm, scale
