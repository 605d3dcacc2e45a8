"""Tests of the single-head attention model (docs/theory.md section 1)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import example, given, settings

from certify.errors import MdcertError
from certify.problem import AttentionProblem
from certify.synth import synthetic_problem
from experiments.model import (
    AttentionModel,
    attention_logits,
    attention_softmax,
    get_loss,
    logistic_loss,
    loss,
    model_output,
    problem_tensors,
)
from experiments.testing import attention_problems


def naive_loss(problem, W, v):
    """Float64 loop over examples and tokens, straight from docs/theory.md section 1."""
    total = 0.0
    for i in range(problem.n):
        X, z = problem.X[i], problem.z[i]
        s = np.array([X[t] @ W @ z for t in range(problem.T)])
        e = np.exp(s - s.max())
        a = e / e.sum()
        f = float(v @ (X.T @ a))
        total += math.log1p(math.exp(-problem.y[i] * f))
    return total / problem.n


@pytest.fixture(scope="module")
def prob():
    return synthetic_problem(n=6, T=8, d=10, seed=3)


def test_loss_against_naive_formula(prob):
    X, y, z, v = problem_tensors(prob)
    W = torch.randn(10, 10, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    assert loss(W, v, X, y, z).item() == pytest.approx(
        naive_loss(prob, W.numpy(), prob.v), rel=1e-13
    )


@settings(deadline=None, max_examples=25)
@given(attention_problems())
@example(
    AttentionProblem(np.full((1, 2, 3), -2.5), np.array([-1.0]), np.zeros((1, 3)), np.full(3, -3.0))
)
def test_property_loss_matches_naive(problem):
    """Pinned: a margin of -22.5, past softplus's linear threshold of 20 (found by hypothesis)."""
    X, y, z, v = problem_tensors(problem)
    W = torch.linspace(-1, 1, problem.d**2, dtype=torch.float64).reshape(problem.d, problem.d)
    assert loss(W, v, X, y, z).item() == pytest.approx(
        naive_loss(problem, W.numpy(), problem.v), rel=1e-12, abs=1e-300
    )


def test_shapes_and_softmax(prob):
    X, y, z, v = problem_tensors(prob)
    W = torch.zeros(10, 10, dtype=torch.float64)
    assert attention_logits(X, z, W).shape == (6, 8)
    a = attention_softmax(X, z, W)
    torch.testing.assert_close(a, torch.full((6, 8), 1 / 8, dtype=torch.float64))
    torch.testing.assert_close(model_output(X, z, W, v), (X @ v).mean(dim=1))


def test_batched_equals_looped(prob):
    X, y, z, v = problem_tensors(prob)
    g = torch.Generator().manual_seed(1)
    W = torch.randn(5, 10, 10, dtype=torch.float64, generator=g)
    V = torch.randn(5, 10, dtype=torch.float64, generator=g)
    shared = loss(W, v, X, y, z)
    own = loss(W, V, X, y, z)
    assert shared.shape == (5,) and own.shape == (5,)
    for b in range(5):
        torch.testing.assert_close(shared[b], loss(W[b], v, X, y, z), rtol=1e-14, atol=0)
        torch.testing.assert_close(own[b], loss(W[b], V[b], X, y, z), rtol=1e-14, atol=0)
    W2 = W.reshape(5, 1, 10, 10).expand(5, 3, 10, 10)
    assert loss(W2, v, X, y, z).shape == (5, 3)


def test_stable_for_large_logits(prob):
    X, y, z, v = problem_tensors(prob)
    W = 1e6 * torch.ones(10, 10, dtype=torch.float64)
    value = loss(W, v, X, y, z)
    assert torch.isfinite(value)
    assert logistic_loss(
        torch.tensor([-1000.0, 1000.0], dtype=torch.float64)
    ).tolist() == pytest.approx([1000.0, 0.0])
    Wg = W.clone().requires_grad_(True)
    loss(Wg, v, X, y, z).backward()
    assert torch.isfinite(Wg.grad).all()


def test_module_fixed_and_joint(prob):
    X, y, z, v = problem_tensors(prob)
    fixed = AttentionModel.from_problem(prob)
    assert [n for n, _ in fixed.named_parameters()] == ["W"]
    assert "v" in dict(fixed.named_buffers())
    joint = AttentionModel.from_problem(prob, train_decoder=True)
    assert sorted(n for n, _ in joint.named_parameters()) == ["W", "v"]
    l = joint.loss(X, y, z)
    l.backward()
    assert joint.W.grad.shape == (10, 10) and joint.v.grad.shape == (10,)
    torch.testing.assert_close(fixed(X, z), model_output(X, z, fixed.W, v))
    assert fixed.loss(X, y, z).item() == pytest.approx(
        naive_loss(prob, np.zeros((10, 10)), prob.v), rel=1e-14
    )


