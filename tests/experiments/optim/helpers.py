"""Helpers shared by the optimizer tests: seeded generators, runs of several steps through
LpMirrorDescent or the out-of-place reference update, and the skip of a test whose compiled kernel
cannot be built here (a failure instead under ``MDCERT_REQUIRE_KERNELS=1``, for machines known to
have a compiler and AVX-512, so that those tests cannot pass by skipping)."""

from __future__ import annotations

import os
from fractions import Fraction

import pytest
import torch

from experiments import LpMirrorDescent
from experiments.optim.optimizer import simple_update

__all__ = ["gen", "run_steps", "simple_steps", "skip_without_kernel"]


def skip_without_kernel(reason: str) -> None:
    """Skip (no kernel can be built here), or fail under ``MDCERT_REQUIRE_KERNELS=1``."""
    if os.environ.get("MDCERT_REQUIRE_KERNELS") == "1":
        pytest.fail(f"MDCERT_REQUIRE_KERNELS=1, but {reason}")
    pytest.skip(reason)


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
