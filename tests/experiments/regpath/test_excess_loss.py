"""The log-domain excess loss (experiments/excess_loss.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from certify import AttentionProblem, synthetic_problem
from experiments.regpath.excess_loss import ExcessLoss


def test_excess_loss_matches_the_model_and_its_gradient() -> None:
    torch = pytest.importorskip("torch")
    from experiments.model import loss as model_loss

    P = synthetic_problem(n=4, T=5, d=3, seed=3)
    obj = ExcessLoss(P.X, P.y, P.z, P.v)
    rng = np.random.default_rng(0)
    W = rng.standard_normal((3, 9)) * 4
    ev = obj.evaluate(W)
    for s in range(3):
        Wt = torch.tensor(W[s].reshape(3, 3), requires_grad=True)
        L = model_loss(Wt, torch.tensor(P.v), torch.tensor(P.X), torch.tensor(P.y), torch.tensor(P.z))
        L.backward()
        assert ev["loss"][s] == pytest.approx(L.item(), rel=1e-13)
        E = L.item() - obj.base_loss
        assert math.exp(ev["log_excess"][s]) == pytest.approx(E, rel=1e-8)
        # grad of log E = grad L / E
        assert np.allclose(ev["grad"][s] * E, Wt.grad.numpy().ravel(), rtol=1e-7, atol=1e-14)


def test_log_excess_keeps_resolving_far_below_float_resolution_of_the_loss() -> None:
    # one example, two tokens x1 = e1, x2 = e2, z = e1, v = x1 - x2 (token 0 optimal)
    X = np.array([[[1.0, 0.0], [0.0, 1.0]]])
    P = AttentionProblem(X, np.array([1.0]), np.array([[1.0, 0.0]]), np.array([1.0, -1.0]))
    obj = ExcessLoss(P.X, P.y, P.z, P.v)
    # logit gap s_1 - s_2 = W[0,0] - W[1,0]; excess ~ sigmoid(-g) * c * e^{-gap}
    logs = [float(obj.evaluate(np.array([[t, 0.0, 0.0, 0.0]]))["log_excess"][0]) for t in (100.0, 400.0, 800.0)]
    assert np.allclose(np.diff(logs), [-300.0, -400.0], rtol=1e-9)
    assert all(np.isfinite(logs))
