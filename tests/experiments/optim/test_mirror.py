"""experiments.optim.mirror (torch) agrees with certify.lp (numpy float64) and raises the same errors."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
import torch
from hypothesis import example, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from certify import lp
from certify.errors import MdcertError
from experiments.optim import mirror

mag = st.tuples(st.floats(1e-30, 8), st.booleans()).map(lambda t: -t[0] if t[1] else t[0])
arrays = hnp.arrays(
    np.float64, hnp.array_shapes(min_dims=1, max_dims=3, max_side=4), elements=st.just(0.0) | mag
)
ps = st.sampled_from(["1.1", "7/4", "2", "3", Fraction(21, 20)]) | st.fractions(
    Fraction(11, 10), 8, max_denominator=20
)


def t(a):
    return torch.from_numpy(np.array(a, dtype=np.float64))


@settings(deadline=None, max_examples=60)
@given(arrays, ps)
@example(np.array([[0.0, -2.0], [1e-30, 8.0]]), "1.1")
def test_numpy_torch_agree(A, p):
    B = A[::-1].copy() * 0.75 + 0.1
    np.testing.assert_allclose(mirror.lp_norm(t(A), p).item(), lp.lp_norm(A, p), rtol=1e-13)
    np.testing.assert_allclose(mirror.psi(t(A), p).item(), lp.psi(A, p), rtol=1e-13)
    np.testing.assert_allclose(mirror.mirror_map(t(A), p).numpy(), lp.mirror_map(A, p), rtol=1e-13)
    Q = lp.mirror_map(A, p)
    np.testing.assert_allclose(
        mirror.inverse_mirror_map(t(Q), p).numpy(), lp.inverse_mirror_map(Q, p), rtol=1e-12
    )
    np.testing.assert_allclose(
        mirror.bregman(t(A), t(B), p).item(), lp.bregman(A, B, p), rtol=1e-11, atol=1e-300
    )
    np.testing.assert_allclose(
        mirror.bregman_terms(t(A), t(B), p).numpy(),
        lp.bregman_terms(A, B, p),
        rtol=1e-11,
        atol=1e-300,
    )
    if np.any(A != 0):
        np.testing.assert_allclose(
            mirror.lp_normalize(t(A), p).numpy(), lp.lp_normalize(A, p), rtol=1e-13
        )


@pytest.mark.parametrize("p", ["1.1", "7/4", "3"])
def test_batched_dims(p):
    W = torch.randn(3, 4, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    V = W.flip(0)
    np.testing.assert_allclose(
        mirror.lp_norm(W, p, dim=(-2, -1)).numpy(),
        lp.lp_norm(W.numpy(), p, axis=(-2, -1)),
        rtol=1e-14,
    )
    np.testing.assert_allclose(
        mirror.psi(W, p, dim=(1, 2)).numpy(), lp.psi(W.numpy(), p, axis=(1, 2)), rtol=1e-14
    )
    np.testing.assert_allclose(
        mirror.bregman(W, V, p, dim=(1, 2)).numpy(),
        lp.bregman(W.numpy(), V.numpy(), p, axis=(1, 2)),
        rtol=1e-12,
    )
    unit = mirror.lp_normalize(W, p, dim=(1, 2))
    np.testing.assert_allclose(mirror.lp_norm(unit, p, dim=(1, 2)).numpy(), np.ones(3), rtol=1e-14)


def test_float32_and_zero():
    W = torch.tensor([0.0, -3.0, 2.0])
    assert mirror.mirror_map(W, 3).tolist() == [0.0, -9.0, 4.0]
    assert mirror.inverse_mirror_map(torch.tensor([0.0, -9.0, 4.0]), 3).tolist() == [0.0, -3.0, 2.0]
    assert mirror.bregman(W, W, "7/4").item() == 0.0


def test_bregman_differentiable():
    g = torch.Generator().manual_seed(5)
    A = torch.randn(5, dtype=torch.float64, generator=g, requires_grad=True)
    B = torch.randn(5, dtype=torch.float64, generator=g)
    D = mirror.bregman(A, B, 3)
    D.backward()
    # d/dA D(A, B) = grad psi(A) - grad psi(B)
    expected = mirror.mirror_map(A.detach(), 3) - mirror.mirror_map(B, 3)
    np.testing.assert_allclose(A.grad.numpy(), expected.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize(
    "call, exc, pattern",
    [
        (lambda: mirror.lp_norm(torch.ones(2), 1), MdcertError, r"invalid p: 1\b"),
        (
            lambda: mirror.mirror_map(torch.ones(2), float("nan")),
            MdcertError,
            r"p = inf is not supported|invalid p",
        ),
        (
            lambda: mirror.mirror_map(torch.tensor([float("nan")]), 3),
            MdcertError,
            r"W contains NaN or Inf",
        ),
        (
            lambda: mirror.mirror_map(torch.tensor([1e30]), 3),
            FloatingPointError,
            r"mirror_map overflowed torch.float32",
        ),
        (
            lambda: mirror.inverse_mirror_map(torch.tensor([1e300], dtype=torch.float64), "1.5"),
            FloatingPointError,
            r"inverse_mirror_map overflowed",
        ),
        (lambda: mirror.lp_normalize(torch.zeros(3), 2), MdcertError, r"zero matrix"),
        (
            lambda: mirror.bregman(torch.ones(2), torch.tensor([1.0, float("inf")]), 2),
            MdcertError,
            r"B contains NaN",
        ),
    ],
)
def test_bad_inputs(call, exc, pattern):
    with pytest.raises(exc, match=pattern):
        call()
