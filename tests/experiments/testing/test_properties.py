"""Single-tensor kit properties (experiments/testing/properties.py): each defect is caught and named in
the regimes where it occurs, correct updates raise no false alarm."""

from __future__ import annotations

import pytest
import torch

from experiments import LpMirrorDescent
from experiments.optim import mirror
from experiments.optim.optimizer import mirror_step
from experiments.testing import run_kit
from tests.experiments.testing.helpers import (
    HalfWritten,
    ascent,
    checks_dual_only,
    clipping,
    good_step,
    in_place,
    no_sign,
    wrong_exponent,
)

FAST = dict(max_examples=6, dtypes=(torch.float64,), shrink=False)
SINGLE = ("stationarity", "gradient_descent", "round_trip", "descent", "overflow")


@pytest.mark.parametrize(
    "update, options",
    [
        (good_step, {}),
        (
            lambda W, G, lr, p: mirror_step(W, G, lr, p),
            {"mirror_map": mirror.mirror_map, "inverse_mirror_map": mirror.inverse_mirror_map},
        ),
        (LpMirrorDescent, {"gd_bitwise": True}),
        (
            lambda params, lr, p: LpMirrorDescent(params, lr=lr, p=p, foreach=True),
            {"p_as": "fraction"},
        ),
    ],
)
def test_correct_updates_pass_in_every_regime(update, options):
    report = run_kit(update, properties=SINGLE, **FAST, **options)
    assert report.ok, report.format(failures_only=True)
    assert {r.regime for r in report.results if r.outcome.value == "passed"} == {
        "near_one",
        "below_two",
        "two",
        "above_two",
    }


def test_float32_passes_without_false_alarm():
    report = run_kit(LpMirrorDescent, properties=SINGLE, max_examples=8, dtypes=(torch.float32,))
    assert report.ok, report.format(failures_only=True)


@pytest.mark.parametrize(
    "update, prop, pattern",
    [
        (
            wrong_exponent,
            "stationarity",
            r"stationarity fails: grad psi\(W\+\) != grad psi\(W\) - lr\*G",
        ),
        (wrong_exponent, "round_trip", r"round trip fails: a zero-gradient step moved W"),
        (no_sign, "stationarity", r"stationarity fails"),
        (clipping, "overflow", r"overflow fails: .* instead of raising FloatingPointError"),
        (ascent, "descent", r"descent fails: L\(W\+\) - L\(W\) = .* > 0"),
        (ascent, "gradient_descent", r"p = 2 is not gradient descent"),
        (in_place, "stationarity", r"modified its input W in place"),
        (HalfWritten, "overflow", r"half-written"),
    ],
)
def test_each_defect_is_caught_and_named(update, prop, pattern):
    report = run_kit(update, properties=(prop,), regimes=("below_two", "two"), **FAST)
    fails = report.failures()
    assert fails and all(r.prop == prop for r in fails)
    assert all(__import__("re").search(pattern, r.message) for r in fails), [
        r.message for r in fails
    ]


def test_overflow_of_the_inverse_map_is_shown_in_its_own_regime():
    """The realistic counterexample near p = 1 (a moderate gradient, lr = 1) is reported in its regime;
    the dual-step overflow (p >= 2) is caught by this update, so those regimes pass."""
    report = run_kit(checks_dual_only, properties=("overflow",), **{**FAST, "shrink": True})
    by = {r.regime: r for r in report.results}
    assert by["two"].outcome.value == "passed" and by["above_two"].outcome.value == "passed"
    near = by["near_one"]
    assert near.outcome.value == "FAILED"
    assert "p=1.01, lr=1.0, W=[1], G=[-1260.69]) returned [inf]" in near.message
    assert by["below_two"].outcome.value == "FAILED" and "p=1.5" in by["below_two"].message


def test_normalized_step_with_an_epsilon_is_diagnosed():
    def eps_step(W, G, lr, p):
        q = p / (p - 1)
        return good_step(W, G / (torch.linalg.vector_norm(G, q) + 2.220446049250313e-16), lr, p)

    def exact_step(W, G, lr, p):
        q = p / (p - 1)
        n = torch.linalg.vector_norm(G / G.abs().max(), q) * G.abs().max()
        return good_step(W, G / n if n > 0 else G, lr, p)

    # 30 draws: the epsilon shows only on gradients scaled by 10^-12 or less (3 of the 5 scales); with
    # 6 draws the kit missed it in 2 of about 10 landings (not derandomized outside CI)
    report = run_kit(
        eps_step,
        properties=("stationarity",),
        regimes=("below_two",),
        normalize="per_tensor",
        **{**FAST, "shrink": True, "max_examples": 30},
    )
    assert (
        not report.ok
        and "plus 2.22e-16 (an epsilon added to the norm)" in report.failures()[0].message
    )
    ok = run_kit(
        exact_step,
        properties=("stationarity", "descent", "round_trip", "normalization"),
        regimes=("below_two", "above_two"),
        normalize="per_tensor",
        **FAST,
    )
    assert ok.ok, ok.format(failures_only=True)
