"""One tensor program of the batched engine (experiments/path_group.py)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import torch

from certify import synthetic_problem
from experiments.paths.group import PathGroup


def test_p2_mirror_step_is_the_sgd_update_bit_for_bit() -> None:
    pr = synthetic_problem(seed=3)
    W0 = np.random.default_rng(0).standard_normal((1, 10, 10))
    data = {"X": pr.X[None], "z": pr.z[None], "y": pr.y[None]}
    g = PathGroup(
        np.array([0]),
        Fraction(2),
        0.25,
        data,
        W0,
        pr.v[None],
        False,
        False,
        0.25,
        torch.device("cpu"),
        torch.float64,
    )
    fw = g.forward()
    G, _, ok = g.gradients(fw)
    W = torch.nn.Parameter(torch.tensor(W0))
    W.grad = G.clone()
    torch.optim.SGD([W], lr=0.25).step()
    g.step(fw, 0)
    assert bool(ok.all()) and torch.equal(g.W, W.detach())
