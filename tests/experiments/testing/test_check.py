"""The kit's entry points (experiments/testing/check.py) and its report (experiments/testing/report.py)."""

from __future__ import annotations

import pytest
import torch

from experiments import LpMirrorDescent
from experiments.testing import KitUsageError, check_mirror_update, run_kit
from experiments.testing.report import CellResult, KitReport, Outcome
from tests.experiments.testing.helpers import checks_dual_only, good_step

FAST = dict(max_examples=5, dtypes=(torch.float64,), shrink=False)


def test_check_mirror_update_returns_the_report_or_raises_with_the_failing_cells():
    report = check_mirror_update(good_step, p="7/4", **FAST)
    assert report.ok and {r.regime for r in report.results} == {"below_two"}
    with pytest.raises(AssertionError) as info:
        check_mirror_update(
            checks_dual_only, properties=("overflow",), regimes=("near_one", "two"), **FAST
        )
    text = str(info.value)
    assert "FAILING: overflow" in text and "1 < p <= 1.1" in text and "p = 2" not in text


@pytest.mark.parametrize(
    "options, pattern",
    [
        ({"properties": ("speed",)}, r"unknown properties"),
        ({"regimes": ("p<1",)}, r"unknown regimes"),
        ({"normalize": "l2"}, r"normalize must be"),
        ({"norm": 0.5}, r"norm must be"),
        ({"dtypes": (torch.float16,)}, r"dtypes must be"),
    ],
)
def test_bad_options_are_refused(options, pattern):
    with pytest.raises(KitUsageError, match=pattern):
        run_kit(good_step, **options)


@pytest.mark.skipif(torch.cuda.is_available(), reason="CUDA present")
def test_cuda_without_cuda_is_refused():
    with pytest.raises(KitUsageError, match="CUDA is not available"):
        run_kit(LpMirrorDescent, devices=("cuda",))


def test_report_table():
    cells = (
        CellResult("overflow", "near_one", "float64", "cpu", Outcome.FAILED, "overflow fails: x"),
        CellResult("overflow", "two", "float64", "cpu", Outcome.PASSED, "", 5),
        CellResult("closure", "two", "float64", "cpu", Outcome.SKIPPED, "needs an optimizer"),
    )
    report = KitReport("f as a step function", "p passed as float", cells)
    assert not report.ok and report.failed_properties() == ["overflow"]
    text = report.format()
    assert "1 of 2 checks pass; FAILING: overflow" in text
    assert "overflow           1 < p <= 1.1   FAILED (float64/cpu): overflow fails: x" in text
    assert "closure            p = 2          skipped: needs an optimizer" in text
    assert "passed" not in report.format(failures_only=True).split("\n", 3)[-1]
    assert report.format(width=40).count("...") == 0 and str(report) == text


@pytest.mark.slow
def test_full_default_run_on_the_project_optimizer():
    report = check_mirror_update(LpMirrorDescent, gd_bitwise=True)
    per_tensor = check_mirror_update(
        lambda params, lr, p: LpMirrorDescent(params, lr=lr, p=p, normalize_gradient=True),
        normalize="per_tensor",
    )
    assert report.ok and per_tensor.ok
