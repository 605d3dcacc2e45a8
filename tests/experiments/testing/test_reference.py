"""The kit's reference steps and diagnosis (experiments/testing/reference.py)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from certify import lp
from experiments.testing.reference import (
    Expectation,
    diagnose_scales,
    dual_mismatch,
    expected_duals,
    grad_scales,
)

P = Fraction(3, 2)
GS = [np.array([3.0, -4.0]), np.array([1e-12])]  # a tiny gradient shows an added epsilon
WS = [np.array([1.0, 2.0]), np.array([-0.5])]


def _apply(scales, lr=0.1):
    return [
        lp.inverse_mirror_map(lp.mirror_map(W, P) - lr * G / c, P)
        for W, G, c in zip(WS, GS, scales)
    ]


def test_grad_scales_per_tensor_and_global():
    q = 3.0
    per = [float(np.sum(np.abs(G) ** q) ** (1 / q)) for G in GS]
    assert grad_scales(GS, P, Expectation()) == [1.0, 1.0]
    assert grad_scales(GS, P, Expectation("per_tensor")) == pytest.approx(per)
    assert grad_scales(GS, P, Expectation("global")) == pytest.approx(
        [float(np.sum(np.array(per) ** q) ** (1 / q))] * 2
    )
    assert grad_scales(GS, P, Expectation("per_tensor", norm=2)) == pytest.approx([5.0, 1e-12])
    assert grad_scales([np.zeros(3)], P, Expectation("per_tensor")) == [
        1.0
    ]  # no step for a zero gradient


def test_expected_duals_and_mismatch():
    exp = Expectation("per_tensor")
    news = _apply(grad_scales(GS, P, exp))
    duals, scales = expected_duals(WS, GS, 0.1, P, exp)
    for W, N, d, s in zip(WS, news, duals, scales):
        assert not dual_mismatch(W, N, d, s, P, 1e-12).any()
        assert dual_mismatch(W, N * 1.01, d, s, P, 1e-9).any()


@pytest.mark.parametrize(
    "scales, expected",
    [
        ([1.0, 1.0], "matches no normalization"),
        (lambda: grad_scales(GS, P, Expectation("per_tensor")), "matches per-tensor ||G||_q (q=3)"),
        (
            lambda: grad_scales(GS, P, Expectation("global", norm=2)),
            "global ||G||_2",
        ),  # the tiny tensor's step is not resolved: a tie
        (
            lambda: [
                c + 2.220446049250313e-16 for c in grad_scales(GS, P, Expectation("per_tensor"))
            ],
            "per-tensor ||G||_q (q=3) plus 2.22e-16 (an epsilon added to the norm)",
        ),
        ([2.0, 3.0], "closest"),
    ],
)
def test_diagnosis_names_the_scale_used(scales, expected):
    c = scales() if callable(scales) else scales
    assert expected in diagnose_scales(WS, _apply(c), GS, 0.1, P, rtol=1e-12)
