"""The kit's smoothed_sign property (experiments/testing/sign.py, docs/theory.md section 8.6): Adam
with betas (0, 0) equals the smoothed sign step bit for bit on the safe band in its three forms,
differs outside it, and wrong implementations are caught with a counterexample."""

from __future__ import annotations

import math
from functools import partial

import numpy as np
import pytest
import torch
from hypothesis import example, given
from hypothesis import strategies as st

from experiments.testing import KitUsageError, run_kit
from experiments.testing.sign import (
    BANDS,
    band_limits,
    in_band,
    sample_gradients,
    sample_smoothed_sign,
    smoothed_sign_reference,
)

DTYPES = (torch.float64, torch.float32)
FORMS = ({"foreach": False}, {"foreach": True}, {"fused": True})
SIGN = dict(properties=("smoothed_sign",), max_examples=10)


def adam(params, lr, eps, **form):
    return torch.optim.Adam(params, lr=lr, betas=(0.0, 0.0), eps=eps, **form)


def smoothed(W, G, lr, eps):
    return W - lr * G / (G.abs() + eps)


def eps_in_sqrt(W, G, lr, eps):
    return W - lr * G / torch.sqrt(G * G + eps)


def plain_sign(W, G, lr, eps):
    return W - lr * torch.sign(G)


def other_rounding(W, G, lr, eps):
    return W - lr * (G / (G.abs() + eps))


@pytest.mark.parametrize(
    "dtype, lo, hi", [(torch.float64, 1.49e-154, 1.34e154), (torch.float32, 1.08e-19, 1.84e19)]
)
def test_band_is_where_squares_are_normal(dtype, lo, hi):
    a, b = band_limits(dtype)
    assert math.isclose(a, lo, rel_tol=1e-2) and math.isclose(b, hi, rel_tol=1e-2)
    fi = torch.finfo(dtype)
    edge = torch.tensor([a, float(np.nextafter(np.array(b, dtype=fi.dtype), 0))], dtype=dtype)
    sq = edge * edge
    assert (
        bool(in_band(edge).all()) and bool((sq >= fi.tiny).all()) and bool(torch.isfinite(sq).all())
    )
    out = torch.tensor([float(np.nextafter(np.array(a, dtype=fi.dtype), 0)), b], dtype=dtype)
    assert (
        not bool(in_band(out).any())
        and float(out[0] ** 2) < fi.tiny
        and math.isinf(float(out[1] ** 2))
    )


@given(st.sampled_from(DTYPES), st.sampled_from(BANDS), st.integers(0, 2**16))
@example(torch.float32, BANDS[0], 0)
@example(torch.float64, BANDS[1], 0)
def test_sampled_gradients_lie_in_their_band_part(dtype, part, seed):
    G = sample_gradients(64, dtype, part=part, generator=torch.Generator().manual_seed(seed))
    assert G.dtype == dtype and bool(torch.isfinite(G).all())
    assert bool(in_band(G).all()) if part == BANDS[0] else not bool(in_band(G).any())


@pytest.mark.parametrize("dtype", DTYPES)
def test_reference_is_torch_addcdiv(dtype):
    gen = torch.Generator().manual_seed(3)
    G = sample_gradients(4096, dtype, part=BANDS[0], generator=gen)
    W = torch.randn(4096, generator=gen, dtype=torch.float64).to(dtype)
    for lr, eps in ((0.1, 1e-8), (0.37, 1e-3)):
        want = torch.addcdiv(W, G, G.abs() + eps, value=-lr)
        assert torch.equal(smoothed_sign_reference(W, G, lr, eps), want)


