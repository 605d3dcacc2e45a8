"""Analytic kernels of the batched engine (experiments/path_kernels.py): the gradient against autograd
and, at saturated attention, against a high-precision evaluation."""

from __future__ import annotations

import mpmath
import numpy as np
import pytest
import torch

from certify import synthetic_problem
from experiments.paths.kernels import loss_and_grad


@pytest.fixture(scope="module")
def problems():
    return [synthetic_problem(seed=s) for s in range(4)]


def _tensors(problems):
    return tuple(
        torch.tensor(np.stack([getattr(p, k) for p in problems])) for k in ("X", "y", "z", "v")
    )


def _autograd_loss(W, v, X, y, z):
    a = torch.softmax(torch.einsum("ntd,de,ne->nt", X, W, z), dim=-1)
    f = torch.einsum("nt,ntd,d->n", a, X, v)
    return torch.nn.functional.softplus(-y * f).mean()


def test_analytic_gradient_matches_autograd(problems) -> None:
    X, y, z, v = _tensors(problems)
    W = torch.randn(4, 10, 10, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    L, G, Gv, a = loss_and_grad(W, X, y, z, v)
    for b in range(4):
        Wb = W[b].clone().requires_grad_(True)
        vb = v[b].clone().requires_grad_(True)
        loss = _autograd_loss(Wb, vb, X[b], y[b], z[b])
        loss.backward()
        assert abs(loss.item() - L[b].item()) <= 1e-15
        assert torch.allclose(G[b], Wb.grad, rtol=1e-12, atol=1e-17)
        assert torch.allclose(Gv[b], vb.grad, rtol=1e-12, atol=1e-17)
    assert torch.allclose(a.sum(-1), torch.ones(4, 6, dtype=torch.float64))


def _mp_gradient(pr, W: np.ndarray, digits: int = 60) -> np.ndarray:
    """dL/dW in mpmath (the exact data, `digits` decimal digits): the reference for saturation."""
    with mpmath.workdps(digits):
        n, T, d = pr.X.shape
        G = [[mpmath.mpf(0)] * d for _ in range(d)]
        Wm = [[mpmath.mpf(float(W[j, k])) for k in range(d)] for j in range(d)]
        for i in range(n):
            z = [mpmath.mpf(float(x)) for x in pr.z[i]]
            Wz = [mpmath.fsum(Wm[j][k] * z[k] for k in range(d)) for j in range(d)]
            xs = [[mpmath.mpf(float(x)) for x in pr.X[i, t]] for t in range(T)]
            s = [mpmath.fsum(xs[t][j] * Wz[j] for j in range(d)) for t in range(T)]
            smax = max(s)
            e = [mpmath.exp(st_ - smax) for st_ in s]
            Z = mpmath.fsum(e)
            a = [x / Z for x in e]
            h = [
                mpmath.fsum(mpmath.mpf(float(pr.v[j])) * xs[t][j] for j in range(d))
                for t in range(T)
            ]
            f = mpmath.fsum(a[t] * h[t] for t in range(T))
            yv = mpmath.mpf(float(pr.y[i]))
            g = -yv / n / (1 + mpmath.exp(yv * f))
            for t in range(T):
                c = g * a[t] * (h[t] - f)
                for j in range(d):
                    for k in range(d):
                        G[j][k] += c * xs[t][j] * z[k]
        scale = max(abs(x) for row in G for x in row)
        return np.array([[float(x / scale) for x in row] for row in G])


@pytest.mark.parametrize("scale", [60.0, 600.0])
def test_gradient_direction_stays_exact_when_attention_saturates(problems, scale) -> None:
    """At a saturated iterate (every non-top weight below e^-60) the engine's gradient direction
    matches a 100-digit evaluation; a softmax-backward (autograd) gradient is rounding noise there."""
    pr = problems[0]
    W = scale * _svm_solution(pr)  # every logit gap >= scale
    X, y, z, v = _tensors([pr])
    _, G, _, a = loss_and_grad(torch.tensor(W[None]), X, y, z, v)
    assert float((1 - a.amax(-1)).max()) == 0.0  # top weight rounds to 1 in float64
    ref = _mp_gradient(pr, W, digits=100 if scale < 100 else 400)
    Gn = G[0].numpy() / np.abs(G[0].numpy()).max()
    assert np.max(np.abs(Gn - ref)) < 1e-12
    Wt = torch.tensor(W).requires_grad_(True)
    _autograd_loss(Wt, v[0], X[0], y[0], z[0]).backward()
    Ga = Wt.grad.numpy()
    scale_a = np.abs(Ga).max()
    err_autograd = np.inf if scale_a == 0 else np.max(np.abs(Ga / scale_a - ref))
    assert err_autograd > 1e-3  # the naive gradient has lost the direction


def _svm_solution(pr) -> np.ndarray:
    """A W with every logit gap >= 1 for the globally optimal tokens (float p = 2 SVM via lstsq on the
    certified support; only needs to be feasible, it is checked)."""
    from certify import certify_svm

    cert = certify_svm(pr, "2", alpha="opt", digits=20)
    W = cert.solution_float()
    cs = pr.attention_constraints("opt")
    assert np.min(cs.rows() @ W.ravel()) > 0.999
    return W
