"""Intervals against known values (experiments/studies/stats.py)."""

from __future__ import annotations

import math

import pytest

from experiments.studies.stats import paired_difference, t_interval


def test_t_interval_known_values():
    iv = t_interval([1.0, 2.0, 3.0])
    # mean 2, sd 1, t_{0.975, 2} = 4.302652729749464
    half = 4.302652729749464 / math.sqrt(3)
    assert iv.mean == 2.0 and iv.sd == 1.0 and iv.n == 3
    assert iv.low == pytest.approx(2 - half, rel=1e-12) and iv.high == pytest.approx(
        2 + half, rel=1e-12
    )
    five = t_interval([10, 12, 9, 11, 13])
    # sd = sqrt(2.5), t_{0.975, 4} = 2.7764451051977987
    assert five.high - five.mean == pytest.approx(
        2.7764451051977987 * math.sqrt(2.5) / math.sqrt(5), rel=1e-12
    )


def test_no_interval_below_two_values_and_nan_dropped():
    assert t_interval([0.7]).low is None and t_interval([0.7]).mean == 0.7
    assert t_interval([]).n == 0 and math.isnan(t_interval([]).mean)
    assert t_interval([1.0, float("nan"), 3.0]).n == 2
    assert "no interval" in t_interval([0.5]).text(100)


def test_paired_difference_pairs_by_index():
    a = [0.70, 0.72, 0.74]
    b = [0.69, 0.70, 0.725]
    d = paired_difference(a, b)
    ref = t_interval([0.01, 0.02, 0.015])
    assert (
        d.mean == pytest.approx(ref.mean)
        and d.low == pytest.approx(ref.low)
        and d.method.startswith("paired")
    )
    assert (
        d.excludes_zero()
        and not paired_difference([0.7, 0.72, 0.74], [0.69, 0.70, 0.73]).excludes_zero()
    )
    assert paired_difference([0.7, None], [0.6, 0.5]).n == 1
    with pytest.raises(ValueError):
        paired_difference([1.0], [1.0, 2.0])


@pytest.mark.parametrize(
    "values, support, low, high",
    [
        (
            [0.0, 1.0],
            (0.0, math.inf),
            0.0,
            0.5 + 12.706204736174698 * math.sqrt(0.5) / math.sqrt(2),
        ),  # the 0.5 [-5.9, 6.9]
        ([0.98, 1.0, 1.0], (0.0, 1.0), None, 1.0),  # an accuracy near 100%: high clipped to 1
        ([0.0, 0.0, 0.02], (0.0, 1.0), 0.0, None),  # a flip rate near 0: low clipped to 0
        ([0.4, 0.5, 0.6], (0.0, 1.0), None, None),  # inside the support: unchanged
    ],
)
def test_interval_clipped_to_the_support(values, support, low, high):
    raw, iv = t_interval(values), t_interval(values, support=support)
    assert iv.mean == raw.mean and support[0] <= iv.low <= iv.mean <= iv.high <= support[1]
    assert iv.low == pytest.approx(raw.low if low is None else low, rel=1e-12)
    assert iv.high == pytest.approx(raw.high if high is None else high, rel=1e-12)
    assert ("clipped" in iv.method) and "clipped" not in raw.method


def test_paired_difference_clipped_and_named():
    d = paired_difference([1.0, 0.0], [0.0, 0.0], support=(-1.0, 1.0))
    assert (
        d.low == -1.0
        and d.high == 1.0
        and d.method == "paired t-interval over seeds, clipped to [-1, 1]"
    )