@pytest.mark.parametrize("form", FORMS, ids=["for-loop", "foreach", "fused"])
def test_adam_without_momentum_is_the_smoothed_sign_step_on_the_band(form):
    report = run_kit(partial(adam, **form), kind="optimizer", samples=1 << 14, **SIGN)
    assert {(r.regime, r.dtype) for r in report.results} == {
        (BANDS[0], "float64"),
        (BANDS[0], "float32"),
    }
    for r in report.failures():
        # only where torch's own sqrt(g*g) is not |g|: float32 on AVX2 kernels, float64 too on
        # AVX512 ones (docs/theory.md 8.6); the fused form never takes that square root apart
        assert not form.get("fused") and "torch's sqrt(G*G) = " in r.message, r.message
    for dtype in DTYPES:
        s = sample_smoothed_sign(
            partial(adam, **form), kind="optimizer", dtype=dtype, n=1 << 16, seed=1
        )
        assert s.checked == 1 << 16 and s.unexplained == 0, s.first
        if form.get("fused"):
            assert s.mismatches == 0, s.first
        if s.mismatches:  # each one is torch's square root, not the kit
            assert s.sqrt_inexact >= 1, s


def test_outside_the_band_adam_differs_and_the_report_shows_it():
    report = run_kit(
        partial(adam, foreach=False), kind="optimizer", band="full", samples=256, **SIGN
    )
    text = report.format()
    assert "safe band      passed (float64/cpu, float32/cpu)" in text
    # g * g overflows: sqrt(g * g) = inf and Adam's step is exactly 0
    assert "outside band   FAILED (float32/cpu)" in text and "got W+=0.0" in text
    assert "outside band   FAILED (float64/cpu)" in text


class SmoothedSign(torch.optim.Optimizer):
    """The smoothed sign step as an Optimizer class taking lr= and eps= (kind guessed)."""

    def __init__(self, params, lr=0.1, eps=1e-8):
        super().__init__(params, {"lr": lr, "eps": eps})

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            for p in group["params"]:
                p.addcdiv_(p.grad, p.grad.abs() + group["eps"], value=-group["lr"])


def test_a_plain_step_function_and_an_optimizer_class_pass():
    assert run_kit(smoothed, samples=1 << 12, **SIGN).ok
    report = run_kit(SmoothedSign, samples=1 << 12, eps=1e-3, **SIGN)
    assert report.ok and "SmoothedSign as an optimizer (params, lr, eps)" in report.format()


@pytest.mark.parametrize(
    "wrong, samples, shown",
    [
        (eps_in_sqrt, 0, "smoothed_sign fails (safe band): W="),  # hypothesis alone finds these two
        (plain_sign, 0, "smoothed_sign fails (safe band): W="),
        (
            other_rounding,
            4096,
            "smoothed_sign fails (safe band): ",
        ),  # about 5% of gradients: the sample finds it
    ],
)
def test_wrong_implementations_are_caught_with_a_counterexample(wrong, samples, shown):
    report = run_kit(wrong, samples=samples, **SIGN)
    assert [r.outcome.value for r in report.results] == ["FAILED", "FAILED"]
    for r in report.results:
        assert (
            shown in r.message
            and "W=" in r.message
            and "expected W + (-lr*G)/(|G|+eps) = " in r.message
        )


def test_one_ulp_tolerance_accepts_the_other_rounding_only():
    assert sample_smoothed_sign(other_rounding, dtype=torch.float32, n=4096).mismatches != 0
    assert sample_smoothed_sign(other_rounding, dtype=torch.float32, n=4096, ulps=1).mismatches == 0
    assert sample_smoothed_sign(plain_sign, dtype=torch.float64, n=4096, ulps=1).mismatches > 0


@pytest.mark.parametrize(
    "options, pattern",
    [
        ({"band": "half"}, r"band must be 'safe' or 'full'"),
        ({"eps": 0.0}, r"eps must be a positive finite number"),
        ({"eps": math.inf}, r"eps must be a positive finite number"),
        ({"ulps": -1}, r"ulps and samples must be integers"),
        ({"dtypes": (torch.float16,)}, r"dtypes must be"),
        ({"properties": ("smoothed_sign", "descent")}, r"run it on its own"),
    ],
)
def test_bad_options_are_refused(options, pattern):
    with pytest.raises(KitUsageError, match=pattern):
        run_kit(smoothed, **{**SIGN, **options})


def test_bad_sample_options_are_refused():
    with pytest.raises(KitUsageError, match="part must be one of"):
        sample_smoothed_sign(smoothed, dtype=torch.float64, n=8, part="inside")
    with pytest.raises(KitUsageError, match="dtype must be"):
        sample_smoothed_sign(smoothed, dtype=torch.float16, n=8)
