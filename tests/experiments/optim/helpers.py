"""Helpers shared by the optimizer tests (test_optim.py, test_optim_dual.py): seeded generators and
runs of several steps through LpMirrorDescent or the out-of-place reference update."""

from __future__ import annotations

from fractions import Fraction

import torch

from experiments import LpMirrorDescent
from experiments.optim.optimizer import simple_update

__all__ = ["gen", "run_steps", "simple_steps"]


def gen(seed=0):
    return torch.Generator().manual_seed(seed)


def run_steps(W0, grads, *, p, lr, dtype=torch.float64, **kw):
    param = torch.nn.Parameter(W0.clone().to(dtype))
    opt = LpMirrorDescent([param], lr=lr, p=p, **kw)
    for g in grads:
        param.grad = g.clone().to(dtype)
        opt.step()
    return param.detach().clone()


def simple_steps(W0, grads, *, p, lr, maximize=False, normalize_gradient=False):
    W = W0.clone()
    for g in grads:
        W = simple_update(W, g, lr, Fraction(p), maximize, normalize_gradient)
    return W