def test_gradient_matches_finite_difference(prob):
    X, y, z, v = problem_tensors(prob)
    W = torch.randn(10, 10, dtype=torch.float64, generator=torch.Generator().manual_seed(2)) * 0.3
    Wg = W.clone().requires_grad_(True)
    loss(Wg, v, X, y, z).backward()
    D = torch.randn(10, 10, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    h = 1e-6
    fd = (loss(W + h * D, v, X, y, z) - loss(W - h * D, v, X, y, z)) / (2 * h)
    assert (Wg.grad * D).sum().item() == pytest.approx(fd.item(), rel=1e-6)


def test_other_losses():
    u = torch.tensor([0.5, -1.0], dtype=torch.float64)
    torch.testing.assert_close(get_loss("exponential")(u), torch.exp(-u))
    torch.testing.assert_close(get_loss("linear")(u), -u)
    assert get_loss(torch.sigmoid) is torch.sigmoid


@pytest.mark.parametrize(
    "call, pattern",
    [
        (lambda: AttentionModel(3), r"fixed decoder needs v"),
        (lambda: AttentionModel(0, v=torch.ones(1)), r"invalid dimension d=0"),
        (lambda: AttentionModel(3, v=torch.ones(4)), r"v has shape \(4,\), expected \(3,\)"),
        (lambda: AttentionModel(2, v=torch.ones(2), W0=torch.ones(3, 3)), r"W0 has shape"),
        (lambda: AttentionModel(2, v=torch.tensor([1.0, float("nan")])), r"v contains NaN"),
        (
            lambda: get_loss("hinge"),
            r"unknown loss 'hinge'; choose one of logistic, exponential, linear",
        ),
    ],
)
def test_bad_inputs(call, pattern):
    with pytest.raises(MdcertError, match=pattern):
        call()


# ---------------------------------------------------------------------------------------------- padding
def test_masked_loss_and_gradient_are_the_mean_over_unpadded_examples():
    base = synthetic_problem(n=4, T=6, d=5, seed=8)
    L = np.array([6, 2, 4, 3])
    X = np.where(np.arange(6)[None, :, None] < L[:, None, None], base.X, 0.0)
    prob = AttentionProblem(X, base.y, base.z, base.v, lengths=L)
    data = problem_tensors(prob)
    assert data.mask is not None and problem_tensors(base).mask is None
    W = torch.randn(
        5, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(4), requires_grad=True
    )
    value = loss(W, data.v, data.X, data.y, data.z, mask=data.mask)
    (G,) = torch.autograd.grad(value, W)
    parts, grads = [], []
    for i in range(4):
        one = problem_tensors(
            AttentionProblem(X[i : i + 1, : L[i]], base.y[i : i + 1], base.z[i : i + 1], base.v)
        )
        li = loss(W, one.v, one.X, one.y, one.z)
        parts.append(li.detach())
        grads.append(torch.autograd.grad(li, W)[0])
    torch.testing.assert_close(value.detach(), sum(parts) / 4, rtol=1e-14, atol=0)
    torch.testing.assert_close(G, sum(grads) / 4, rtol=1e-12, atol=0)
    a = attention_softmax(data.X, data.z, W.detach(), data.mask)
    assert torch.all(a[~data.mask] == 0)
    model = AttentionModel.from_problem(prob, W0=W.detach())
    assert model.loss(data.X, data.y, data.z, mask=data.mask).item() == value.item()
    bare = data.X.clone()  # a derived tensor carries no mask mark
    assert not torch.equal(
        model(bare, data.z), model(data.X, data.z, data.mask)
    )  # padding would matter
    X_, y_, z_, v_ = data  # still a 4-tuple
    assert X_ is data.X


def _padded_tensors():
    base = synthetic_problem(n=3, T=4, d=3, seed=2)
    return base, problem_tensors(base.padded(6))


def test_replace_keeps_the_mask_and_a_new_mask_can_be_given():
    import copy
    import pickle

    base, data = _padded_tensors()
    X2 = data.X * 2
    moved = data._replace(X=X2)
    assert (
        type(moved) is type(data)
        and moved.mask is data.mask
        and moved.X is X2
        and moved.y is data.y
    )
    assert (
        moved._replace(mask=None).mask is None and data.mask is not None
    )  # the original is unchanged
    with pytest.raises(MdcertError, match="pass mask="):
        loss(
            torch.zeros(3, 3, dtype=torch.float64), data.v, X2, data.y, data.z
        )  # the replaced X is marked too
    for clone in (pickle.loads(pickle.dumps(data)), copy.copy(data), copy.deepcopy(data)):
        assert torch.equal(clone.mask, data.mask) and torch.equal(clone.X, data.X)
    full = problem_tensors(base)
    assert full.mask is None and full._replace(v=full.v * 0).mask is None
    with pytest.raises(ValueError, match="unexpected field names"):
        data._replace(W=1)


def test_a_forgotten_mask_on_padded_tensors_is_an_error_not_silent_padding():
    base, data = _padded_tensors()
    W = torch.randn(3, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    model = AttentionModel(3, v=data.v, W0=W)
    calls = [
        lambda: attention_logits(data.X, data.z, W),
        lambda: attention_softmax(data.X, data.z, W),
        lambda: model_output(data.X, data.z, W, data.v),
        lambda: loss(W, data.v, data.X, data.y, data.z),
        lambda: model(data.X, data.z),
        lambda: model.loss(data.X, data.y, data.z),
    ]
    for call in calls:
        with pytest.raises(MdcertError, match=r"variable-length problem .* pass mask=data\.mask"):
            call()
    # with the mask: the padded twin's loss is its full-length problem's (docs/theory.md section 1.3)
    full = problem_tensors(base)
    assert loss(W, data.v, data.X, data.y, data.z, mask=data.mask).item() == pytest.approx(
        loss(W, full.v, full.X, full.y, full.z).item(), rel=1e-15
    )
    assert torch.isfinite(model.loss(data.X, data.y, data.z, mask=data.mask))
    assert loss(W, full.v, full.X, full.y, full.z).isfinite()  # full length: no mask needed
