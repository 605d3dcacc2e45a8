"""The mirror step of a parameter group with ``torch._foreach_*`` kernels: the default path on CUDA
(docs/theory.md section 2; the same update as `experiments.optim.kernels.simple_update`, tested to
agree in float64)."""

from __future__ import annotations

from fractions import Fraction

import torch

from experiments.optim.kernels import dual_unit, pow2_scaled, unit_norm

__all__ = ["foreach_update"]


def foreach_update(
    params: list[torch.Tensor],
    grads: list[torch.Tensor],
    lr: float,
    exact: Fraction,
    *,
    maximize: bool,
    normalize: bool,
) -> list[torch.Tensor]:
    """The mirror step of a group with ``torch._foreach_*`` kernels (new tensors; CUDA default path)."""
    if maximize:
        grads = torch._foreach_neg(grads)
    if normalize:
        q = float(exact / (exact - 1))
        units = [dual_unit(g, q) for g in grads]
        norms = [None if u is None else unit_norm(u, g.dtype) for u, g in zip(units, grads)]
        grads = list(
            torch._foreach_mul(
                grads,
                [0.0 if u is None else 1.0 if n is None else 1.0 / n for u, n in zip(units, norms)],
            )
        )
        for i, (u, n) in enumerate(zip(units, norms)):
            if u is not None and n is None:  # a gradient at the edge of the float range
                grads[i] = pow2_scaled(grads[i], u[0]) / u[1]
    if exact == 2:
        news = torch._foreach_add(params, grads, alpha=-lr)
    else:
        pm1, inv = float(exact - 1), float(1 / (exact - 1))
        Q = torch._foreach_abs(params)
        Q = torch._foreach_pow(Q, pm1) if pm1 != 2.0 else torch._foreach_mul(Q, Q)
        torch._foreach_mul_(Q, torch._foreach_sign(params))
        torch._foreach_add_(Q, grads, alpha=-lr)
        news = torch._foreach_abs(Q)
        news = torch._foreach_sqrt(news) if inv == 0.5 else torch._foreach_pow(news, inv)
        torch._foreach_mul_(news, torch._foreach_sign(Q))
    return news
