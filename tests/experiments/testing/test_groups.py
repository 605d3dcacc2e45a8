"""Multi-parameter kit properties (experiments/testing/groups.py): parameter groups with their own p
and lr, parameters without a gradient, closures and the declared normalization."""

from __future__ import annotations

import re
from functools import partial

import pytest
import torch

from experiments import LpMirrorDescent
from experiments.testing import run_kit
from tests.experiments.testing.helpers import Mirror

FAST = dict(
    max_examples=6, dtypes=(torch.float64,), shrink=False, regimes=("near_one", "above_two")
)
GROUPS = ("param_groups", "grad_none", "closure")


@pytest.mark.parametrize("update", [Mirror, LpMirrorDescent])
def test_defect_free_multi_parameter_optimizers_pass(update):
    report = run_kit(update, properties=GROUPS, **FAST)
    assert report.ok, report.format(failures_only=True)
    assert len([r for r in report.results if r.outcome.value == "passed"]) == 6


@pytest.mark.parametrize(
    "flags, prop, pattern",
    [
        (
            {"group_p": False},
            "param_groups",
            r"group 1 \(p=.*\) was updated with (one of: )?p=.*: its p is ignored",
        ),
        ({"group_lr": False}, "param_groups", r"its lr is ignored"),
        ({"skip_none": False}, "grad_none", r"raised TypeError: .* whose \.grad is None"),
        (
            {"closure": False},
            "closure",
            r"step\(closure\) raised TypeError: step\(\) takes no closure",
        ),
        ({"no_grad_closure": True}, "closure", r"the closure ran with grad disabled"),
    ],
)
def test_each_multi_parameter_defect_is_caught_per_regime(flags, prop, pattern):
    report = run_kit(partial(Mirror, **flags), kind="optimizer", properties=(prop,), **FAST)
    fails = report.failures()
    assert {r.regime for r in fails} == {"near_one", "above_two"}
    assert all(re.search(pattern, r.message) for r in fails), [r.message for r in fails]


def test_global_and_per_tensor_normalization_are_told_apart():
    per = partial(Mirror, normalize="per_tensor")
    glob = partial(Mirror, normalize="global")
    opts = dict(kind="optimizer", properties=("normalization", "param_groups"), **FAST)
    assert run_kit(per, normalize="per_tensor", **opts).ok
    assert run_kit(glob, normalize="global", **opts).ok
    wrong = run_kit(per, normalize="global", **opts)
    assert {r.prop for r in wrong.failures()} == {"normalization", "param_groups"}
    assert any(
        "matches" in r.message and "per-tensor ||G||_q" in r.message for r in wrong.failures()
    )
    eps = run_kit(
        partial(Mirror, normalize="per_tensor", eps=2.220446049250313e-16),
        normalize="per_tensor",
        **opts,
    )
    assert any("plus 2.22e-16 (an epsilon added to the norm)" in r.message for r in eps.failures())


def test_step_functions_skip_the_optimizer_properties():
    report = run_kit(lambda W, G, lr, p: W, properties=GROUPS, **FAST)
    assert report.ok and {r.outcome.value for r in report.results} == {"skipped"}
    assert "needs an optimizer" in report.results[0].message


@pytest.mark.gpu
def test_kit_runs_on_cuda():
    report = run_kit(LpMirrorDescent, devices=("cuda",), max_examples=5)
    assert report.ok, report.format(failures_only=True)
    assert {r.device for r in report.results} == {"cuda"}
